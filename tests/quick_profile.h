// quick_profile: the costs of a tiny test model, profiled with one timed call per
// implementation and no warm-up (the tests need workspace bytes, not stable timings);
// ProfiledTinyModel: a tiny model with what its tests need beside it.
#pragma once

#include <string>

#include "cost/profiler.h"
#include "graph/model_zoo.h"
#include "runtime/model_state.h"
#include "tiny_models.h"

namespace monet::testing {

inline CostModel quick_profile(const Graph& g, const ModelState& state, const Batch& batch) {
  ProfileOptions po;
  po.warmup = 0;
  po.repeats = 1;
  return profile_costs(g, state, batch, po);
}

/// A tiny zoo model, its initial weights, one batch and its quick profile.
struct ProfiledTinyModel {
  explicit ProfiledTinyModel(const TinyModel& m)
      : g(build_zoo_model(m.name, m.config)),
        state(ModelState::initialize(g, 0)),
        batch(make_batch(g, 1)),
        costs(quick_profile(g, state, batch)) {}
  explicit ProfiledTinyModel(const std::string& name)
      : ProfiledTinyModel(tiny_models_named({name})[0]) {}
  Graph g;
  ModelState state;
  Batch batch;
  CostModel costs;
};

}  // namespace monet::testing
