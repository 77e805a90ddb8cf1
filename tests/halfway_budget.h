// lean_budget: the smallest simulated peak of the memory-lean checkpointing plans (bytes),
// a tight budget that has a plan (store-all with default implementations, which the lean
// planner also offers, is left out: on tiny models its peak can be the smaller one).
// halfway_budget: a budget that leaves a planner real work on a tiny model, halfway between that
// and store-all's peak. Both plans fit it, and so do better ones.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"

namespace monet::testing {

inline int64_t lean_budget(const Graph& g, const CostModel& costs) {
  int64_t smallest = std::numeric_limits<int64_t>::max();
  for (const Plan& p : checkpoint_family(g, lean_choices(g, costs), "lean"))
    smallest = std::min(smallest, simulate(g, p, costs).peak_bytes);
  return smallest;
}

inline int64_t halfway_budget(const Graph& g, const CostModel& costs) {
  const int64_t all = simulate(g, store_all_plan(g), costs).peak_bytes;
  const int64_t smallest = lean_budget(g, costs);
  return smallest + (all - smallest) / 2;
}

}  // namespace monet::testing
