// Segment keeping: a fast heuristic for plans under a budget. Checkpointing recomputes
// every segment between two kept activations once; where the budget leaves room, keeping
// a whole segment from the forward pass instead saves its recomputation. Starting from each
// checkpointing plan (checkpoint_family's schedules, with memory-lean and with fastest
// implementations) whose simulated peak fits the budget, segments are kept one at a time,
// the most recomputation time saved per byte first, each only if the simulated peak stays
// within the budget. The plans it returns serve as warm starts of the MONeT program at
// budgets where uniform checkpointing recomputes far more than it must.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

struct SegmentKeepingOptions {
  int64_t budget_bytes = 0;        // simulated peak allowed (bytes)
  double time_limit_seconds = 10;  // wall-clock limit of the whole search (seconds)
};

/// For each implementation family, the fastest (simulated seconds) plan found; empty when
/// no checkpointing plan fits the budget.
std::vector<Plan> segment_keeping_plans(const Graph& graph, const CostModel& costs,
                                        const SegmentKeepingOptions& options);

}  // namespace monet
