// Layer norm and group norm as generic operators with specialised implementations
// (aten_impls.h): the first forward of an iteration keeps the statistics as node state,
// recomputations reuse them, and the backward reads the input (ATen's native backward) or
// the output (x_hat = (y - bias) / weight, then the same native backward on x_hat with
// mean 0 and rstd 1, scaled by rstd).
#include "graph/aten_call.h"
#include "ops/aten_impls.h"
#include "ops/op_kernels.h"

namespace monet::kernels {
namespace {

struct Norm {
  bool layer = true;                // layer norm, else group norm
  std::vector<int64_t> normalized;  // layer norm: the normalised trailing shape
  int64_t groups = 1;               // group norm
  double eps = 1e-5;
  at::Tensor weight, bias;                 // undefined without affine parameters
  int weight_input = -1, bias_input = -1;  // positions in node.inputs
};

Norm norm_of(const Node& n, const std::vector<at::Tensor>& in) {
  const AtenCall& c = *n.attrs.aten;
  Norm m;
  m.layer = c.name == "aten::layer_norm";
  if (m.layer)
    m.normalized = c.arguments.at(1).toIntVector();
  else
    m.groups = c.arguments.at(1).toInt();
  m.eps = c.arguments.at(4).toDouble();
  for (size_t k = 0; k < c.tensor_slots.size(); ++k) {
    if (c.tensor_slots[k] == 2) m.weight = in[k], m.weight_input = static_cast<int>(k);
    if (c.tensor_slots[k] == 3) m.bias = in[k], m.bias_input = static_cast<int>(k);
  }
  return m;
}

// Group norm's sizes: batch, channels, elements per channel.
std::array<int64_t, 3> group_sizes(const at::Tensor& x) {
  return {x.size(0), x.size(1), x.numel() / (x.size(0) * x.size(1))};
}

// y = (x - mean) * rstd, with the statistics of the first forward.
at::Tensor normalise(const Norm& m, const at::Tensor& x, const NodeState& s) {
  if (m.layer) return (x - s.save_mean).mul_(s.save_invstd);
  const auto [n, c, hw] = group_sizes(x);
  return (x.reshape({n, m.groups, -1}) - s.save_mean.view({n, m.groups, 1}))
      .mul_(s.save_invstd.view({n, m.groups, 1}))
      .view(x.sizes());
}

// The shape that broadcasts the affine parameters over x.
std::vector<int64_t> parameter_view(const Norm& m, const at::Tensor& x) {
  return m.layer ? m.normalized : channel_shape(x);
}

at::Tensor affine(const Norm& m, at::Tensor y) {
  const auto view = parameter_view(m, y);
  if (m.weight.defined()) y.mul_(m.weight.view(view));
  if (m.bias.defined()) y.add_(m.bias.view(view));
  return y;
}

}  // namespace

ForwardOutput norm_forward(const Node& n, const std::vector<at::Tensor>& in, NodeState& state) {
  const Norm m = norm_of(n, in);
  const at::Tensor& x = in[0];
  if (state.computed) return {affine(m, normalise(m, x, state)), {}};
  std::tuple<at::Tensor, at::Tensor, at::Tensor> r;
  if (m.layer) {
    r = at::native_layer_norm(x, m.normalized, m.weight, m.bias, m.eps);
  } else {
    // ATen's kernel takes a contiguous input (torch.group_norm makes it one first).
    const auto [b, c, hw] = group_sizes(x);
    r = at::native_group_norm(x.contiguous(), m.weight, m.bias, b, c, hw, m.groups, m.eps);
  }
  state.save_mean = std::get<1>(r);
  state.save_invstd = std::get<2>(r);
  return {std::get<0>(r), {}};
}

std::vector<at::Tensor> norm_backward(const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& a, const NodeState& state) {
  const Norm m = norm_of(n, a.inputs);
  const bool from_output = impl.name == "output";
  const auto needs = [&](int k) { return k >= 0 && a.needs_grad[k]; };
  const std::array<bool, 3> mask = {static_cast<bool>(a.needs_grad[0]), needs(m.weight_input),
                                    needs(m.bias_input)};
  // From the output: x_hat, with mean 0 and rstd 1 (the input gradient is then rstd times
  // what the native backward returns).
  at::Tensor x = a.inputs[0], mean = state.save_mean, rstd = state.save_invstd;
  if (from_output) {
    const auto view = parameter_view(m, a.output);
    x = m.bias.defined() ? a.output - m.bias.view(view) : a.output.clone();
    if (m.weight.defined()) x.div_(m.weight.view(view));
    mean = at::zeros_like(state.save_mean);
    rstd = at::ones_like(state.save_invstd);
  }
  std::tuple<at::Tensor, at::Tensor, at::Tensor> r;
  if (m.layer) {
    r = at::native_layer_norm_backward(a.grad_output, x, m.normalized, mean, rstd, m.weight, m.bias,
                                       mask);
  } else {
    const auto [b, c, hw] = group_sizes(x);
    r = at::native_group_norm_backward(a.grad_output.contiguous(), x.contiguous(), mean, rstd,
                                       m.weight, b, c, hw, m.groups, mask);
  }
  std::vector<at::Tensor> grads(n.inputs.size());
  grads[0] = std::get<0>(r);
  if (from_output && grads[0].defined()) {
    if (m.layer) {
      grads[0].mul_(state.save_invstd);
    } else {
      const auto [b, c, hw] = group_sizes(grads[0]);
      grads[0].view({b, m.groups, -1}).mul_(state.save_invstd.view({b, m.groups, 1}));
    }
  }
  if (m.weight_input >= 0) grads[m.weight_input] = std::get<1>(r);
  if (m.bias_input >= 0) grads[m.bias_input] = std::get<2>(r);
  return grads;
}

}  // namespace monet::kernels
