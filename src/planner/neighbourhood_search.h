// Large-neighbourhood search for a Milp too large for CBC's tree search within the time
// given (ResNet-50's MONeT program: 73,000 columns, no incumbent in 120 s). Every integer
// column outside a window of consecutive model positions keeps the incumbent's value;
// the columns those fixings determine are removed as well, and CBC's branch and cut
// solves what remains (a few thousand binaries, about a second), started from the
// incumbent. Windows sweep the model with half-overlap; a sweep without a better
// solution doubles their width. Freeing the columns where the LP relaxation disagrees
// with the incumbent (RINS) was measured too: it needs the relaxation first (22 s of
// the 60 on ResNet-50) and improved less per second.
#pragma once

#include <atomic>
#include <chrono>
#include <vector>

#include "planner/milp.h"

namespace monet {

struct NeighbourhoodSearch {
  std::vector<double> values;  // best solution found (the incumbent when none was better)
  double objective = 0;        // its objective
  int rounds = 0;              // sub-programs solved
};

/// Improves `incumbent` (feasible for `milp`) until `deadline` (seconds after `t0`) or
/// until its objective is within `options.relative_gap` of `bound` (a lower bound that
/// another thread may raise, e.g. once the LP relaxation is solved). Neighbourhoods are
/// windows over `options.column_positions` (over the column order when it is empty).
/// Each better solution is appended to `result`'s incumbent trace (seconds after `t0`);
/// progress lines go to stderr when `options.progress`.
NeighbourhoodSearch neighbourhood_search(const Milp& milp, std::vector<double> incumbent,
                                         const std::atomic<double>& bound,
                                         std::chrono::steady_clock::time_point t0, double deadline,
                                         const MilpOptions& options, MilpResult* result);

}  // namespace monet
