// SearchPolicy: how one program is searched, decided once by search_policy() from the
// program's size, the time limit and the search options when the stage that searches it
// starts, and passed to every step that depends on it: the strategy, whether a
// neighbourhood search gets the LP relaxation beside it, the recomputation-first plan, a
// small program's first fit, and the in-place program after an infeasible one.
#pragma once

#include <future>

#include "planner/search/neighbourhood_search.h"
#include "planner/solver/milp.h"

namespace monet {

/// The default of SearchOptions::small_program_neighbourhood_min_seconds (seconds).
inline constexpr double kSmallProgramNeighbourhoodMinSeconds = 20;

enum class SearchStrategy {
  kAuto,           // as search_policy() decides: by the program's size and the time limit
  kBranchAndCut,   // CBC's branch and cut over the whole program (`monet plan --exact`)
  kNeighbourhood,  // neighbourhood search from the warm start (without one: branch and cut)
};

/// The solver's options (time limit, gap, threads, progress, warm start) and the search's.
struct SearchOptions : MilpOptions {
  SearchStrategy strategy = SearchStrategy::kAuto;
  /// Programs of more columns than this are large (ProgramScale::kLarge; the one threshold
  /// of what CBC's branch and cut can search whole): kAuto searches them by neighbourhoods
  /// (on large programs CBC's tree search finds no incumbent within the limit;
  /// docs/PLANNER.md, "Why the defaults"), and the planner leaves out their span rows.
  int neighbourhood_min_columns = 20000;
  /// kAuto on programs of at most neighbourhood_min_columns columns: kNeighbourhood (whose
  /// second core runs the same branch and cut over the whole program beside the windows
  /// once the LP relaxation is solved) from a time limit of this many seconds on,
  /// kBranchAndCut below. Windows improve warm starts that CBC's tree keeps, for faster
  /// plans than branch and cut alone (docs/PLANNER.md, "Why the defaults"); under short
  /// limits they would not run (each gets at least a second), while CBC proves tiny
  /// programs optimal within one.
  double small_program_neighbourhood_min_seconds = kSmallProgramNeighbourhoodMinSeconds;
  /// Neighbourhood search: windows, thresholds and time shares (neighbourhood_search.h).
  NeighbourhoodOptions neighbourhood;
  /// Neighbourhood search only: the LP relaxation, already under way (e.g. started beside
  /// the heuristics that found the warm start), whose bound the search awaits instead of
  /// solving the relaxation itself. Invalid: search_program solves it. Ready and unsolved:
  /// the search runs without a bound (e.g. one that stops at a given objective).
  std::shared_future<RelaxationBound> relaxation;
};

/// A program's size as the search sees it.
enum class ProgramScale {
  kSmall,  // at most SearchOptions::neighbourhood_min_columns columns: a branch and cut can
           // search it whole
  kLarge,  // more
};

struct SearchPolicy {
  ProgramScale scale = ProgramScale::kSmall;
  SearchStrategy strategy = SearchStrategy::kBranchAndCut;  // never kAuto
};

/// The scale of a program of `columns` columns under `options`.
ProgramScale program_scale(int columns, const SearchOptions& options);

/// The policy for a program of `columns` columns searched under `options` (its time limit
/// the whole stage's): options.strategy unless kAuto; under kAuto, kNeighbourhood for large
/// programs, and for small ones from a limit of small_program_neighbourhood_min_seconds on,
/// kBranchAndCut below.
SearchPolicy search_policy(int columns, const SearchOptions& options);

}  // namespace monet
