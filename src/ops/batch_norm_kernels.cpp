// Batch norm: input-activated and output-activated backward. The forward keeps the
// batch statistics in NodeState; a recomputation reuses them and leaves the running
// statistics alone, so they are updated exactly once per iteration.
#include "ops/op_kernels.h"

namespace monet::kernels {
namespace {

std::vector<int64_t> reduce_dims(const at::Tensor& x) {
  std::vector<int64_t> d = {0};
  for (int64_t i = 2; i < x.dim(); ++i) d.push_back(i);
  return d;
}

}  // namespace

ForwardOutput batch_norm_forward(const Node& n, const std::vector<at::Tensor>& in, NodeState& state,
                                 bool training) {
  const auto& a = n.attrs;
  const at::Tensor &x = in[0], &w = in[1], &b = in[2];
  if (!training)
    return {std::get<0>(at::native_batch_norm(x, w, b, in[3], in[4], false, a.momentum, a.eps)),
            {}};
  if (!state.computed) {
    auto r = at::native_batch_norm(x, w, b, in[3], in[4], true, a.momentum, a.eps);
    state.save_mean = std::get<1>(r);
    state.save_invstd = std::get<2>(r);
    return {std::get<0>(r), {}};
  }
  // Recomputation: the same normalisation with the statistics of the first forward.
  const auto s = channel_shape(x);
  const at::Tensor scale = (state.save_invstd * w).view(s);
  const at::Tensor shift = (b - state.save_mean * state.save_invstd * w).view(s);
  return {at::addcmul(shift, x, scale), {}};
}

std::vector<at::Tensor> batch_norm_backward(const Node& n, const BackwardImplInfo& impl,
                                            const BackwardArgs& args, NodeState& state) {
  const auto& a = n.attrs;
  const at::Tensor& g = args.grad_output;
  const at::Tensor &w = args.inputs[1], &b = args.inputs[2];
  std::vector<at::Tensor> grads(n.inputs.size());
  const bool nx = args.needs_grad[0], nw = args.needs_grad[1], nb = args.needs_grad[2];
  if (impl.name == "input") {
    auto r = at::native_batch_norm_backward(g, args.inputs[0], w, args.inputs[3], args.inputs[4],
                                            state.save_mean, state.save_invstd, true, a.eps,
                                            {nx, nw, nb});
    grads[0] = std::get<0>(r);
    grads[1] = std::get<1>(r);
    grads[2] = std::get<2>(r);
    return grads;
  }
  // Output-activated: x_hat = (y - b) / w, then the usual batch-norm backward formula.
  const at::Tensor& y = args.output;
  const auto s = channel_shape(y);
  const auto dims = reduce_dims(y);
  const at::Tensor x_hat = (y - b.view(s)).div_(w.view(s));
  const at::Tensor sum_g = g.sum(dims);
  const at::Tensor sum_gx = (g * x_hat).sum(dims);
  if (nx) {
    const double m = static_cast<double>(y.numel() / y.size(1));
    const at::Tensor k = (w * state.save_invstd).view(s);
    grads[0] = (g - (sum_g / m).view(s)).sub_(x_hat * (sum_gx / m).view(s)).mul_(k);
  }
  if (nw) grads[1] = sum_gx;
  if (nb) grads[2] = sum_g;
  return grads;
}

}  // namespace monet::kernels
