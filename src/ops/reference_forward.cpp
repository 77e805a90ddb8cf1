#include "ops/reference_forward.h"

#include "graph/aten_call.h"
#include "ops/op_kernels.h"

namespace monet {
namespace {

// A generic call. A view the importer probed on a contiguous input (the executor's
// slices are copies) may be impossible on the reference's slice, a strided view as
// torch.chunk gives: then the view is taken of a contiguous copy, as the traced code
// did (nn.MultiheadAttention's `.contiguous()` before its `view`, folded at import).
at::Tensor reference_aten(const AtenCall& call, const std::vector<at::Tensor>& in, uint64_t seed) {
  if (!call.output_aliases_input) return call_aten(call, in, seed);
  try {
    return call_aten(call, in, seed);
  } catch (const c10::Error&) {
    std::vector<at::Tensor> dense = in;
    dense[0] = dense[0].contiguous();
    return call_aten(call, dense, seed);
  }
}

}  // namespace

at::Tensor reference_forward(const Node& n, const std::vector<at::Tensor>& in, bool training,
                             uint64_t iteration_seed) {
  const auto& a = n.attrs;
  switch (n.op) {
    // Convolution and pooling: the kernels' default / plain forwards are these very
    // differentiable ATen calls.
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      return kernels::conv_forward(n, "default", in).output;
    case OpKind::kBatchNorm: {
      const BatchNormInputs k = batch_norm_inputs(in.size());
      const at::Tensor none;
      return at::batch_norm(in[0], k.weight < 0 ? none : in[k.weight],
                            k.bias < 0 ? none : in[k.bias], in[k.running_mean], in[k.running_var],
                            training, a.momentum, a.eps,
                            /*cudnn_enabled=*/true);
    }
    case OpKind::kReLU:
      return a.inplace ? in[0].relu_() : at::relu(in[0]);
    case OpKind::kReLU6:
      if (a.inplace) {
        at::Tensor x = in[0];  // shares storage; hardtanh_ takes a non-const handle
        return at::hardtanh_(x, 0.0, 6.0);
      }
      return at::hardtanh(in[0], 0.0, 6.0);
    // Smooth activations: the kernel's forward is the differentiable ATen call.
    case OpKind::kHardswish:
    case OpKind::kHardsigmoid:
    case OpKind::kSiLU:
    case OpKind::kSigmoid:
      return kernels::smooth_activation_forward(n, in[0]);
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
    case OpKind::kAdaptiveAvgPool:
      return kernels::pool_forward(n, "plain", in).output;
    case OpKind::kAdd:
      return a.inplace ? in[0].add_(in[1]) : at::add(in[0], in[1]);
    case OpKind::kMul:
      return at::mul(in[0], in[1]);
    case OpKind::kCat:
      return at::cat(in, a.dim);
    case OpKind::kFlatten:
      return at::flatten(in[0], a.dim);
    case OpKind::kSlice:
      return in[0].narrow(a.dim, a.start, a.length);  // a view, as torch.chunk gives
    case OpKind::kChannelShuffle:
      return kernels::channel_shuffle(in[0], a.groups);
    case OpKind::kLinear:
      return at::linear(in[0], in[1], in.size() > 2 ? in[2] : at::Tensor());
    case OpKind::kDropout:
      if (!training || a.p == 0) return in[0].clone();
      return in[0] * dropout_noise(dropout_noise_shape(n, in[0].sizes().vec()), a.p,
                                   node_seed(iteration_seed, n));
    case OpKind::kCrossEntropyLoss:
      return at::cross_entropy_loss(in[0], in[1], {}, at::Reduction::Mean, -100, 0.0);
    case OpKind::kBCEWithLogitsLoss:
      return at::binary_cross_entropy_with_logits(in[0], in[1], {}, {}, at::Reduction::Mean);
    case OpKind::kMSELoss:
      return at::mse_loss(in[0], in[1], at::Reduction::Mean);
    case OpKind::kSumLoss:
      return in[0].sum();
    case OpKind::kAten:
      return reference_aten(*a.aten, in, node_seed(iteration_seed, n));
    case OpKind::kAttention:
      return kernels::attention_reference(n, in, training, node_seed(iteration_seed, n));
  }
  throw std::logic_error(std::string("reference_forward: no forward for ") + op_name(n.op));
}

}  // namespace monet
