#include "graph/graph.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_set>

#include "graph/aten_call.h"
#include "graph/attention_spec.h"
#include "graph/shape_inference.h"

namespace monet {

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kInput:
      return "input";
    case ValueKind::kTarget:
      return "target";
    case ValueKind::kParameter:
      return "parameter";
    case ValueKind::kBuffer:
      return "buffer";
    case ValueKind::kActivation:
      return "activation";
  }
  return "?";
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t Value::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

int64_t Value::bytes() const { return numel() * static_cast<int64_t>(c10::elementSize(dtype)); }

void Graph::check_new_name(const std::string& name) const {
  if (name.empty()) throw GraphError("graph '" + name_ + "': empty value or node name");
  for (const auto& v : values_)
    if (v.name == name) throw GraphError("graph '" + name_ + "': duplicate name '" + name + "'");
}

int Graph::add_value(Value v) {
  check_new_name(v.name);
  for (auto d : v.shape)
    if (d < 1)
      throw GraphError("value '" + v.name + "': non-positive dimension in " +
                       shape_string(v.shape));
  v.id = static_cast<int>(values_.size());
  values_.push_back(std::move(v));
  return values_.back().id;
}

void Graph::set_floating_dtype(at::ScalarType dtype) {
  if (dtype != at::kFloat && dtype != at::kDouble && dtype != at::kBFloat16)
    throw GraphError("graph '" + name_ +
                     "': monet plans float32, float64 and bfloat16 models, not " +
                     c10::toString(dtype));
  if (!values_.empty() && dtype != floating_dtype_)
    throw GraphError("graph '" + name_ + "': the floating type is set before any value");
  floating_dtype_ = dtype;
}

int Graph::add_input(const std::string& name, std::vector<int64_t> shape,
                     std::optional<at::ScalarType> dtype, ValueKind kind) {
  if (kind != ValueKind::kInput && kind != ValueKind::kTarget)
    throw GraphError("add_input('" + name + "'): kind must be input or target");
  Value v;
  v.name = name;
  v.kind = kind;
  v.shape = std::move(shape);
  v.dtype = dtype.value_or(floating_dtype_);
  return add_value(std::move(v));
}

int Graph::add_state(ValueKind kind, const std::string& name, std::vector<int64_t> shape,
                     InitSpec init) {
  Value v;
  v.name = name;
  v.kind = kind;
  v.shape = std::move(shape);
  v.dtype = floating_dtype_;
  v.init = init;
  return add_value(std::move(v));
}

int Graph::add_parameter(const std::string& name, std::vector<int64_t> shape, InitSpec init) {
  return add_state(ValueKind::kParameter, name, std::move(shape), init);
}

int Graph::add_buffer(const std::string& name, std::vector<int64_t> shape, InitSpec init,
                      std::optional<at::ScalarType> dtype) {
  const int id = add_state(ValueKind::kBuffer, name, std::move(shape), init);
  if (dtype) values_[id].dtype = *dtype;
  return id;
}

int Graph::add_node(OpKind op, const std::string& name, std::vector<int> inputs, OpAttrs attrs) {
  std::vector<const Value*> in;
  for (int id : inputs) {
    if (id < 0 || id >= static_cast<int>(values_.size()))
      throw GraphError("node '" + name + "': input id " + std::to_string(id) +
                       " does not name a value in the graph");
    in.push_back(&values_[id]);
  }
  // Generic operators read and make tensors of any type (a comparison's mask, indices), and
  // a loss takes a prediction of any floating type (a bfloat16 model's float32 logits) and
  // is of its type; every other operator computes in the graph's floating type.
  const bool loss_of_any_floating = is_loss(op) && !in.empty() && at::isFloatingType(in[0]->dtype);
  if (!in.empty() && in[0]->dtype != floating_dtype_ && op != OpKind::kAten &&
      !loss_of_any_floating)
    throw GraphError("node '" + name + "': first input '" + in[0]->name + "' must be " +
                     c10::toString(floating_dtype_));
  Value out;
  out.name = name;
  out.kind = ValueKind::kActivation;
  out.dtype = loss_of_any_floating ? in[0]->dtype : floating_dtype_;
  out.shape = infer_shape(op, in, attrs, name);
  if (op == OpKind::kAten && attrs.aten) out.dtype = attrs.aten->output_dtype;
  out.producer = static_cast<int>(nodes_.size());
  const int out_id = add_value(std::move(out));

  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.op = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.output = out_id;
  n.attrs = std::move(attrs);
  for (int id : n.inputs) {
    auto& c = values_[id].consumers;
    if (c.empty() || c.back() != n.id) c.push_back(n.id);
  }
  nodes_.push_back(std::move(n));
  return out_id;
}

void Graph::rewire_input(int node, size_t slot, int value) {
  auto& n = nodes_.at(node);
  n.inputs.at(slot) = value;
  for (auto& v : values_) v.consumers.clear();
  for (const auto& m : nodes_)
    for (int id : m.inputs)
      if (id >= 0 && id < static_cast<int>(values_.size())) {
        auto& c = values_[id].consumers;
        if (std::find(c.begin(), c.end(), m.id) == c.end()) c.push_back(m.id);
      }
}

const Value& Graph::value(int id) const {
  if (id < 0 || id >= static_cast<int>(values_.size()))
    throw GraphError("no value with id " + std::to_string(id));
  return values_[id];
}

void Graph::set_aten_call(int id, std::shared_ptr<const AtenCall> call) {
  const Node& n = node(id);
  if (n.op != OpKind::kAten || !call || call->name != n.attrs.aten->name ||
      call->output_shape != n.attrs.aten->output_shape)
    throw GraphError("node '" + n.name + "': set_aten_call needs the same operator and shape");
  nodes_[id].attrs.aten = std::move(call);
}

const Node& Graph::node(int id) const {
  if (id < 0 || id >= static_cast<int>(nodes_.size()))
    throw GraphError("no node with id " + std::to_string(id));
  return nodes_[id];
}

std::vector<int> Graph::values_of_kind(ValueKind kind) const {
  std::vector<int> ids;
  for (const auto& v : values_)
    if (v.kind == kind) ids.push_back(v.id);
  return ids;
}

int Graph::loss_value() const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
    if (is_loss(it->op)) return it->output;
  throw GraphError("graph '" + name_ + "' has no loss node");
}

std::vector<int> Graph::topological_order() const {
  const int n = static_cast<int>(nodes_.size());
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> successors(n);
  for (const auto& node : nodes_)
    for (int id : node.inputs) {
      const int p = value(id).producer;
      if (p >= 0) {
        ++indegree[node.id];
        successors[p].push_back(node.id);
      }
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int u = ready.top();
    ready.pop();
    order.push_back(u);
    for (int s : successors[u])
      if (--indegree[s] == 0) ready.push(s);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (indegree[i] > 0)
        throw GraphError("graph '" + name_ + "' has a cycle through node '" + nodes_[i].name + "'");
  }
  return order;
}

void Graph::validate() const {
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < values_.size(); ++i) {
    const auto& v = values_[i];
    if (v.id != static_cast<int>(i)) throw GraphError("value '" + v.name + "' has a wrong id");
    if (!names.insert(v.name).second) throw GraphError("duplicate value name '" + v.name + "'");
    if ((v.kind == ValueKind::kActivation) != (v.producer >= 0))
      throw GraphError("value '" + v.name + "': only activations have a producer");
  }
  for (const auto& n : nodes_) {
    for (int id : n.inputs)
      if (id < 0 || id >= static_cast<int>(values_.size()))
        throw GraphError("node '" + n.name + "' reads a dangling input (value id " +
                         std::to_string(id) + ")");
    if (n.output < 0 || n.output >= static_cast<int>(values_.size()) ||
        values_[n.output].producer != n.id)
      throw GraphError("node '" + n.name + "' has a dangling output");
  }
  topological_order();  // throws on a cycle
  for (const auto& n : nodes_) {
    std::vector<const Value*> in;
    for (int id : n.inputs) in.push_back(&values_[id]);
    const auto shape = infer_shape(n.op, in, n.attrs, n.name);
    if (shape != values_[n.output].shape)
      throw GraphError("node '" + n.name + "': output shape " +
                       shape_string(values_[n.output].shape) + " does not match inferred " +
                       shape_string(shape));
  }
  const int loss = loss_value();
  if (!values_[loss].shape.empty()) throw GraphError("the loss must be a scalar");
  // A result nothing reads is computed only for what its operator updates: a batch norm's
  // running statistics (a traced model's auxiliary head that the trained output does not
  // read, kept for its statistics as PyTorch's forward keeps it), or a buffer's next value
  // (AtenCall::writes_buffer: instance norm's running statistics).
  for (const auto& v : values_) {
    if (v.kind != ValueKind::kActivation || !v.consumers.empty() || v.id == loss) continue;
    const Node& producer = nodes_[v.producer];
    if (producer.op != OpKind::kBatchNorm &&
        !(producer.op == OpKind::kAten && producer.attrs.aten->writes_buffer))
      throw GraphError("value '" + v.name + "' is computed but never used");
  }
  // Linear and convolution give their weight and bias (parameters or buffers) gradients
  // in the weight part of the backward and their input (an activation or the batch) its
  // gradient in the input part: other kinds belong on a generic node.
  for (const auto& n : nodes_) {
    if (n.op != OpKind::kLinear && n.op != OpKind::kConv && n.op != OpKind::kConvTranspose)
      continue;
    if (values_[n.inputs.at(0)].kind == ValueKind::kParameter)
      throw GraphError("node '" + n.name + "' (" + op_name(n.op) + ") reads parameter '" +
                       values_[n.inputs[0]].name +
                       "' as its input: make it a generic node, whose backward gives it its "
                       "gradient");
    for (size_t k = 1; k < n.inputs.size(); ++k)
      if (values_[n.inputs[k]].kind == ValueKind::kActivation)
        throw GraphError("node '" + n.name + "' (" + op_name(n.op) + ") reads the computed '" +
                         values_[n.inputs[k]].name +
                         "' as a weight or bias: make it a generic node, whose backward gives "
                         "it its gradient");
  }
  for (const auto& n : nodes_) {
    if (!n.attrs.inplace) continue;
    const auto& target = values_[n.inputs.at(0)];
    if (target.kind != ValueKind::kActivation)
      throw GraphError("node '" + n.name + "' runs in place on '" + target.name +
                       "', which is not an activation");
    if (target.consumers.size() != 1)
      throw GraphError("node '" + n.name + "' runs in place on '" + target.name +
                       "', which other nodes also read");
  }
}

int64_t Graph::generic_node_count() const {
  return std::count_if(nodes_.begin(), nodes_.end(),
                       [](const Node& n) { return n.op == OpKind::kAten; });
}

int64_t Graph::parameter_count() const {
  int64_t n = 0;
  for (const auto& v : values_)
    if (v.kind == ValueKind::kParameter) n += v.numel();
  return n;
}

int64_t Graph::activation_bytes() const {
  int64_t n = 0;
  for (const auto& v : values_)
    if (v.kind == ValueKind::kActivation) n += v.bytes();
  return n;
}

int64_t Graph::constant_bytes() const {
  std::set<const void*> seen;
  int64_t bytes = 0;
  auto count = [&](const at::Tensor& t) {
    if (t.defined() && t.has_storage() && seen.insert(t.storage().unsafeGetStorageImpl()).second)
      bytes += static_cast<int64_t>(t.storage().nbytes());
  };
  for (const Node& n : nodes_) {
    if (n.attrs.attention) count(n.attrs.attention->mask_values);
    if (!n.attrs.aten) continue;
    for (const c10::IValue& v : n.attrs.aten->arguments) {
      if (v.isTensor()) count(v.toTensor());
      if (v.isList())
        for (const c10::IValue& e : v.toListRef())
          if (e.isTensor()) count(e.toTensor());
    }
  }
  return bytes;
}

int64_t Graph::parameter_bytes() const {
  int64_t n = 0;
  for (const auto& v : values_)
    if (v.kind == ValueKind::kParameter) n += v.bytes();
  return n;
}

const char* update_mode_name(UpdateMode mode) {
  return mode == UpdateMode::kFused ? "fused" : "after-backward";
}

UpdateMode update_mode_from_name(const std::string& name) {
  if (name == "fused") return UpdateMode::kFused;
  if (name == "after-backward") return UpdateMode::kAfterBackward;
  throw std::invalid_argument("unknown optimizer update mode '" + name +
                              "' (known: fused, after-backward)");
}

std::string Graph::fingerprint() const {
  std::ostringstream s;
  for (const auto& v : values_) {
    s << 'v' << static_cast<int>(v.kind) << ':' << static_cast<int>(v.dtype) << ':';
    for (auto d : v.shape) s << d << ',';
    s << ';';
  }
  for (const auto& n : nodes_) {
    s << 'n' << op_name(n.op) << '(' << describe_attrs(n.op, n.attrs) << ')';
    for (int id : n.inputs) s << id << ',';
    s << "->" << n.output << ';';
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : s.str()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string Graph::to_string() const {
  std::ostringstream s;
  s << "graph " << name_ << ": " << nodes_.size() << " operators, " << parameter_count()
    << " parameters, fingerprint " << fingerprint() << "\n";
  for (const auto& n : nodes_) {
    const auto& out = values_[n.output];
    s << "  %" << n.output << " = " << op_name(n.op) << '(';
    for (size_t i = 0; i < n.inputs.size(); ++i) s << (i ? ", " : "") << values_[n.inputs[i]].name;
    s << ')';
    const auto attrs = describe_attrs(n.op, n.attrs);
    if (!attrs.empty()) s << " {" << attrs << '}';
    s << "  # " << n.name << ' ' << shape_string(out.shape) << ' ' << out.bytes() << " B\n";
  }
  return s.str();
}

}  // namespace monet
