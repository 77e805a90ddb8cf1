#include "runtime/model_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <limits>

#include "graph/aten_call.h"

namespace monet {

ModelState ModelState::initialize(const Graph& graph, uint64_t seed) {
  ModelState s;
  at::manual_seed(seed);
  for (const auto& v : graph.values()) {
    if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
    s.tensors_[v.id] = materialize_parameter(v.init, v.shape, v.dtype);
    s.by_name_[v.name] = v.id;
  }
  return s;
}

const at::Tensor& ModelState::tensor(int value_id) const {
  auto it = tensors_.find(value_id);
  if (it == tensors_.end())
    throw std::out_of_range("model state has no tensor for value " + std::to_string(value_id));
  return it->second;
}

at::Tensor& ModelState::tensor(int value_id) {
  return const_cast<at::Tensor&>(static_cast<const ModelState&>(*this).tensor(value_id));
}

int ModelState::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

ModelState ModelState::clone() const {
  torch::NoGradGuard no_grad;
  ModelState s;
  s.by_name_ = by_name_;
  for (const auto& [id, t] : tensors_) s.tensors_[id] = t.detach().clone();
  return s;
}

int64_t ModelState::bytes() const {
  int64_t n = 0;
  for (const auto& [id, t] : tensors_) n += t.nbytes();
  return n;
}

at::Tensor fixed_tensor(const Graph& g, const ModelState& state, const Batch& batch, int value) {
  const Value& v = g.value(value);
  if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer) return state.tensor(value);
  auto it = batch.find(value);
  if (it == batch.end()) throw std::invalid_argument("batch has no tensor for '" + v.name + "'");
  return it->second;
}

namespace {

// Token ids for an integer input: below the row count of every embedding reading it (2
// when none does).
int64_t index_bound(const Graph& graph, const Value& v) {
  int64_t bound = std::numeric_limits<int64_t>::max();
  for (int c : v.consumers) {
    const Node& n = graph.node(c);
    if (n.op == OpKind::kAten && n.attrs.aten && n.attrs.aten->name == "aten::embedding" &&
        n.inputs.size() == 2 && n.inputs[1] == v.id)
      bound = std::min(bound, graph.value(n.inputs[0]).shape[0]);
  }
  return bound == std::numeric_limits<int64_t>::max() ? 2 : bound;
}

}  // namespace

Batch make_batch(const Graph& graph, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  Batch batch;
  int64_t classes = 1;
  for (const auto& n : graph.nodes())
    if (n.op == OpKind::kCrossEntropyLoss) classes = graph.value(n.inputs[0]).shape[1];
  for (const auto& v : graph.values()) {
    if (v.kind == ValueKind::kInput && v.dtype == at::kBool) {  // a mask
      batch[v.id] = at::empty(v.shape, at::kFloat).bernoulli_(0.5, gen).to(at::kBool);
    } else if (v.kind == ValueKind::kInput && at::isIntegralType(v.dtype, false)) {
      batch[v.id] =
          at::empty(v.shape, at::kLong).random_(0, index_bound(graph, v), gen).to(v.dtype);
    } else if (v.kind == ValueKind::kInput) {
      batch[v.id] = at::empty(v.shape, at::TensorOptions().dtype(v.dtype)).normal_(0, 1, gen);
    } else if (v.kind == ValueKind::kTarget) {
      if (v.dtype == at::kLong)
        batch[v.id] = at::empty(v.shape, at::kLong).random_(0, classes, gen);
      else
        batch[v.id] = at::empty(v.shape, at::TensorOptions().dtype(v.dtype)).bernoulli_(0.5, gen);
    }
  }
  return batch;
}

}  // namespace monet
