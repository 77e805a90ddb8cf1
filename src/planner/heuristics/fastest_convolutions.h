// The post-optimisation of a plan's convolution algorithms: each convolution instruction,
// in program order, takes the fastest implementation whose plan still fits. Checkmate-O
// applies it to Checkmate's schedule; the MONeT planner to its recomputation-first plan.
#pragma once

#include <cstdint>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

/// Every forward and backward instruction of a convolution in `plan`, in program order,
/// takes the fastest implementation (by `costs`) whose plan still validates and whose
/// simulated peak stays within max(budget_bytes, current peak) (bytes). Returns how many
/// instructions changed. Throws PlanError when `plan` does not validate.
int choose_fastest_convolutions(const Graph& graph, const CostModel& costs, int64_t budget_bytes,
                                Plan* plan);

}  // namespace monet
