#include "ops/autograd_node.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <memory>
#include <stdexcept>

#include "graph/aten_call.h"

namespace monet::kernels {
namespace {

namespace ag = torch::autograd;

// What the "autograd" forward keeps, owned by the intermediate tensor: the autograd graph
// of the call (from its output's node to the leaves' gradient accumulators) and the
// tensors it ran on, by node input, where the input is an activation (swapped out after
// the forward) or a parameter (a leaf).
struct KeptGraph {
  ag::Edge output;  // the output's node and place
  std::vector<at::Tensor> leaves;
};

// A tensor of `x`'s shape and storage, with its own version counter, whose storage can
// be pointed elsewhere (KeptGraph::leaves); a leaf requiring a gradient when `grad`.
at::Tensor storage_swappable(const at::Tensor& x, bool grad) {
  at::Tensor leaf = x.variable_data();
  leaf.unsafeGetTensorImpl()->set_allow_tensor_metadata_change(true);
  return grad ? leaf.requires_grad_(true) : leaf;
}

void point_at(const at::Tensor& leaf, const c10::Storage& storage) {
  leaf.unsafeGetTensorImpl()->set_storage_keep_dtype(storage);
}

at::Tensor owning_tensor(std::unique_ptr<KeptGraph> kept, const at::TensorOptions& options) {
  KeptGraph* raw = kept.release();
  return at::from_blob(
      raw, {0}, [](void* p) { delete static_cast<KeptGraph*>(p); }, options.dtype(at::kByte));
}

}  // namespace

ForwardOutput autograd_node_forward(const Graph& g, const Node& n,
                                    const std::vector<at::Tensor>& in) {
  if (!n.attrs.aten->autograd_keeps_inputs_by_leaf)
    throw std::logic_error(n.name + ": " + n.attrs.aten->name +
                           " holds its inputs other than by leaf; it has no autograd node "
                           "implementation");
  auto kept = std::make_unique<KeptGraph>();
  kept->leaves.resize(in.size());
  std::vector<at::Tensor> call_inputs(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    const Value& v = g.value(n.inputs[k]);
    const bool activation = v.kind == ValueKind::kActivation;
    const bool differentiable =
        (activation || v.kind == ValueKind::kParameter) && in[k].is_floating_point();
    call_inputs[k] =
        activation || differentiable ? storage_swappable(in[k], differentiable) : in[k];
    if (activation || differentiable) kept->leaves[k] = call_inputs[k];
  }
  at::Tensor out;
  {
    at::AutoGradMode grad_mode(true);
    out = call_aten(*n.attrs.aten, call_inputs);
  }
  call_inputs.clear();
  kept->output = ag::impl::gradient_edge(out);
  if (!kept->output.function)
    throw std::logic_error(n.name + ": " + n.attrs.aten->name + " recorded no autograd node");
  // The output owns its storage, contiguous, as every activation but a view (a result
  // that is a view of an input, a transpose of a slice, is copied).
  ForwardOutput result;
  result.output = out.detach();
  bool alias = false;
  for (const at::Tensor& x : in) alias = alias || result.output.is_alias_of(x);
  if (alias || !result.output.is_contiguous())
    result.output = result.output.clone(at::MemoryFormat::Contiguous);
  out.reset();
  // The activations are the plan's to free and recompute: the graph keeps them by shape
  // until the backward points the leaves at the live inputs again. Parameters live
  // through the iteration and keep their storage.
  const at::Tensor nothing = at::empty({0}, result.output.options());
  for (size_t k = 0; k < in.size(); ++k)
    if (kept->leaves[k].defined() && g.value(n.inputs[k]).kind == ValueKind::kActivation)
      point_at(kept->leaves[k], nothing.storage());
  result.intermediate = owning_tensor(std::move(kept), result.output.options());
  return result;
}

std::vector<at::Tensor> autograd_node_backward(const Graph& g, const Node& n,
                                               const BackwardArgs& a) {
  const auto* kept = static_cast<const KeptGraph*>(a.intermediate.storage().data());
  if (kept == nullptr) throw std::logic_error(n.name + ": no kept autograd graph");
  ag::edge_list wanted;
  std::vector<size_t> positions;
  for (size_t k = 0; k < kept->leaves.size(); ++k) {
    const at::Tensor& leaf = kept->leaves[k];
    if (!leaf.defined()) continue;
    if (a.inputs[k].defined() && g.value(n.inputs[k]).kind == ValueKind::kActivation)
      point_at(leaf, a.inputs[k].storage());
    if (!a.needs_grad[k] || !leaf.requires_grad()) continue;
    wanted.push_back(ag::impl::gradient_edge(leaf));
    positions.push_back(k);
  }
  std::vector<at::Tensor> grads(n.inputs.size());
  if (!wanted.empty()) {
    // keep_graph: the graph is the intermediate's, freed with it (the profiler runs this
    // backward several times on one forward).
    const ag::variable_list got = ag::Engine::get_default_engine().execute(
        {kept->output}, {a.grad_output}, /*keep_graph=*/true, /*create_graph=*/false,
        /*accumulate_grad=*/false, wanted);
    for (size_t i = 0; i < positions.size(); ++i) grads[positions[i]] = got[i];
  }
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!a.needs_grad[k]) continue;
    if (!grads[k].defined()) {
      grads[k] = at::zeros(g.value(n.inputs[k]).shape, a.grad_output.options());
      continue;
    }
    // Own storage, as every gradient the executor accumulates (add's passes its own on).
    bool alias = grads[k].is_alias_of(a.grad_output);
    for (const at::Tensor& x : a.inputs) alias = alias || (x.defined() && grads[k].is_alias_of(x));
    if (alias) grads[k] = grads[k].clone(at::MemoryFormat::Contiguous);
  }
  return grads;
}

}  // namespace monet::kernels
