// quick_profile: the costs of a tiny test model: the workspace bytes the profiler measures
// (one call per implementation, no warm-up) and seconds either measured the same way or
// from a deterministic model of the bytes each call moves (Timing::kModelled: what a test
// plans is then the same on every machine and under any load);
// ProfiledTinyModel: a tiny model with what its tests need beside it.
#pragma once

#include <string>
#include <utility>

#include "cost/profiler.h"
#include "graph/model_zoo.h"
#include "ops/op_impl.h"
#include "runtime/model_state.h"
#include "tiny_models.h"

namespace monet::testing {

/// `costs` with every call's seconds replaced by a deterministic model of the memory
/// traffic it makes: 1 microsecond per call plus 0.1 ns per byte it reads or writes (a
/// forward: its inputs, its output unless in place or a view, its intermediate, its
/// workspace; a backward: the activations it reads, the output's gradient, the gradients
/// it returns, its workspace). Implementations of one call that move the same bytes are
/// ranked by name 1% apart, so that the planners' choices between them are strict.
/// Workspace and result bytes stay as measured.
inline CostModel with_modelled_seconds(const Graph& g, CostModel costs) {
  constexpr double kSecondsPerCall = 1e-6, kSecondsPerByte = 1e-10, kRankStep = 0.01;
  auto seconds = [&](int64_t bytes, int rank) {
    return (kSecondsPerCall + kSecondsPerByte * static_cast<double>(bytes)) *
           (1 + kRankStep * rank);
  };
  for (const Node& n : g.nodes()) {
    const int64_t out = g.value(n.output).bytes();
    int64_t inputs = 0;
    for (int v : n.inputs) inputs += g.value(v).bytes();
    NodeCosts& nc = costs.nodes.at(n.id);
    int rank = 0;
    for (const ForwardImplInfo& f : forward_impls(g, n)) {
      auto it = nc.forward.find(f.name);
      if (it == nc.forward.end()) continue;
      int64_t bytes = inputs + it->second.workspace_bytes;
      if (!f.inplace && !f.output_aliases_input) bytes += out;
      if (f.emits_intermediate) bytes += intermediate_bytes(g, n, f.name);
      it->second.seconds = seconds(bytes, rank++);
    }
    rank = 0;
    for (const BackwardImplInfo& b : backward_impls(g, n)) {
      auto it = nc.backward.find(backward_cost_key(b.part, b.name));
      if (it == nc.backward.end()) continue;
      int64_t bytes = 2 * out + inputs + it->second.workspace_bytes;  // grads in and out
      for (int k : b.reads_inputs) bytes += g.value(n.inputs.at(k)).bytes();
      if (b.reads_output) bytes += out;
      for (const std::string& forward : b.requires_forward)
        if (b.reads_intermediate) bytes += intermediate_bytes(g, n, forward);
      it->second.seconds = seconds(bytes, rank++);
    }
  }
  return costs;
}

/// Where the seconds of quick_profile's costs come from.
enum class Timing {
  kMeasured,  // one timed call per implementation, no warm-up
  kModelled,  // with_modelled_seconds: the same on every machine and under any load
};

inline CostModel quick_profile(const Graph& g, const ModelState& state, const Batch& batch,
                               Timing timing = Timing::kMeasured) {
  ProfileOptions po;
  po.warmup = 0;
  po.repeats = 1;
  CostModel costs = profile_costs(g, state, batch, po);
  return timing == Timing::kModelled ? with_modelled_seconds(g, std::move(costs)) : costs;
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
