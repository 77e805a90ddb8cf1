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

// A stand-in's type for an input of `v`'s, where the node's `output` has the gradient
// `grad`: floating ones in their own type where the run computes in the graph's types (the
// gradient is of the output's type: a bfloat16 model's float32 cast reads bfloat16), else
// in the gradient's precision (a float32 graph verified in float64); real or complex as
// the input is (real()'s input is complex, view_as_complex()'s real); others in their own
// type.
at::TensorOptions stand_in_options(const Value& v, const Value& output,
                                   const at::TensorOptions& grad) {
  const at::ScalarType g = grad.dtype().toScalarType();
  if (g == output.dtype) return grad.dtype(v.dtype);
  if (at::isComplexType(v.dtype)) return grad.dtype(c10::toComplexType(g));
  if (at::isFloatingType(v.dtype)) return grad.dtype(c10::toRealValueType(g));
  return grad.dtype(v.dtype);
}

// The re-running backward (any operator).
std::vector<at::Tensor> rerun_backward(const Graph& g, const Node& n, const BackwardArgs& a,
                                       uint64_t seed) {
  std::vector<at::Tensor> leaves(n.inputs.size()), wanted;
  std::vector<size_t> positions;
  const at::TensorOptions options = a.grad_output.options();
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    at::Tensor x = a.inputs[k];
    // Inputs the derivative does not read: a stand-in of their shape that holds no memory.
    if (!x.defined())
      x = zero_shape_stand_in(g.value(n.inputs[k]).shape,
                              stand_in_options(g.value(n.inputs[k]), g.value(n.output), options));
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
  // A result that none of the wanted inputs reaches (the target's half of
  // broadcast_tensors(prediction, target)) has no gradient for them: zeros, as below.
  const std::vector<at::Tensor> got =
      out.requires_grad()
          ? torch::autograd::grad({out}, wanted, {a.grad_output}, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*allow_unused=*/true)
          : std::vector<at::Tensor>(wanted.size());
  std::vector<at::Tensor> sources = leaves;
  sources.push_back(a.grad_output);
  for (size_t i = 0; i < positions.size(); ++i) {
    const size_t k = positions[i];
    grads[k] = got[i].defined() ? owned_gradient(got[i], sources) : at::zeros_like(leaves[k]);
  }
  return grads;
}

// The class dimension of cross-entropy's logits: 1, or the last where the logits are a
// view whose classes are adjacent in memory (a language model's [N, T, V] logits read as
// [N, V, T] through transpose(1, 2)), so that (log-)softmax over them copies nothing.
struct ClassesAt {
  at::Tensor logits;  // moved so that `dim` holds the classes
  int64_t dim = 1;
};
ClassesAt classes_at(const at::Tensor& logits) {
  if (logits.dim() > 2 && logits.stride(1) == 1 && !logits.is_contiguous())
    return {logits.movedim(1, -1), -1};
  return {logits, 1};
}

// d mean(cross_entropy(logits, target)) / d logits, times `go`: softmax over the class
// dimension, minus one at each target class, zero where the target is ignore_index,
// divided by the number of targets not ignored; one tensor of the logits' size (laid out
// as the logits).
at::Tensor cross_entropy_backward(const at::Tensor& go, const at::Tensor& logits,
                                  const at::Tensor& target, int64_t ignore_index) {
  const ClassesAt c = classes_at(logits);
  at::Tensor grad = at::softmax(c.logits, c.dim);
  const at::Tensor kept = target.ne(ignore_index).unsqueeze(c.dim);
  const at::Tensor classes = target.masked_fill(target.eq(ignore_index), 0).unsqueeze(c.dim);
  grad.scatter_add_(c.dim, classes, kept.to(grad.scalar_type()).neg());
  const at::Tensor scale = go / kept.sum().to(grad.scalar_type());
  grad.mul_(kept).mul_(scale);
  return c.dim == 1 ? grad : grad.movedim(-1, 1);
}

// mean(cross_entropy(logits, target)) with the classes where classes_at puts them: its
// log-probabilities take one tensor of the logits' size, where ATen's on a strided view
// first copies the logits.
at::Tensor cross_entropy_forward(const Node& n, const at::Tensor& logits,
                                 const at::Tensor& target) {
  const ClassesAt c = classes_at(logits);
  if (c.dim == 1) return call_aten(*n.attrs.aten, {logits, target});
  const int64_t classes = c.logits.size(-1);
  return at::cross_entropy_loss(c.logits.reshape({-1, classes}), target.reshape({-1}), {},
                                at::Reduction::Mean, n.attrs.aten->arguments.at(4).toInt());
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

at::Tensor owned_gradient(const at::Tensor& t, const std::vector<at::Tensor>& others) {
  return own_storage(t, others).contiguous();
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
  const at::Tensor result = is_plain_cross_entropy(g, n) ? cross_entropy_forward(n, in[0], in[1])
                                                         : call_aten(*n.attrs.aten, in, state.seed);
  out.output = own_storage(result, in).contiguous();
  if (n.attrs.aten->writes_buffer && !state.computed) state.buffer_write = out.output.clone();
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
