#include "planner/store_all_plan.h"

namespace monet {

std::vector<Instruction> default_backward(const Graph& g, const Node& n) {
  std::vector<Instruction> out;
  const auto impls = backward_impls(g, n);
  for (BackwardPart part : backward_parts(g, n))
    for (const auto& b : impls)
      if (b.part == part) {
        out.push_back({InstrKind::kBackward, n.id, b.name, part, Slot::kOutput});
        break;
      }
  return out;
}

Plan store_all_plan(const Graph& g) {
  Plan plan;
  plan.graph_fingerprint = g.fingerprint();
  plan.planner = "storeall";
  const auto order = g.topological_order();
  for (int id : order)
    plan.program.push_back({InstrKind::kForward, id, forward_impls(g, g.node(id)).front().name,
                            BackwardPart::kAll, Slot::kOutput});
  const auto needs_backward = nodes_needing_backward(g);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (needs_backward[*it])
      for (const auto& in : default_backward(g, g.node(*it))) plan.program.push_back(in);
  return plan;
}

}  // namespace monet
