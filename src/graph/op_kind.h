// OpKind and OpAttrs: the forward operator vocabulary of the graph IR.
//
// Convolution, pooling and batch norm are dimension-generic: the rank of the input
// (4-D for images, 5-D for volumes) decides 2-D or 3-D. OpAttrs carries every attribute
// any operator uses; each operator reads only the fields that apply to it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/lossy_offer.h"

namespace monet {

struct AtenCall;       // graph/aten_call.h
struct AttentionSpec;  // graph/attention_spec.h

enum class OpKind {
  kConv,               // inputs: x, weight[, bias]
  kConvTranspose,      // inputs: x, weight[, bias]
  kBatchNorm,          // inputs: x, weight, bias, running_mean, running_var (affine=False:
                       // x, running_mean, running_var; batch_norm_inputs)
  kReLU,               // inputs: x
  kReLU6,              // inputs: x (hardtanh to [0, 6])
  kHardswish,          // inputs: x; x * relu6(x + 3) / 6
  kHardsigmoid,        // inputs: x; relu6(x + 3) / 6
  kSiLU,               // inputs: x; x * sigmoid(x)
  kSigmoid,            // inputs: x
  kMaxPool,            // inputs: x
  kAvgPool,            // inputs: x
  kAdaptiveAvgPool,    // inputs: x
  kAdd,                // inputs: a, b (same shape)
  kMul,                // inputs: a, b (broadcast to a's shape: squeeze-excitation scaling)
  kCat,                // inputs: x0, x1, ... (concatenated along attrs.dim)
  kFlatten,            // inputs: x (dims >= attrs.dim flattened)
  kSlice,              // inputs: x; attrs.length entries of dim attrs.dim from attrs.start
  kChannelShuffle,     // inputs: x [N, C, ...]; channels regrouped (attrs.groups: ShuffleNet)
  kLinear,             // inputs: x, weight[, bias]
  kDropout,            // inputs: x (probability attrs.p)
  kCrossEntropyLoss,   // inputs: logits [N, C, ...], target [N, ...] int64; mean reduction
  kBCEWithLogitsLoss,  // inputs: logits, target (same shape, float); mean reduction
  kMSELoss,            // inputs: output, target (same shape, float); mean squared error
  kSumLoss,            // inputs: output; its elements summed (no target)
  kAttention,          // inputs: q, k, v; softmax(scale q kᵀ, masked) v (attrs.attention)
  kAten,               // any other ATen operator: inputs and arguments in attrs.aten
};

/// Stable lower-case name ("conv", "batch_norm", ...), used in printing and plans.
const char* op_name(OpKind op);
/// Parses op_name() output; throws std::invalid_argument on an unknown name.
OpKind op_from_name(const std::string& name);
/// True for the operators that produce the scalar training loss.
bool is_loss(OpKind op);
/// True for convolution and transposed convolution (the operators with algorithm choices).
bool is_convolution(OpKind op);

/// Which elements dropout zeroes together.
enum class DropoutShape {
  kElement,  // each element on its own (nn.Dropout)
  kChannel,  // whole channels: one draw per sample and channel (nn.Dropout1d/2d/3d)
};

struct OpAttrs {
  std::vector<int64_t> kernel;          // conv / pool window, one entry per spatial dim
  std::vector<int64_t> stride;          // per spatial dim
  std::vector<int64_t> padding;         // per spatial dim
  std::vector<int64_t> dilation;        // per spatial dim (conv)
  std::vector<int64_t> output_padding;  // per spatial dim (transposed conv)
  std::vector<int64_t> output_size;     // adaptive pooling target size
  int64_t groups = 1;                   // conv groups / channel-shuffle groups
  int64_t dim = 1;                      // cat dimension / flatten start / slice dimension
  int64_t start = 0;                    // slice: first index along dim
  int64_t length = 0;                   // slice: entries along dim
  double eps = 1e-5;                    // batch norm
  double momentum = 0.1;                // batch norm running-stat update factor
  double p = 0.0;                       // dropout probability (dropout, attention)
  DropoutShape dropout_shape = DropoutShape::kElement;  // dropout
  bool ceil_mode = false;                               // pooling
  bool count_include_pad = true;                        // average pooling
  /// The reference framework (torchvision) runs this op in place on its first input.
  /// The autograd baseline honours it; planners may choose otherwise.
  bool inplace = false;
  /// kAten: the operator, its constant arguments and what its derivative keeps (shared:
  /// copies of a graph share the call, which never changes once imported).
  std::shared_ptr<const AtenCall> aten;
  /// kAttention: its scale, mask and blocking (shared, as `aten`).
  std::shared_ptr<const AttentionSpec> attention;
  /// kAten GELU: whether its lossy backward is offered (ImportOptions::lossy).
  LossyOffer lossy = LossyOffer::kExcluded;
};

/// Where a kBatchNorm node's inputs are: x at 0, then weight and bias (affine) or none
/// (affine=False, -1), then the running mean and variance.
struct BatchNormInputs {
  int weight = -1, bias = -1, running_mean = 1, running_var = 2;
};
BatchNormInputs batch_norm_inputs(size_t input_count);

/// The attributes relevant to `op`, as "key=value" pairs in a fixed order. Used for
/// printing and for the graph fingerprint, so it must be deterministic.
std::string describe_attrs(OpKind op, const OpAttrs& attrs);

}  // namespace monet
