#include "graph/attention_fusion.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/aten_call.h"
#include "graph/attention_spec.h"
#include "graph/shape_inference.h"

namespace monet {
namespace {

// An attention pattern, found from the node computing P @ v (whose place the attention
// node takes).
struct Match {
  std::set<int> removed;  // nodes the attention node replaces (P @ v among them)
  int q = -1, k = -1, v = -1;
  AttentionSpec spec;
  double p = 0.0;            // dropout probability
  std::string softmax_name;  // names the attention node
};

const AtenCall* call_of(const Graph& g, int node, const char* op) {
  const Node& n = g.node(node);
  if (n.op != OpKind::kAten || !n.attrs.aten || n.attrs.aten->name != op) return nullptr;
  return n.attrs.aten.get();
}

// The producer of `value` when `value` is an activation read by `reader` alone.
int sole_producer(const Graph& g, int value, int reader) {
  const Value& v = g.value(value);
  if (v.kind != ValueKind::kActivation) return -1;
  if (v.consumers.size() != 1 || v.consumers[0] != reader) return -1;
  return v.producer;
}

std::optional<double> number(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.numel() == 1 && t.is_floating_point()) return t.item<double>();
    return std::nullopt;
  }
  if (v.isDouble() || v.isInt()) return v.toScalar().toDouble();
  return std::nullopt;
}

// x * c, c * x or x / c with a constant c: the factor x is multiplied by.
std::optional<double> scaling(const Graph& g, int node) {
  for (const char* op : {"aten::mul", "aten::div"}) {
    const AtenCall* c = call_of(g, node, op);
    if (!c || c->arguments.size() != 2 || c->tensor_slots.size() != 1) continue;
    const int slot = c->tensor_slots[0];
    if (std::string(op) == "aten::div" && slot != 0) return std::nullopt;
    const std::optional<double> f = number(c->arguments[1 - slot]);
    if (!f || *f == 0) return std::nullopt;
    return std::string(op) == "aten::div" ? 1.0 / *f : *f;
  }
  return std::nullopt;
}

// masked_fill(x, constant bool, value) or x + constant (alpha 1): fills in the mask.
bool masking(const Graph& g, int node, AttentionSpec* spec) {
  const std::vector<int64_t>& scores = g.value(g.node(node).output).shape;
  if (const AtenCall* c = call_of(g, node, "aten::masked_fill")) {
    if (c->arguments.size() != 3 || c->tensor_slots != std::vector<int>{0} ||
        !c->arguments[1].isTensor())
      return false;
    const at::Tensor mask = c->arguments[1].toTensor();
    const std::optional<double> fill = number(c->arguments[2]);
    if (!fill || mask.scalar_type() != at::kBool || !broadcasts_to(mask.sizes().vec(), scores))
      return false;
    spec->mask = AttentionMask::kFill;
    spec->mask_values = mask;
    spec->fill = *fill;
    return true;
  }
  const AtenCall* c = call_of(g, node, "aten::add");
  if (!c || c->overload != "Tensor" || c->arguments.size() != 3 || c->tensor_slots.size() != 1)
    return false;
  const c10::IValue& other = c->arguments[1 - c->tensor_slots[0]];
  const std::optional<double> alpha = number(c->arguments[2]);
  if (!other.isTensor() || !alpha || *alpha != 1) return false;
  const at::Tensor mask = other.toTensor();
  if (!mask.is_floating_point() || !broadcasts_to(mask.sizes().vec(), scores)) return false;
  spec->mask = AttentionMask::kAdd;
  spec->mask_values = mask;
  return true;
}

// softmax over the last dimension, without a dtype conversion.
bool last_dim_softmax(const Graph& g, int node) {
  const AtenCall* c = call_of(g, node, "aten::softmax");
  if (!c || c->arguments.size() != 3 || !c->arguments[2].isNone() || !c->arguments[1].isInt())
    return false;
  const int64_t rank = static_cast<int64_t>(g.value(g.node(node).output).shape.size());
  const int64_t dim = c->arguments[1].toInt();
  return dim == -1 || dim == rank - 1;
}

bool matmul(const Graph& g, int node) {
  const AtenCall* c = call_of(g, node, "aten::matmul");
  if (!c) c = call_of(g, node, "aten::bmm");
  return c && c->tensor_slots.size() == 2 && g.node(node).inputs.size() == 2;
}

// transpose(x, -2, -1) in any spelling: x, else -1.
int transposed_last_two(const Graph& g, int node) {
  const AtenCall* c = call_of(g, node, "aten::transpose");
  if (!c || c->arguments.size() != 3 || !c->arguments[1].isInt() || !c->arguments[2].isInt())
    return -1;
  const int64_t rank = static_cast<int64_t>(g.value(g.node(node).output).shape.size());
  auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
  const int64_t a = norm(c->arguments[1].toInt()), b = norm(c->arguments[2].toInt());
  if (std::min(a, b) != rank - 2 || std::max(a, b) != rank - 1) return -1;
  return g.node(node).inputs[0];
}

// The attention pattern ending at `last` (P @ v), walked back from it.
std::optional<Match> match_at(const Graph& g, int last) {
  if (!matmul(g, last)) return std::nullopt;
  Match m;
  m.removed.insert(last);
  m.v = g.node(last).inputs[1];
  int node = sole_producer(g, g.node(last).inputs[0], last);
  // `at` joins the match; its (single) activation input's producer comes next.
  auto step = [&](int at) {
    m.removed.insert(at);
    node = sole_producer(g, g.node(at).inputs[0], at);
  };
  if (node >= 0 && g.node(node).op == OpKind::kDropout) {
    m.p = g.node(node).attrs.p;
    step(node);
  }
  if (node < 0 || !last_dim_softmax(g, node)) return std::nullopt;
  m.softmax_name = g.node(node).name;
  step(node);
  if (node >= 0 && masking(g, node, &m.spec)) step(node);
  if (node >= 0)
    if (const auto f = scaling(g, node)) {
      m.spec.scale *= *f;
      step(node);
    }
  if (node < 0 || !matmul(g, node)) return std::nullopt;
  m.removed.insert(node);
  const int scores = node;
  const int kt = g.node(scores).inputs[1];
  const Value& kt_value = g.value(kt);
  if (kt_value.producer < 0) return std::nullopt;
  m.k = transposed_last_two(g, kt_value.producer);
  if (m.k < 0) return std::nullopt;
  if (kt_value.consumers.size() == 1) m.removed.insert(kt_value.producer);
  m.q = g.node(scores).inputs[0];
  const int scaled_q = sole_producer(g, m.q, scores);
  if (scaled_q >= 0)
    if (const auto f = scaling(g, scaled_q)) {
      m.spec.scale *= *f;
      m.removed.insert(scaled_q);
      m.q = g.node(scaled_q).inputs[0];
    }
  // q [..., T, D], k [..., S, D], v [..., S, Dv]: one rank (at least 3), one batch.
  const auto &q = g.value(m.q).shape, &k = g.value(m.k).shape, &v = g.value(m.v).shape;
  const size_t r = q.size();
  if (r < 3 || k.size() != r || v.size() != r || !std::equal(q.begin(), q.end() - 2, k.begin()) ||
      !std::equal(q.begin(), q.end() - 2, v.begin()) || k[r - 1] != q[r - 1] ||
      v[r - 2] != k[r - 2])
    return std::nullopt;
  return m;
}

std::string unused_name(const std::string& base, std::set<std::string>& names) {
  std::string name = base;
  for (int i = 1; names.count(name); ++i) name = base + "." + std::to_string(i);
  names.insert(name);
  return name;
}

std::string module_of(const std::string& node_name) {
  const auto dot = node_name.rfind('.');
  return dot == std::string::npos ? "" : node_name.substr(0, dot + 1);
}

}  // namespace

Graph fuse_attention(const Graph& g, const AttentionFusionOptions& options, int* fused) {
  std::map<int, Match> by_last;
  std::set<int> removed;
  for (const Node& n : g.nodes())
    if (auto m = match_at(g, n.id)) {
      removed.insert(m->removed.begin(), m->removed.end());
      by_last.emplace(n.id, std::move(*m));
    }
  if (fused) *fused = static_cast<int>(by_last.size());
  if (by_last.empty()) return g;
  std::set<std::string> names;  // node names are their outputs' names
  for (const Value& v : g.values()) names.insert(v.name);
  Graph out(g.name());
  out.set_floating_dtype(g.floating_dtype());
  std::vector<int> map(g.values().size(), -1);
  for (const Value& v : g.values()) {
    switch (v.kind) {
      case ValueKind::kInput:
      case ValueKind::kTarget:
        map[v.id] = out.add_input(v.name, v.shape, v.dtype, v.kind);
        continue;
      case ValueKind::kParameter:
        map[v.id] = out.add_parameter(v.name, v.shape, v.init);
        continue;
      case ValueKind::kBuffer:
        map[v.id] = out.add_buffer(v.name, v.shape, v.init, v.dtype);
        continue;
      case ValueKind::kActivation:
        break;
    }
    const Node& n = g.node(v.producer);
    const auto match = by_last.find(n.id);
    if (match != by_last.end()) {
      const Match& m = match->second;
      auto spec = std::make_shared<AttentionSpec>(m.spec);
      const std::vector<int64_t>& q = g.value(m.q).shape;
      int64_t batch = 1;
      for (size_t i = 0; i + 2 < q.size(); ++i) batch *= q[i];
      const int64_t t = q[q.size() - 2];
      const int64_t s = g.value(m.k).shape[q.size() - 2];
      spec->block_rows = std::clamp<int64_t>(
          options.block_score_bytes /
              std::max<int64_t>(
                  1, batch * s * static_cast<int64_t>(c10::elementSize(g.floating_dtype()))),
          1, t);
      OpAttrs a;
      a.p = m.p;
      a.attention = std::move(spec);
      const std::string name = unused_name(module_of(m.softmax_name) + "attention", names);
      map[v.id] = out.add_node(OpKind::kAttention, name, {map[m.q], map[m.k], map[m.v]}, a);
      continue;
    }
    if (removed.count(n.id)) continue;
    std::vector<int> inputs;
    for (int in : n.inputs) inputs.push_back(map.at(in));
    map[v.id] = out.add_node(n.op, n.name, inputs, n.attrs);
  }
  return out;
}

}  // namespace monet
