#include "planner/baselines/baseline_plans.h"

#include <cmath>
#include <random>

#include "graph/articulation_values.h"
#include "ops/aten_impls.h"
#include "plan/schedule_builder.h"

namespace monet {

namespace {

// Runs each node's input-gradient part right before its weight-gradient part where the
// schedule has them the other way round, as ATen's backward formulas compute them
// (convolution_backward and addmm's backward: the input's gradient first).
void inputs_before_weights(Plan& plan) {
  auto& program = plan.program;
  for (size_t i = 0; i + 1 < program.size(); ++i) {
    Instruction& a = program[i];
    Instruction& b = program[i + 1];
    if (a.kind == InstrKind::kBackward && b.kind == InstrKind::kBackward && a.node == b.node &&
        a.part == BackwardPart::kWeight && b.part == BackwardPart::kInput)
      std::swap(a, b);
  }
}

}  // namespace

Plan store_all_plan(const Graph& g, StoreAllOperators ops) {
  ScheduleChoices c = default_choices(g);
  if (ops == StoreAllOperators::kDefault) return build_schedule(g, c, "storeall");
  for (const auto& n : g.nodes()) {
    if (n.op == OpKind::kReLU) c.backward[n.id] = {"output"};  // relu saves its result
    if (n.op == OpKind::kAten && offers_autograd_node(g, n)) {
      c.forward[n.id] = "autograd";  // what its derivative saves, not a re-run at the backward
      c.backward[n.id] = {"autograd"};
    }
    if (n.op != OpKind::kConv) continue;
    const auto parts = backward_parts(g, n);
    for (size_t k = 0; k < parts.size(); ++k)
      if (parts[k] == BackwardPart::kInput) c.backward[n.id][k] = "aten";
  }
  Plan plan = build_schedule(g, c, "storeall");
  inputs_before_weights(plan);
  return plan;
}

Plan chen_plan(const Graph& g) {
  const size_t n = g.nodes().size();
  return checkpoint_schedule(g, default_choices(g),
                             static_cast<size_t>(std::lround(std::sqrt(double(n)))), "chen");
}

std::vector<bool> checkpoint_drops(const Graph& g, size_t segments) {
  const auto cuts = articulation_values(g);
  const size_t keep = std::max<size_t>(1, std::min(segments, cuts.size()));
  std::vector<bool> checkpoint(g.values().size(), false), drop(g.values().size(), false);
  for (size_t i = 0; i < keep && !cuts.empty(); ++i)
    checkpoint[cuts[(i + 1) * cuts.size() / (keep + 1)]] = true;
  for (const auto& v : g.values())
    drop[v.id] = v.kind == ValueKind::kActivation && !checkpoint[v.id];
  return drop;
}

Plan checkpoint_schedule(const Graph& g, ScheduleChoices c, size_t segments,
                         const std::string& planner) {
  c.drop_after_forward = checkpoint_drops(g, segments);
  return build_schedule(g, c, planner);
}

Plan random_plan(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  ScheduleChoices c = default_choices(g);
  for (const auto& n : g.nodes()) {
    std::vector<ForwardImplInfo> options;
    const bool sole_consumer = !n.inputs.empty() &&
                               g.value(n.inputs[0]).kind == ValueKind::kActivation &&
                               g.value(n.inputs[0]).consumers.size() == 1;
    for (const auto& f : forward_impls(g, n))
      if ((!f.inplace || sole_consumer) && !f.gist_encoding) options.push_back(f);
    const ForwardImplInfo f = options[pick(options.size())];
    c.forward[n.id] = f.name;
    const auto impls = backward_impls(g, n);
    const auto parts = backward_parts(g, n);
    for (size_t k = 0; k < parts.size(); ++k) {
      // The backward must suit the forward pass's implementation and the out-of-place
      // recomputation alike (they leave the same intermediate).
      const ForwardImplInfo recompute =
          find_forward_impl(forward_impls(g, n), n, out_of_place(f.name));
      std::vector<std::string> ok;
      for (const auto& b : impls)
        if (b.part == parts[k] && compatible(f, b) && compatible(recompute, b))
          ok.push_back(b.name);
      c.backward[n.id][k] = ok[pick(ok.size())];
    }
  }
  for (const auto& v : g.values())
    c.drop_after_forward[v.id] = v.kind == ValueKind::kActivation && rng() % 2;
  return build_schedule(g, c, "random");
}

}  // namespace monet
