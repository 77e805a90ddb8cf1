// halfway_budget: a budget that leaves a planner real work on a tiny model, halfway
// between the smallest simulated peak of the memory-lean heuristic plans and store-all's
// (bytes). Both plans fit it, and so do better ones.
#pragma once

#include <cstdint>

#include "plan/simulator.h"
#include "planner/baseline_plans.h"
#include "planner/lean_plans.h"

namespace monet::testing {

inline int64_t halfway_budget(const Graph& g, const CostModel& costs) {
  const int64_t all = simulate(g, store_all_plan(g), costs).peak_bytes;
  const int64_t smallest = simulate(g, best_lean_plan(g, costs, -1), costs).peak_bytes;
  return smallest + (all - smallest) / 2;
}

}  // namespace monet::testing
