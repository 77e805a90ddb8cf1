// validate_plan(): proves a Plan can run on its graph before anything runs: every tensor
// an instruction reads is alive (computed, not freed, not overwritten in place), every
// backward runs after the gradient of its node's output is complete, and every
// parameter gets its gradient. The first violation is thrown as a PlanError naming the
// instruction.
#pragma once

#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

void validate_plan(const Graph& graph, const Plan& plan);

}  // namespace monet
