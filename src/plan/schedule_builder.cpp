#include "plan/schedule_builder.h"

#include <functional>

namespace monet {

bool backward_reads(const Graph& g, const ScheduleChoices& c, const Node& reader, int v) {
  const auto impls = backward_impls(g, reader);
  const auto parts = backward_parts(g, reader);
  for (size_t k = 0; k < parts.size() && k < c.backward[reader.id].size(); ++k) {
    const BackwardImplInfo b =
        find_backward_impl(impls, reader, parts[k], c.backward[reader.id][k]);
    if (b.reads_output && reader.output == v) return true;
    for (int i : b.reads_inputs)
      if (reader.inputs[i] == v) return true;
  }
  return false;
}

ScheduleChoices default_choices(const Graph& g) {
  ScheduleChoices c;
  c.drop_after_forward.assign(g.values().size(), false);
  for (const auto& n : g.nodes()) {
    c.forward.push_back(forward_impls(g, n).front().name);
    std::vector<std::string> parts;
    const auto impls = backward_impls(g, n);
    for (BackwardPart part : backward_parts(g, n))
      for (const auto& b : impls)
        if (b.part == part) {
          parts.push_back(b.name);
          break;
        }
    c.backward.push_back(parts);
  }
  return c;
}

Plan build_schedule(const Graph& g, const ScheduleChoices& c, const std::string& planner) {
  Plan plan;
  plan.graph_fingerprint = g.fingerprint();
  plan.planner = planner;
  const auto order = g.topological_order();
  std::vector<int> position(g.nodes().size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::vector<bool> alive(g.values().size(), false), inter_alive(g.nodes().size(), false);
  auto is_activation = [&](int v) { return g.value(v).kind == ValueKind::kActivation; };
  auto emit_forward = [&](const Node& n, const std::string& impl_name) {
    plan.program.push_back(
        {InstrKind::kForward, n.id, impl_name, BackwardPart::kAll, Slot::kOutput});
    const auto impl = find_forward_impl(forward_impls(g, n), n, impl_name);
    if (impl.inplace) alive[n.inputs[0]] = false;
    alive[n.output] = true;
    if (impl.emits_intermediate) inter_alive[n.id] = true;
  };

  // Forward pass.
  std::vector<int> last_forward_use(g.values().size(), -1);
  for (int id : order)
    for (int v : g.node(id).inputs)
      last_forward_use[v] = std::max(last_forward_use[v], position[id]);
  for (int id : order) {
    const Node& n = g.node(id);
    emit_forward(n, c.forward[id]);
    for (int v : n.inputs)
      if (is_activation(v) && alive[v] && c.drop_after_forward[v] &&
          last_forward_use[v] == position[id]) {
        plan.program.push_back(
            {InstrKind::kFree, g.value(v).producer, "", BackwardPart::kAll, Slot::kOutput});
        alive[v] = false;
      }
  }

  // Backward pass with recomputation on demand.
  std::function<void(int)> ensure_value = [&](int v) {
    if (!is_activation(v) || alive[v]) return;
    const Node& p = g.node(g.value(v).producer);
    for (int in : p.inputs) ensure_value(in);
    emit_forward(p, out_of_place(c.forward[p.id]));
  };
  auto ensure_intermediate = [&](const Node& n) {
    if (inter_alive[n.id]) return;
    for (int in : n.inputs) ensure_value(in);
    emit_forward(n, out_of_place(c.forward[n.id]));
  };
  const auto needs_backward = nodes_needing_backward(g);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.node(*it);
    if (!needs_backward[n.id]) continue;
    const auto parts = backward_parts(g, n);
    const auto impls = backward_impls(g, n);
    for (size_t k = 0; k < parts.size(); ++k) {
      const auto b = find_backward_impl(impls, n, parts[k], c.backward[n.id][k]);
      // Inputs first: recomputing the output may overwrite nothing we need (out of place).
      for (int i : b.reads_inputs) ensure_value(n.inputs[i]);
      if (b.reads_output) ensure_value(n.output);
      if (b.reads_intermediate) ensure_intermediate(n);
      plan.program.push_back({InstrKind::kBackward, n.id, b.name, parts[k], Slot::kOutput});
    }
  }
  return plan;
}

}  // namespace monet
