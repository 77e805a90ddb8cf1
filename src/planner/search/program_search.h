// The search layer over the 0-1 solver: how a whole program is searched once it is built.
// Branch and cut (solve_milp: CBC over the whole program) or, for programs too large for
// CBC's tree search in the time given, the neighbourhood search (neighbourhood_search.h)
// from a warm start, with the LP relaxation (the certified bound) on a thread of its own
// beside it. resolve_strategy() is the one place the choice is made.
#pragma once

#include <future>

#include "planner/search/neighbourhood_search.h"
#include "planner/solver/milp.h"

namespace monet {

enum class SearchStrategy {
  kAuto,           // kNeighbourhood for programs of more than
                   // SearchOptions::neighbourhood_min_columns columns, else
                   // SearchOptions::small_program_strategy
  kBranchAndCut,   // CBC's branch and cut over the whole program (`monet plan --exact`)
  kNeighbourhood,  // neighbourhood search from the warm start (without one: branch and cut)
};

/// The solver's options (time limit, gap, threads, progress, warm start) and the search's.
struct SearchOptions : MilpOptions {
  SearchStrategy strategy = SearchStrategy::kAuto;
  /// kAuto searches programs of more columns than this by neighbourhood search (on large
  /// programs CBC's tree search finds no incumbent within the limit; docs/PLANNER.md, "Why
  /// the defaults").
  int neighbourhood_min_columns = 20000;
  /// kAuto on programs of at most neighbourhood_min_columns columns: kBranchAndCut, or
  /// kNeighbourhood (whose second core runs the same branch and cut over the whole
  /// program beside the windows once the LP relaxation is solved). Never kAuto.
  SearchStrategy small_program_strategy = SearchStrategy::kBranchAndCut;
  /// Neighbourhood search: windows, thresholds and time shares (neighbourhood_search.h).
  NeighbourhoodOptions neighbourhood;
  /// Neighbourhood search only: the LP relaxation, already under way (e.g. started beside
  /// the heuristics that found the warm start), whose bound the search awaits instead of
  /// solving the relaxation itself. Invalid: search_program solves it. Ready and unsolved:
  /// the search runs without a bound (e.g. one that stops at a given objective).
  std::shared_future<RelaxationBound> relaxation;
};

/// The strategy `options` asks for on `milp`: never kAuto.
SearchStrategy resolve_strategy(const Milp& milp, const SearchOptions& options);

/// Searches `milp` by resolve_strategy(milp, options); a neighbourhood search given no
/// warm start is a branch and cut.
MilpResult search_program(const Milp& milp, const SearchOptions& options);

}  // namespace monet
