// Large-neighbourhood search for a Milp too large for CBC's tree search within the time
// given (on the largest MONeT programs it finds no incumbent; docs/PLANNER.md, "Why the
// defaults"). Every integer column outside a window of consecutive model positions keeps
// the incumbent's value; the columns those fixings determine are removed as well, and
// CBC's branch and cut solves what remains (a few thousand binaries), started from the
// incumbent. Windows sweep the model with half-overlap, cyclically; once every window of
// a width has been solved since the last better solution, their width doubles. Freeing
// the columns where the LP relaxation disagrees with the incumbent (RINS) is not done: it
// needs the relaxation first, which takes much of the time limit on large programs, and
// improves less per second.
//
// One relaxation neighbourhood (RENS) once the LP relaxation is solved, when the
// incumbent is still more than relaxation_neighbourhood_gap above its bound: every
// integer column the LP optimum sets to 0 or 1 is fixed there, the fractional ones are
// free, and CBC searches the rest from scratch (the incumbent rarely fits those fixings)
// in at most relaxation_neighbourhood_share of the time left. Windows cannot move an
// incumbent that far from the LP's structure; this neighbourhood frees a small part of
// the binaries and closes most of the gap. Where the incumbent is close, the same fixings
// are mostly infeasible or leave too many binaries free for CBC to find a solution, so it
// is not tried there (docs/PLANNER.md, "Why the defaults").
//
// The second core. The LP relaxation runs on one core beside the search until it is
// solved; that core then runs a second search in a child process (ChildSolve: CbcMain1 is
// not reentrant). With more than whole_search_relaxations LP solves' time left, it is CBC's
// branch and cut over the whole program from the incumbent, whose heuristics find plans
// the windows do not (docs/PLANNER.md, "Why the defaults"); its incumbents are taken as
// it finds them, and a proof of optimality ends the search. With less (large programs,
// whose LP takes much of the limit and whose root CBC would not get past), the child
// solves windows. A child's solution started from an older incumbent: its changes to that
// one are applied to the current incumbent when the result is feasible, else the better of
// the two is kept.
#pragma once

#include <chrono>
#include <future>
#include <limits>
#include <vector>

#include "planner/solver/milp.h"
#include "planner/solver/search_clock.h"
#include "planner/solver/time_budget.h"

namespace monet {

struct NeighbourhoodSearch {
  std::vector<double> values;  // best solution found (the incumbent when none was better)
  double objective = 0;        // its objective
  int rounds = 0;              // sub-programs solved
  /// The bound the whole program's branch and cut proved (on the second core; -infinity
  /// when it did not run or end): the certified bound is the larger of it and the LP's.
  double bound = -std::numeric_limits<double>::infinity();
};

struct NeighbourhoodOptions {
  /// Per column, its place along the model (-1: none): windows free the integer columns of
  /// consecutive places. Empty: the column order.
  std::vector<int> column_positions;
  /// Stop as soon as an incumbent's objective is at or below this (objective units).
  double stop_objective = -1e300;
  /// The incumbent's gap to the LP bound (a fraction) above which the relaxation
  /// neighbourhood is tried.
  double relaxation_neighbourhood_gap = 0.10;
  /// The relaxation neighbourhood's limit (at least kMinimumStageSeconds).
  TimeShare relaxation_neighbourhood_share{1.0 / 3, ShareBase::kTimeLeft};
  /// The second core's search is CBC's branch and cut over the whole program when the time
  /// left is more than this many times the LP relaxation's solve time, windows otherwise.
  double whole_search_relaxations = 4.0;
  /// A window's limit: this share, and at least window_min_seconds (seconds), within the
  /// time left.
  TimeShare window_share{0.25, ShareBase::kTimeLeft};
  double window_min_seconds = 5.0;
  /// The first windows span the model's places divided by this (at least 2 places).
  int initial_windows = 48;
  /// Under SearchLimit::kWork: the search ends after this many sub-programs (windows and
  /// the relaxation neighbourhood), if the window sequence has not ended before.
  int work_rounds = 16;
  /// Wall-clock limit (seconds) of the LP that completes a child's changes applied to a
  /// newer incumbent.
  double merge_lp_seconds = 5.0;
};

/// Improves `incumbent` (feasible for `milp`) until the end of `time` or
/// until its objective is within `solver.relative_gap` of the bound of `relaxation` (the
/// LP relaxation, under way on another thread: until it is ready, there is no bound).
/// Neighbourhoods are the relaxation neighbourhood (above) and windows over
/// `options.column_positions`; sub-programs are solved by solve_milp under `solver`'s
/// gap and root-cut threshold. Each better solution is appended to `result`'s incumbent
/// trace (wall seconds on `time`'s clock); progress lines go to stderr when `solver.progress`.
/// Under SearchLimit::kWork (solver.search_limit) the relaxation is awaited before the
/// first window and the second core stays idle: the search ends when the window sequence
/// is exhausted, the gap reached or options.work_rounds sub-programs solved, each after at
/// most solver.max_nodes nodes.
NeighbourhoodSearch neighbourhood_search(const Milp& milp, std::vector<double> incumbent,
                                         const std::shared_future<RelaxationBound>& relaxation,
                                         const TimeBudget& time, const MilpOptions& solver,
                                         const NeighbourhoodOptions& options, MilpResult* result);

}  // namespace monet
