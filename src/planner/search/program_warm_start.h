// The warm start of a MONeT program: the fastest of the heuristic plans (Chen's,
// store-all and checkpointing with three implementation families, and plans the caller
// gives) that the program accepts. plan_monet and minimum_budget both start from it.
#pragma once

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "planner/program/monet_program.h"
#include "planner/search/program_search.h"

namespace monet {

/// Sets the fastest of the heuristic plans `program` accepts as `solver`'s warm start:
/// Chen, and store-all and checkpointing at 1 to all articulation points with default,
/// memory-lean and fastest implementations, and the `extra` plans. Returns the winner's
/// description, or an empty string when none fits (the warm start is then left as it was).
std::string warm_start(const MonetProgram& program, const Graph& g, const CostModel& costs,
                       SearchOptions* solver, const std::vector<Plan>& extra = {});

}  // namespace monet
