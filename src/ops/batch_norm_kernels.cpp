// Batch norm: input-activated and output-activated backward. The forward keeps the
// batch statistics in NodeState for the backward; a recomputation computes the same ones
// again from the same input and leaves the running statistics alone, so they are updated
// exactly once per iteration.
#include "ops/op_kernels.h"

namespace monet::kernels {

namespace {

// The node's input at `index`, or an undefined tensor where it has none (affine=False).
const at::Tensor& input_at(const std::vector<at::Tensor>& in, int index) {
  static const at::Tensor none;
  return index < 0 ? none : in[index];
}

}  // namespace

ForwardOutput batch_norm_forward(const Node& n, const std::vector<at::Tensor>& in, NodeState& state,
                                 bool training) {
  const auto& a = n.attrs;
  const BatchNormInputs k = batch_norm_inputs(in.size());
  const at::Tensor &x = in[0], &w = input_at(in, k.weight), &b = input_at(in, k.bias);
  const at::Tensor &mean = in[k.running_mean], &var = in[k.running_var];
  if (!training)
    return {std::get<0>(at::native_batch_norm(x, w, b, mean, var, false, a.momentum, a.eps)), {}};
  if (!state.computed) {
    auto r = at::native_batch_norm(x, w, b, mean, var, true, a.momentum, a.eps);
    state.save_mean = std::get<1>(r);
    state.save_invstd = std::get<2>(r);
    return {std::get<0>(r), {}};
  }
  // Recomputation: ATen's own kernel on the same input computes the same statistics and
  // output bit for bit (an expression of the saved statistics would round differently
  // from its fused multiply-adds). The saved statistics are released first and the new
  // ones kept in their place, so the call needs no more memory than the first forward;
  // no running statistics are passed, so those are updated once per iteration.
  state.save_mean.reset();
  state.save_invstd.reset();
  auto r = at::native_batch_norm(x, w, b, {}, {}, true, a.momentum, a.eps);
  state.save_mean = std::get<1>(r);
  state.save_invstd = std::get<2>(r);
  return {std::get<0>(r), {}};
}

std::vector<at::Tensor> batch_norm_backward(const Node& n, const BackwardImplInfo& impl,
                                            const BackwardArgs& args, NodeState& state) {
  const BatchNormInputs k = batch_norm_inputs(args.inputs.size());
  const at::Tensor &w = input_at(args.inputs, k.weight), &b = input_at(args.inputs, k.bias);
  // ATen's own backward in both: the output-activated one gives it the centred input
  // x - mean = (y - b) / (w * invstd) (y / invstd without affine parameters) with a zero
  // mean, so its reductions and formula round as the input-activated backward's (the bias
  // gradient bit for bit; the others differ only by the centred input's rounding).
  at::Tensor input = args.inputs[0], mean = state.save_mean;
  if (impl.name != "input") {
    const auto s = channel_shape(args.output);
    input = w.defined() ? (args.output - b.view(s)).div_((w * state.save_invstd).view(s))
                        : args.output.div(state.save_invstd.view(s));
    mean = at::zeros_like(mean);
  }
  const bool affine = k.weight >= 0;
  auto r = at::native_batch_norm_backward(
      args.grad_output, input, w, args.inputs[k.running_mean], args.inputs[k.running_var], mean,
      state.save_invstd, true, n.attrs.eps,
      {args.needs_grad[0], affine && args.needs_grad[k.weight], affine && args.needs_grad[k.bias]});
  std::vector<at::Tensor> grads(n.inputs.size());
  grads[0] = std::get<0>(r);
  if (affine) {
    grads[k.weight] = std::get<1>(r);
    grads[k.bias] = std::get<2>(r);
  }
  return grads;
}

}  // namespace monet::kernels
