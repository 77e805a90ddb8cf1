#include "planner/gist_planner.h"

#include <algorithm>

namespace monet {
namespace {

bool is_relu(const Node& n) { return n.op == OpKind::kReLU || n.op == OpKind::kReLU6; }

}  // namespace

ScheduleChoices gist_choices(const Graph& g) {
  ScheduleChoices c = default_choices(g);
  for (const auto& n : g.nodes()) {
    if (!is_relu(n)) continue;
    const Value& in = g.value(n.inputs[0]);
    const bool sole_reader = in.kind == ValueKind::kActivation && in.consumers.size() == 1;
    const auto& readers = g.value(n.output).consumers;
    const bool binarize =
        !readers.empty() && std::all_of(readers.begin(), readers.end(),
                                        [&](int r) { return g.node(r).op == OpKind::kMaxPool; });
    if (binarize) {
      c.forward[n.id] = sole_reader ? "inplace_mask" : "mask";
      c.backward[n.id] = {"mask"};
      for (int r : readers) {
        c.forward[r] = "argmax8";
        c.backward[r] = {"argmax8"};
      }
    } else {
      c.forward[n.id] = sole_reader ? "inplace" : "default";
      c.backward[n.id] = {"output"};
    }
  }
  return c;
}

Plan gist_plan(const Graph& g) { return build_schedule(g, gist_choices(g), "gist"); }

}  // namespace monet
