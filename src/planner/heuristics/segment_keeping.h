// Segment keeping: a fast heuristic for plans under a budget. Checkpointing recomputes
// every segment between two kept activations once; where the budget leaves room, keeping
// a whole segment from the forward pass instead saves its recomputation. For each family of
// implementations (memory-lean, fastest, and memory-lean but fastest convolutions), it starts
// from store-all and each checkpointing plan (checkpoint_family's schedules), in at most
// checkpointing_share of the time limit; then, per family, from the plan greedy descent reaches
// (greedy_descent.h; in an equal share of the time left). From the starts whose simulated peak fits
// the budget, segments are kept one at a time, the most recomputation time saved per byte first,
// each only if the simulated peak stays within the budget. Then implementation upgrading: operators
// switch to their fastest implementations, the most seconds saved first, each only if the peak
// stays within the budget. The plans it returns serve as warm starts of the MONeT program at
// budgets where uniform checkpointing recomputes far more than it must, and (upgraded without
// raising the peak) as starting points where none of a search's starts fits.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/cost_model.h"
#include "cost/simulator.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "planner/solver/search_clock.h"
#include "planner/solver/time_budget.h"

namespace monet {

struct SegmentKeepingOptions {
  int64_t budget_bytes = 0;        // simulated peak allowed (bytes)
  double time_limit_seconds = 10;  // wall-clock limit of the whole search (seconds)
  /// kWork: every start runs, and each greedy descent ends after work_simulations
  /// simulations (time_limit_seconds is not read).
  SearchLimit search_limit = SearchLimit::kWallClock;
  int work_simulations = 400;  // simulations per greedy descent under SearchLimit::kWork
  /// The share of the limit the starts from store-all and checkpointing may take; the
  /// greedy descents share the rest equally.
  TimeShare checkpointing_share{0.6, ShareBase::kWholeLimit};
};

struct SegmentKeepingPlans {
  /// For each implementation family, and for each greedy descent, the fastest (simulated
  /// seconds) plan found within the budget.
  std::vector<SimulatedPlan> within_budget;
  /// For each family none of whose checkpointing plans fits, and each greedy descent that
  /// ends above the budget: the plan of smallest peak, its
  /// implementations upgraded as above without raising the peak or the bytes over the
  /// budget. Starting points for a search that lowers the excess (the elastic program).
  std::vector<Plan> over_budget;
};

/// Segment keeping and implementation upgrading for each implementation family.
SegmentKeepingPlans segment_keeping_plans(const Graph& graph, const CostModel& costs,
                                          const SegmentKeepingOptions& options);

}  // namespace monet
