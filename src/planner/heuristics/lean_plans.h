// Memory-lean plans: checkpointing (as checkpoint_schedule) with, for every operator, the
// implementations that hold the least memory — in-place forwards where the input has no
// other reader, backward passes that read the smallest tensors (outputs, 1-bit masks),
// the algorithms with the least workspace. They reach budgets that checkpointing with
// default operators cannot, and serve as warm starts for the MONeT program there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/schedule_builder.h"

namespace monet {

enum class ImplementationPreference {
  kLeastMemory,  // bytes the backward reads plus workspace (profiled); seconds break ties
  kFastest,      // profiled seconds of forward and backward; bytes break ties
};
/// Per node, the compatible forward and backward implementations that are best by
/// `preference` (in-place forwards only where the input has no other reader, and no other
/// node's chosen backward reads it).
ScheduleChoices implementation_choices(const Graph& graph, const CostModel& costs,
                                       ImplementationPreference preference);
/// implementation_choices(graph, costs, kLeastMemory).
ScheduleChoices lean_choices(const Graph& graph, const CostModel& costs);

/// The checkpoint counts checkpointing plans are built with: 1 to all articulation points,
/// each count about 25% more than the last.
std::vector<size_t> checkpoint_counts(const Graph& graph);

/// Store-all and checkpointing (checkpoint_schedule) with each of checkpoint_counts(graph),
/// all with `choices`; `planner` names them.
std::vector<Plan> checkpoint_family(const Graph& graph, const ScheduleChoices& choices,
                                    const std::string& planner);

/// The `lean` planner: of checkpoint_family(graph, lean_choices(...)) and store_all_plan(graph),
/// the fastest whose simulated peak fits `budget_bytes`; when none fits (or budget_bytes < 0),
/// the one with the smallest peak.
Plan best_lean_plan(const Graph& graph, const CostModel& costs, int64_t budget_bytes);

}  // namespace monet
