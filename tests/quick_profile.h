// quick_profile: the costs of a tiny test model, profiled with one timed call per
// implementation and no warm-up (the tests need workspace bytes, not stable timings).
#pragma once

#include "cost/profiler.h"

namespace monet::testing {

inline CostModel quick_profile(const Graph& g, const ModelState& state, const Batch& batch) {
  ProfileOptions po;
  po.warmup = 0;
  po.repeats = 1;
  return profile_costs(g, state, batch, po);
}

}  // namespace monet::testing
