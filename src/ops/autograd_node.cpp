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

at::Tensor owning_tensor(std::unique_ptr<KeptGraph> kept, const at::TensorOptions& options) {
  KeptGraph* raw = kept.release();
  return at::from_blob(
      raw, {0}, [](void* p) { delete static_cast<KeptGraph*>(p); }, options.dtype(at::kByte));
}

}  // namespace

ForwardOutput autograd_node_forward(const Graph& g, const Node& n,
                                    const std::vector<at::Tensor>& in, uint64_t seed) {
  auto kept = std::make_unique<KeptGraph>();
  kept->leaves.resize(in.size());
  std::vector<at::Tensor> call_inputs(in.size());
  bool any_differentiable = false;
  for (size_t k = 0; k < in.size(); ++k) {
    const Value& v = g.value(n.inputs[k]);
    const bool activation = v.kind == ValueKind::kActivation;
    // As the call was probed (aten_inputs_of): a random draw or a detached value is read as
    // a constant (fractional max pooling refuses a gradient for its samples).
    const bool differentiable =
        (activation || v.kind == ValueKind::kParameter) && takes_gradient(g, n.inputs[k]);
    any_differentiable = any_differentiable || differentiable;
    call_inputs[k] =
        activation || differentiable ? storage_swappable(in[k], differentiable) : in[k];
    if (activation || differentiable) kept->leaves[k] = call_inputs[k];
  }
  at::Tensor out;
  {
    at::AutoGradMode grad_mode(true);
    out = call_aten(*n.attrs.aten, call_inputs, seed);
  }
  call_inputs.clear();
  kept->output = ag::impl::gradient_edge(out);
  // None on inputs that take no gradient (a mask converted to float): the backward then
  // has no gradient to give.
  if (!kept->output.function && any_differentiable)
    throw std::logic_error(n.name + ": " + n.attrs.aten->name + " recorded no autograd node");
  // The output owns its storage, contiguous, as every activation but a view.
  ForwardOutput result;
  result.output = own_storage(out.detach(), in).contiguous();
  out.reset();
  // The activations are the plan's to free and recompute: the graph keeps them by shape
  // until the backward points the leaves at the live inputs again. Parameters live
  // through the iteration and keep their storage.
  const at::Tensor nothing = at::empty({0}, result.output.options());
  for (size_t k = 0; k < in.size(); ++k)
    if (kept->leaves[k].defined() && g.value(n.inputs[k]).kind == ValueKind::kActivation)
      point_storage_at(kept->leaves[k], nothing.storage());
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
      point_storage_at(leaf, a.inputs[k].storage());
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
  std::vector<at::Tensor> sources = a.inputs;
  sources.push_back(a.grad_output);
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!a.needs_grad[k]) continue;
    grads[k] = grads[k].defined() ? owned_gradient(grads[k], sources)
                                  : at::zeros(g.value(n.inputs[k]).shape, a.grad_output.options());
  }
  return grads;
}

}  // namespace monet::kernels
