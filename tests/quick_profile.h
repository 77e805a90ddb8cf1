// quick_profile: the costs of a tiny test model: the workspace bytes the profiler measures
// (one call per implementation, no warm-up) and seconds from a deterministic model of the
// bytes each call moves (with_modelled_seconds: what a test plans is then the same on
// every machine and under any load);
// ProfiledTinyModel: a tiny model with what its tests need beside it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cost/profiler.h"
#include "graph/zoo/model_zoo.h"
#include "ops/op_impl.h"
#include "runtime/model_state.h"
#include "tiny_models.h"

namespace monet::testing {

/// `costs` with every call's seconds replaced by a deterministic model of the memory
/// traffic of what PyTorch runs: 1 microsecond per call plus 0.1 ns per byte the default
/// implementation reads or writes (a forward: its inputs and its output; a backward: its
/// inputs, its output and the output's gradient), each other implementation of the call
/// 1% slower than the one declared before it. The default stays the fastest, so no other
/// implementation dominates it in both time and memory and every plan PyTorch runs stays
/// expressible; memory alone sets the others apart. Workspace and result bytes stay as
/// measured.
inline CostModel with_modelled_seconds(const Graph& g, CostModel costs) {
  constexpr double kSecondsPerCall = 1e-6, kSecondsPerByte = 1e-10, kRankStep = 0.01;
  for (const Node& n : g.nodes()) {
    int64_t bytes = g.value(n.output).bytes();
    for (int v : n.inputs) bytes += g.value(v).bytes();
    const double forward = kSecondsPerCall + kSecondsPerByte * static_cast<double>(bytes);
    const double backward =
        kSecondsPerCall + kSecondsPerByte * static_cast<double>(bytes + g.value(n.output).bytes());
    NodeCosts& nc = costs.nodes.at(n.id);
    int rank = 0;
    for (const ForwardImplInfo& f : forward_impls(g, n)) {
      auto it = nc.forward.find(f.name);
      if (it != nc.forward.end()) it->second.seconds = forward * (1 + kRankStep * rank++);
    }
    std::map<BackwardPart, int> ranks;
    for (const BackwardImplInfo& b : backward_impls(g, n)) {
      auto it = nc.backward.find(backward_cost_key(b.part, b.name));
      if (it != nc.backward.end())
        it->second.seconds = backward * (1 + kRankStep * ranks[b.part]++);
    }
  }
  return costs;
}

/// `costs` with every other forward implementation of each convolution (another
/// algorithm) 20% faster than its default: what a test of choosing faster convolution
/// algorithms plans on, the same on every machine.
inline CostModel with_faster_convolution_algorithms(const Graph& g, CostModel costs) {
  constexpr double kFasterShare = 0.8;
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::kConv && n.op != OpKind::kConvTranspose) continue;
    NodeCosts& nc = costs.nodes.at(n.id);
    const std::vector<ForwardImplInfo> impls = forward_impls(g, n);
    const auto def = nc.forward.find(impls.front().name);
    if (def == nc.forward.end()) continue;
    for (size_t i = 1; i < impls.size(); ++i) {
      auto it = nc.forward.find(impls[i].name);
      if (it != nc.forward.end()) it->second.seconds = def->second.seconds * kFasterShare;
    }
  }
  return costs;
}

inline CostModel quick_profile(const Graph& g, const ModelState& state, const Batch& batch) {
  ProfileOptions po;
  po.warmup = 0;
  po.repeats = 1;
  return with_modelled_seconds(g, profile_costs(g, state, batch, po));
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
