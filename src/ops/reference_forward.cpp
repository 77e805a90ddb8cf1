#include "ops/reference_forward.h"

#include "ops/op_kernels.h"

namespace monet {
namespace {

at::Tensor optional_input(const std::vector<at::Tensor>& in, size_t i) {
  return in.size() > i ? in[i] : at::Tensor();
}

at::Tensor pool(const Node& n, const at::Tensor& x) {
  const auto& a = n.attrs;
  const bool volumetric = x.dim() == 5;
  std::vector<int64_t> stride = a.stride.empty() ? a.kernel : a.stride;
  if (n.op == OpKind::kMaxPool) {
    std::vector<int64_t> dilation(a.kernel.size(), 1);
    return volumetric ? at::max_pool3d(x, a.kernel, stride, a.padding, dilation, a.ceil_mode)
                      : at::max_pool2d(x, a.kernel, stride, a.padding, dilation, a.ceil_mode);
  }
  return volumetric
             ? at::avg_pool3d(x, a.kernel, stride, a.padding, a.ceil_mode, a.count_include_pad)
             : at::avg_pool2d(x, a.kernel, stride, a.padding, a.ceil_mode, a.count_include_pad);
}

}  // namespace

at::Tensor reference_forward(const Node& n, const std::vector<at::Tensor>& in, bool training,
                             uint64_t iteration_seed) {
  const auto& a = n.attrs;
  switch (n.op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose: {
      const bool transposed = n.op == OpKind::kConvTranspose;
      std::vector<int64_t> output_padding =
          transposed ? a.output_padding : std::vector<int64_t>(a.kernel.size(), 0);
      return at::convolution(in[0], in[1], optional_input(in, 2), a.stride, a.padding, a.dilation,
                             transposed, output_padding, a.groups);
    }
    case OpKind::kBatchNorm:
      return at::batch_norm(in[0], in[1], in[2], in[3], in[4], training, a.momentum, a.eps,
                            /*cudnn_enabled=*/true);
    case OpKind::kReLU:
      return a.inplace ? in[0].relu_() : at::relu(in[0]);
    case OpKind::kReLU6:
      if (a.inplace) {
        at::Tensor x = in[0];  // shares storage; hardtanh_ takes a non-const handle
        return at::hardtanh_(x, 0.0, 6.0);
      }
      return at::hardtanh(in[0], 0.0, 6.0);
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      return pool(n, in[0]);
    case OpKind::kAdaptiveAvgPool:
      return in[0].dim() == 5 ? at::adaptive_avg_pool3d(in[0], a.output_size)
                              : at::adaptive_avg_pool2d(in[0], a.output_size);
    case OpKind::kAdd:
      return a.inplace ? in[0].add_(in[1]) : at::add(in[0], in[1]);
    case OpKind::kCat:
      return at::cat(in, a.dim);
    case OpKind::kFlatten:
      return at::flatten(in[0], a.dim);
    case OpKind::kLinear:
      return at::linear(in[0], in[1], optional_input(in, 2));
    case OpKind::kDropout:
      if (!training || a.p == 0) return in[0].clone();
      return in[0] * dropout_noise(in[0].sizes(), a.p, node_seed(iteration_seed, n.id));
    case OpKind::kCrossEntropyLoss:
      return at::cross_entropy_loss(in[0], in[1], {}, at::Reduction::Mean, -100, 0.0);
    case OpKind::kBCEWithLogitsLoss:
      return at::binary_cross_entropy_with_logits(in[0], in[1], {}, {}, at::Reduction::Mean);
  }
  throw std::logic_error(std::string("reference_forward: no forward for ") + op_name(n.op));
}

}  // namespace monet
