// Generic ATen operators (OpKind::kAten): forward through the dispatcher, backward by
// re-running the operator under autograd, or by its kept autograd node (autograd_node.h).
#include <torch/csrc/autograd/autograd.h>

#include "graph/aten_call.h"
#include "ops/aten_impls.h"
#include "ops/autograd_node.h"
#include "ops/bit_mask.h"
#include "ops/few_bit_gelu.h"
#include "ops/op_kernels.h"
#include "ops/shape_stand_in.h"

namespace monet::kernels {
namespace {

// The re-running backward (any operator).
std::vector<at::Tensor> rerun_backward(const Graph& g, const Node& n, const BackwardArgs& a,
                                       uint64_t seed) {
  std::vector<at::Tensor> leaves(n.inputs.size()), wanted;
  std::vector<size_t> positions;
  const at::TensorOptions options = a.grad_output.options();
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    at::Tensor x = a.inputs[k];
    // Inputs the derivative does not read: a stand-in of their shape that holds no memory.
    if (!x.defined()) x = zero_shape_stand_in(g.value(n.inputs[k]).shape, options);
    leaves[k] = x.detach();
    if (a.needs_grad[k]) {
      leaves[k].requires_grad_(true);
      wanted.push_back(leaves[k]);
      positions.push_back(k);
    }
  }
  std::vector<at::Tensor> grads(n.inputs.size());
  if (wanted.empty()) return grads;
  at::AutoGradMode grad_mode(true);
  const at::Tensor out = call_aten(*n.attrs.aten, leaves, seed);
  const std::vector<at::Tensor> got = torch::autograd::grad(
      {out}, wanted, {a.grad_output}, /*retain_graph=*/false, /*create_graph=*/false,
      /*allow_unused=*/true);
  std::vector<at::Tensor> sources = leaves;
  sources.push_back(a.grad_output);
  for (size_t i = 0; i < positions.size(); ++i) {
    const size_t k = positions[i];
    grads[k] = got[i].defined() ? own_storage(got[i], sources) : at::zeros_like(leaves[k]);
  }
  return grads;
}

// d mean(cross_entropy(logits, target)) / d logits, times `go`: softmax over the class
// dimension (1), minus one at each target class, zero where the target is ignore_index,
// divided by the number of targets not ignored; one tensor of the logits' size.
at::Tensor cross_entropy_backward(const at::Tensor& go, const at::Tensor& logits,
                                  const at::Tensor& target, int64_t ignore_index) {
  at::Tensor grad = at::softmax(logits, 1);
  const at::Tensor kept = target.ne(ignore_index).unsqueeze(1);
  const at::Tensor classes = target.masked_fill(target.eq(ignore_index), 0).unsqueeze(1);
  grad.scatter_add_(1, classes, kept.to(grad.scalar_type()).neg());
  const at::Tensor scale = go / kept.sum().to(grad.scalar_type());
  return grad.mul_(kept).mul_(scale);
}

// The specialised backwards (aten_impls.h) of an operator with one activation input.
at::Tensor specialised_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                const BackwardArgs& a) {
  const std::string& op = n.attrs.aten->name;
  const at::Tensor& go = a.grad_output;
  const bool from_output = impl.name == "output";
  if (op == "aten::tanh") return at::tanh_backward(go, a.output);
  if (op == "aten::cross_entropy_loss")
    return cross_entropy_backward(go, a.inputs[0], a.inputs[1],
                                  n.attrs.aten->arguments.at(4).toInt());
  if (op == "aten::softmax")
    return at::_softmax_backward_data(go, a.output, n.attrs.aten->arguments.at(1).toInt(),
                                      a.output.scalar_type());
  if (op == "aten::gelu") {
    const std::string& approximate = n.attrs.aten->arguments.at(1).toStringRef();
    if (impl.name == "lossy_4bit") return few_bit_gelu_backward(go, a.intermediate, approximate);
    return at::gelu_backward(go, a.inputs[0], approximate);
  }
  if (op == "aten::elu")
    return at::elu_backward(go, aten_scalar_argument(n, 1), aten_scalar_argument(n, 2),
                            aten_scalar_argument(n, 3), from_output,
                            from_output ? a.output : a.inputs[0]);
  if (op == "aten::leaky_relu") {
    const double slope = aten_scalar_argument(n, 1);
    if (impl.name == "mask") {
      const at::Tensor positive = unpack_bits(a.intermediate, g.value(n.inputs[0]).shape);
      return at::where(positive, go, go * slope);
    }
    return at::leaky_relu_backward(go, from_output ? a.output : a.inputs[0], slope, from_output);
  }
  throw std::logic_error("no backward '" + impl.name + "' for " + op);
}

}  // namespace

at::Tensor own_storage(at::Tensor t, const std::vector<at::Tensor>& others) {
  for (const at::Tensor& o : others)
    if (o.defined() && t.is_alias_of(o)) return t.clone(at::MemoryFormat::Contiguous);
  return t;
}

ForwardOutput aten_forward(const Graph& g, const Node& n, const ForwardImplInfo& impl,
                           const std::vector<at::Tensor>& in, NodeState& state) {
  if (is_aten_norm(n)) {
    ForwardOutput norm = norm_forward(n, in, state);
    norm.output = norm.output.contiguous();  // as every activation but a view
    return norm;
  }
  ForwardOutput out;
  if (impl.output_aliases_input) {
    out.output = call_aten(*n.attrs.aten, in, state.seed);
    if (!out.output.is_alias_of(in[0]))
      throw std::logic_error(n.name + ": " + n.attrs.aten->name +
                             " was probed as a view of its input but is not one here");
    return out;
  }
  if (impl.name == "autograd") return autograd_node_forward(g, n, in, state.seed);
  if (impl.name == "mask") out.intermediate = pack_bits(in[0] > 0);
  if (impl.name == "lossy_4bit") out.intermediate = few_bit_gelu_codes(in[0]);
  // Activations other than views are contiguous, as the probes of views assume.
  out.output = own_storage(call_aten(*n.attrs.aten, in, state.seed), in).contiguous();
  return out;
}

std::vector<at::Tensor> aten_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& a, const NodeState& state) {
  if (impl.name == "rerun") return rerun_backward(g, n, a, state.seed);
  if (impl.name == "autograd") return autograd_node_backward(g, n, a);
  if (is_aten_norm(n)) return norm_backward(n, impl, a, state);
  std::vector<at::Tensor> grads(n.inputs.size());
  if (impl.name == "inputs") {  // a plain batched matmul (is_plain_batched_matmul)
    if (a.needs_grad[0]) grads[0] = at::matmul(a.grad_output, a.inputs[1].transpose(-2, -1));
    if (a.needs_grad[1]) grads[1] = at::matmul(a.inputs[0].transpose(-2, -1), a.grad_output);
    return grads;
  }
  if (a.needs_grad[0]) grads[0] = specialised_backward(g, n, impl, a);
  return grads;
}

}  // namespace monet::kernels
