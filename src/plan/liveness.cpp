#include "plan/liveness.h"

#include <algorithm>

namespace monet {

InstrEffects instruction_effects(const Graph& g, const TensorIds& ids,
                                 const std::vector<bool>& needs, const Instruction& in) {
  InstrEffects e;
  const Node& n = g.node(in.node);
  auto is_activation = [&](int v) { return g.value(v).kind == ValueKind::kActivation; };
  switch (in.kind) {
    case InstrKind::kForward: {
      const auto& impl = find_forward_impl(forward_impls(g, n), n, in.impl);
      for (int v : n.inputs)
        if (is_activation(v)) e.reads.push_back(ids.activation(v));
      e.writes.push_back(ids.activation(n.output));
      if (impl.emits_intermediate) e.writes.push_back(ids.intermediate(n.id));
      if (impl.inplace) e.kills.push_back(ids.activation(n.inputs[0]));
      break;
    }
    case InstrKind::kBackward: {
      const auto& impl = find_backward_impl(backward_impls(g, n), n, in.part, in.impl);
      e.reads.push_back(ids.grad(n.output));
      for (int i : impl.reads_inputs)
        if (is_activation(n.inputs[i])) e.reads.push_back(ids.activation(n.inputs[i]));
      if (impl.reads_output) e.reads.push_back(ids.activation(n.output));
      if (impl.reads_intermediate) e.reads.push_back(ids.intermediate(n.id));
      if (in.part != BackwardPart::kWeight)
        for (int v : n.inputs)
          if (is_activation(v) && needs[v]) e.accumulates.push_back(ids.grad(v));
      break;
    }
    case InstrKind::kFree:
      e.kills.push_back(in.slot == Slot::kOutput ? ids.activation(n.output)
                                                 : ids.intermediate(n.id));
      break;
  }
  return e;
}

ParameterEvents parameter_events(const Graph& g, const Plan& plan,
                                 const std::vector<bool>& needs_grad) {
  const size_t count = plan.program.size();
  ParameterEvents events;
  events.gradient_final_after.assign(count, {});
  events.update_after.assign(count, {});
  std::vector<int> last_gradient(g.values().size(), -1), last_use(g.values().size(), -1);
  for (size_t i = 0; i < count; ++i) {
    const Instruction& in = plan.program[i];
    if (in.kind == InstrKind::kFree) continue;
    const Node& n = g.node(in.node);
    const std::vector<bool> mask = in.kind == InstrKind::kBackward
                                       ? backward_grad_mask(g, n, in.part, needs_grad)
                                       : std::vector<bool>(n.inputs.size(), false);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (g.value(n.inputs[k]).kind != ValueKind::kParameter) continue;
      last_use[n.inputs[k]] = static_cast<int>(i);
      if (mask[k]) last_gradient[n.inputs[k]] = static_cast<int>(i);
    }
  }
  for (int p : g.parameters()) {
    if (last_gradient[p] < 0) continue;
    events.gradient_final_after[last_gradient[p]].push_back(p);
    if (g.update_mode() == UpdateMode::kFused) events.update_after[last_use[p]].push_back(p);
  }
  return events;
}

// Liveness::state_free_after.
static std::vector<std::vector<int>> node_state_free_after(const Graph& g, const Plan& plan) {
  std::vector<int> last(g.nodes().size(), -1);  // per node: its last forward or backward
  for (size_t i = 0; i < plan.program.size(); ++i)
    if (plan.program[i].kind != InstrKind::kFree) last[plan.program[i].node] = static_cast<int>(i);
  std::vector<std::vector<int>> after(plan.program.size());
  for (size_t n = 0; n < last.size(); ++n)
    if (last[n] >= 0 && plan.program[last[n]].kind == InstrKind::kBackward)
      after[last[n]].push_back(static_cast<int>(n));
  return after;
}

Liveness analyze_liveness(const Graph& g, const Plan& plan) {
  Liveness l;
  l.ids = TensorIds::of(g);
  const size_t count = plan.program.size();
  l.effects.reserve(count);
  const auto needs_grad = values_needing_grad(g);
  for (const auto& in : plan.program)
    l.effects.push_back(instruction_effects(g, l.ids, needs_grad, in));
  l.free_after.assign(count, {});
  std::vector<bool> needed(l.ids.count(), false);
  for (size_t i = count; i-- > 0;) {
    const auto& e = l.effects[i];
    std::vector<int> uses = e.reads;
    uses.insert(uses.end(), e.writes.begin(), e.writes.end());
    uses.insert(uses.end(), e.accumulates.begin(), e.accumulates.end());
    std::sort(uses.begin(), uses.end());
    uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
    for (int t : uses)
      if (!needed[t]) l.free_after[i].push_back(t);
    for (int t : e.writes) needed[t] = false;
    for (int t : e.reads) needed[t] = true;
    for (int t : e.accumulates) needed[t] = true;
  }
  if (g.update_mode() == UpdateMode::kFused)
    l.update_after = parameter_events(g, plan, needs_grad).update_after;
  else
    l.update_after.assign(count, {});
  l.state_free_after = node_state_free_after(g, plan);
  return l;
}

std::vector<bool> alive_before(const Liveness& live, int at) {
  std::vector<bool> alive(live.ids.count(), false);
  for (int i = 0; i < at; ++i) advance_alive(live, i, &alive);
  return alive;
}

void advance_alive(const Liveness& live, int i, std::vector<bool>* alive) {
  for (int t : live.effects[i].kills) (*alive)[t] = false;
  for (int t : live.effects[i].writes) (*alive)[t] = true;
  for (int t : live.free_after[i]) (*alive)[t] = false;
}

}  // namespace monet
