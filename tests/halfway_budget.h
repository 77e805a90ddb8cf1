// lean_budget: the smallest simulated peak of the memory-lean heuristic plans (bytes), a
// tight budget that has a plan. halfway_budget: a budget that leaves a planner real work
// on a tiny model, halfway between that and store-all's peak. Both plans fit it, and so
// do better ones.
#pragma once

#include <cstdint>

#include "cost/simulator.h"
#include "planner/baseline_plans.h"
#include "planner/lean_plans.h"

namespace monet::testing {

inline int64_t lean_budget(const Graph& g, const CostModel& costs) {
  return simulate(g, best_lean_plan(g, costs, -1), costs).peak_bytes;
}

inline int64_t halfway_budget(const Graph& g, const CostModel& costs) {
  const int64_t all = simulate(g, store_all_plan(g), costs).peak_bytes;
  const int64_t smallest = lean_budget(g, costs);
  return smallest + (all - smallest) / 2;
}

}  // namespace monet::testing
