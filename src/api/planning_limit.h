// What the public PlanOptions ask of the planner's search: its SearchLimit
// (planner/solver/search_clock.h) and its SearchOptions, the same for planning a budget
// and for the smallest budget.
#pragma once

#include <monet/monet.h>

#include "planner/search/search_policy.h"
#include "planner/solver/search_clock.h"

namespace monet {

SearchLimit search_limit_of(PlanningLimit limit);

/// The search options of every planner call the API makes under `options`: its time limit
/// (seconds), planning limit and progress, a relative gap of 1%.
SearchOptions search_options_of(const PlanOptions& options);

}  // namespace monet
