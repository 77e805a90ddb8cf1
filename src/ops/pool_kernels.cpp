// Max pooling (backward from int64 argmax indices, from 8-bit window offsets, or by
// recomputing the argmax from the input) and average pooling.
#include "ops/op_kernels.h"
#include "ops/shape_stand_in.h"

namespace monet::kernels {
namespace {

std::vector<int64_t> stride_of(const Node& n) {
  return n.attrs.stride.empty() ? n.attrs.kernel : n.attrs.stride;
}

std::tuple<at::Tensor, at::Tensor> max_pool_with_indices(const Node& n, const at::Tensor& x) {
  const auto& a = n.attrs;
  const std::vector<int64_t> dilation(a.kernel.size(), 1);
  return x.dim() == 5 ? at::max_pool3d_with_indices(x, a.kernel, stride_of(n), a.padding, dilation,
                                                    a.ceil_mode)
                      : at::max_pool2d_with_indices(x, a.kernel, stride_of(n), a.padding, dilation,
                                                    a.ceil_mode);
}

// Start coordinate of each output window along spatial dim d, shaped to broadcast
// against an output-shaped tensor.
at::Tensor window_start(const Node& n, at::IntArrayRef out_shape, size_t d) {
  std::vector<int64_t> view(out_shape.size(), 1);
  view[2 + d] = out_shape[2 + d];
  return (at::arange(out_shape[2 + d], at::kLong) * stride_of(n)[d] - n.attrs.padding[d])
      .view(view);
}

// Flat input-plane indices (PyTorch's argmax format) -> offsets inside each window.
at::Tensor indices_to_offsets(const Node& n, const at::Tensor& idx, at::IntArrayRef in_shape) {
  const size_t dims = n.attrs.kernel.size();
  at::Tensor rem = idx, offset = at::zeros_like(idx);
  int64_t kstride = 1;
  for (size_t d = dims; d-- > 0;) {
    const int64_t size = in_shape[2 + d];
    const at::Tensor coord = rem.remainder(size);
    rem = rem.div(size, "floor");
    offset.add_((coord - window_start(n, idx.sizes(), d)) * kstride);
    kstride *= n.attrs.kernel[d];
  }
  return offset.to(at::kByte);
}

at::Tensor offsets_to_indices(const Node& n, const at::Tensor& offsets, at::IntArrayRef in_shape) {
  const size_t dims = n.attrs.kernel.size();
  at::Tensor rem = offsets.to(at::kLong), idx = at::zeros_like(rem);
  int64_t istride = 1;
  for (size_t d = dims; d-- > 0;) {
    const int64_t k = n.attrs.kernel[d];
    const at::Tensor coord = window_start(n, offsets.sizes(), d) + rem.remainder(k);
    rem = rem.div(k, "floor");
    idx.add_(coord * istride);
    istride *= in_shape[2 + d];
  }
  return idx;
}

// Gradient of max pooling: scatter-add the output gradient at the argmax positions.
at::Tensor scatter_grad(const at::Tensor& go, const at::Tensor& idx, at::IntArrayRef in_shape) {
  int64_t plane = 1;
  for (size_t i = 2; i < in_shape.size(); ++i) plane *= in_shape[i];
  const int64_t n = in_shape[0], c = in_shape[1];
  return at::zeros({n, c, plane}, go.options())
      .scatter_add_(2, idx.reshape({n, c, -1}), go.reshape({n, c, -1}))
      .view(in_shape);
}

}  // namespace

ForwardOutput pool_forward(const Node& n, const std::string& impl,
                           const std::vector<at::Tensor>& in) {
  const auto& a = n.attrs;
  const at::Tensor& x = in[0];
  switch (n.op) {
    case OpKind::kMaxPool: {
      if (impl == "plain") {
        const std::vector<int64_t> dilation(a.kernel.size(), 1);
        return {x.dim() == 5
                    ? at::max_pool3d(x, a.kernel, stride_of(n), a.padding, dilation, a.ceil_mode)
                    : at::max_pool2d(x, a.kernel, stride_of(n), a.padding, dilation, a.ceil_mode),
                {}};
      }
      auto [y, idx] = max_pool_with_indices(n, x);
      if (impl == "argmax8") return {y, indices_to_offsets(n, idx, x.sizes())};
      return {y, idx};
    }
    case OpKind::kAvgPool:
      return {x.dim() == 5 ? at::avg_pool3d(x, a.kernel, stride_of(n), a.padding, a.ceil_mode,
                                            a.count_include_pad)
                           : at::avg_pool2d(x, a.kernel, stride_of(n), a.padding, a.ceil_mode,
                                            a.count_include_pad),
              {}};
    case OpKind::kAdaptiveAvgPool:
      return {x.dim() == 5 ? at::adaptive_avg_pool3d(x, a.output_size)
                           : at::adaptive_avg_pool2d(x, a.output_size),
              {}};
    default:
      throw std::logic_error("pool_forward: not a pooling operator");
  }
}

std::vector<at::Tensor> pool_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& args) {
  const auto& a = n.attrs;
  std::vector<at::Tensor> grads(1);
  if (!args.needs_grad[0]) return grads;
  const auto& in_shape = g.value(n.inputs[0]).shape;
  const at::Tensor& go = args.grad_output;
  if (n.op == OpKind::kMaxPool) {
    at::Tensor idx;
    if (impl.name == "indices")
      idx = args.intermediate;
    else if (impl.name == "argmax8")
      idx = offsets_to_indices(n, args.intermediate, in_shape);
    else
      idx = std::get<1>(max_pool_with_indices(n, args.inputs[0]));
    grads[0] = scatter_grad(go, idx, in_shape);
    return grads;
  }
  // Average pooling reads the input only for its shape.
  const at::Tensor shape_only = zero_shape_stand_in(in_shape, go.options());
  if (n.op == OpKind::kAvgPool) {
    grads[0] = in_shape.size() == 5
                   ? at::avg_pool3d_backward(go, shape_only, a.kernel, stride_of(n), a.padding,
                                             a.ceil_mode, a.count_include_pad, c10::nullopt)
                   : at::avg_pool2d_backward(go, shape_only, a.kernel, stride_of(n), a.padding,
                                             a.ceil_mode, a.count_include_pad, c10::nullopt);
  } else {
    grads[0] = in_shape.size() == 5 ? at::_adaptive_avg_pool3d_backward(go, shape_only)
                                    : at::_adaptive_avg_pool2d_backward(go, shape_only);
  }
  return grads;
}

}  // namespace monet::kernels
