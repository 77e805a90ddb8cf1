#include "planner/baselines/gist_planner.h"

#include <algorithm>

#include "ops/op_impl.h"

namespace monet {
namespace {

bool is_relu(const Node& n) { return n.op == OpKind::kReLU || n.op == OpKind::kReLU6; }

// Readers whose backward keeps nothing of their inputs (their gradients are slices or
// copies of the output gradient).
bool keeps_nothing(const Node& n) { return n.op == OpKind::kAdd || n.op == OpKind::kCat; }

// Switches convolution `conv` to keep the `encoding` of its input ("sparse_input",
// "half_input") for its weight gradient, and its input gradient to one that does not read
// the input.
void keep_encoded_input(const Graph& g, const Node& conv, const std::string& encoding,
                        ScheduleChoices* c) {
  c->forward[conv.id] = encoding;
  const auto impls = backward_impls(g, conv);
  const auto parts = backward_parts(g, conv);
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] == BackwardPart::kWeight) {
      c->backward[conv.id][k] = encoding;
      continue;
    }
    for (const auto& b : impls)
      if (b.part == parts[k] && b.reads_inputs.empty() && !b.reads_intermediate) {
        c->backward[conv.id][k] = b.name;
        break;
      }
  }
}

}  // namespace

ScheduleChoices gist_choices(const Graph& g, const GistOptions& o) {
  ScheduleChoices c = default_choices(g);
  for (const auto& n : g.nodes()) {
    if (!is_relu(n)) continue;
    const Value& in = g.value(n.inputs[0]);
    // In place where the input has no other reader and the node offers it (not where the
    // input's storage is shared with a view).
    const auto impls = forward_impls(g, n);
    const bool sole_reader =
        in.kind == ValueKind::kActivation && in.consumers.size() == 1 &&
        std::any_of(impls.begin(), impls.end(), [](const auto& f) { return f.inplace; });
    const auto& readers = g.value(n.output).consumers;
    auto count = [&](auto pred) {
      return static_cast<int>(std::count_if(readers.begin(), readers.end(), pred));
    };
    const int pools = count([&](int r) { return g.node(r).op == OpKind::kMaxPool; });
    const int convs = count([&](int r) { return g.node(r).op == OpKind::kConv; });
    const int inert = count([&](int r) { return keeps_nothing(g.node(r)); });
    const int total = static_cast<int>(readers.size());
    if (total > 0 && pools == total) {  // binarize
      c.forward[n.id] = sole_reader ? "inplace_mask" : "mask";
      c.backward[n.id] = {"mask"};
      for (int r : readers) {
        c.forward[r] = "argmax8";
        c.backward[r] = {"argmax8"};
      }
    } else if (convs == 1 && convs + inert == total) {  // sparse storage, dense compute
      c.forward[n.id] = sole_reader ? "inplace_mask" : "mask";
      c.backward[n.id] = {"mask"};
      for (int r : readers)
        if (g.node(r).op == OpKind::kConv) keep_encoded_input(g, g.node(r), "sparse_input", &c);
    } else {
      c.forward[n.id] = sole_reader ? "inplace" : "default";
      c.backward[n.id] = {"output"};
    }
  }
  if (!o.delayed_precision_reduction) return c;
  for (const auto& n : g.nodes()) {
    if (n.op != OpKind::kConv || c.forward[n.id] == "sparse_input") continue;
    const Value& x = g.value(n.inputs[0]);
    if (x.kind != ValueKind::kActivation) continue;
    // Only where this convolution alone keeps its input: otherwise the dense input stays
    // for another reader and a float16 copy would only add to it.
    bool alone = !backward_reads(g, c, g.node(x.producer), x.id);
    for (int r : x.consumers)
      alone = alone && (r == n.id || !backward_reads(g, c, g.node(r), x.id));
    if (alone) keep_encoded_input(g, n, "half_input", &c);
  }
  return c;
}

Plan gist_plan(const Graph& g, const GistOptions& o) {
  return build_schedule(g, gist_choices(g, o),
                        o.delayed_precision_reduction ? "gist-fp16" : "gist");
}

}  // namespace monet
