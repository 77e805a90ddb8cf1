// Segment keeping: a fast heuristic for plans under a budget. Checkpointing recomputes
// every segment between two kept activations once; where the budget leaves room, keeping
// a whole segment from the forward pass instead saves its recomputation. For each family of
// implementations (memory-lean, fastest, and memory-lean but fastest convolutions), it starts
// from store-all, each checkpointing plan (checkpoint_family's schedules) and the plan greedy
// descent reaches (greedy_descent.h; in a third of the time left per family). From those whose
// simulated peak fits the budget, segments are kept one at a time, the most recomputation time
// saved per byte first, each only if the simulated peak stays within the budget. Then
// implementation upgrading: operators switch to their fastest implementations, the most
// seconds saved first, each only if the peak stays within the budget. The plans it returns
// serve as warm starts of the MONeT program at budgets where uniform checkpointing recomputes
// far more than it must, and (upgraded without raising the peak) as starting points where no
// plan of a family fits.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/simulator.h"

namespace monet {

struct SegmentKeepingOptions {
  int64_t budget_bytes = 0;        // simulated peak allowed (bytes)
  double time_limit_seconds = 10;  // wall-clock limit of the whole search (seconds)
};

/// A plan with its simulator replay.
struct SimulatedPlan {
  Plan plan;
  SimulationResult simulated;
};

struct SegmentKeepingPlans {
  /// For each implementation family, the fastest (simulated seconds) plan found within the
  /// budget; empty when no checkpointing plan fits.
  std::vector<SimulatedPlan> within_budget;
  /// For each family none of whose checkpointing plans fits: the one of smallest peak, its
  /// implementations upgraded as above without raising the peak or the bytes over the
  /// budget. Starting points for a search that lowers the excess (the elastic program).
  std::vector<Plan> over_budget;
};

/// Segment keeping and implementation upgrading for each implementation family.
SegmentKeepingPlans segment_keeping_plans(const Graph& graph, const CostModel& costs,
                                          const SegmentKeepingOptions& options);

}  // namespace monet
