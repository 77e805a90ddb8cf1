// Generic ATen operators (OpKind::kAten): forward through the dispatcher, backward by
// re-running the operator under autograd.
#include <torch/csrc/autograd/autograd.h>

#include "graph/aten_call.h"
#include "ops/op_kernels.h"

namespace monet::kernels {
namespace {

// A tensor that owns its storage: `t` itself, or a copy when it shares storage with any
// of `others` (a view of an input, or a gradient that is a view of the output gradient).
at::Tensor own_storage(at::Tensor t, const std::vector<at::Tensor>& others) {
  for (const at::Tensor& o : others)
    if (o.defined() && t.is_alias_of(o)) return t.clone(at::MemoryFormat::Contiguous);
  return t;
}

}  // namespace

at::Tensor aten_forward(const Node& n, const std::vector<at::Tensor>& in) {
  return own_storage(call_aten(*n.attrs.aten, in), in);
}

std::vector<at::Tensor> aten_backward(const Graph& g, const Node& n, const BackwardArgs& a) {
  std::vector<at::Tensor> leaves(n.inputs.size()), wanted;
  std::vector<size_t> positions;
  const at::TensorOptions options = a.grad_output.options();
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    at::Tensor x = a.inputs[k];
    // Inputs the derivative does not read: a zero-stride stand-in of their shape.
    if (!x.defined()) x = at::zeros({}, options).expand(g.value(n.inputs[k]).shape);
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
  const at::Tensor out = call_aten(*n.attrs.aten, leaves);
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

}  // namespace monet::kernels
