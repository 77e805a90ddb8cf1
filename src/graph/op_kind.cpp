#include "graph/op_kind.h"

#include "graph/aten_call.h"
#include "graph/attention_spec.h"

#include <array>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace monet {
namespace {

constexpr std::array<std::pair<OpKind, const char*>, 26> kNames = {{
    {OpKind::kAten, "aten"},
    {OpKind::kConv, "conv"},
    {OpKind::kConvTranspose, "conv_transpose"},
    {OpKind::kBatchNorm, "batch_norm"},
    {OpKind::kReLU, "relu"},
    {OpKind::kReLU6, "relu6"},
    {OpKind::kHardswish, "hardswish"},
    {OpKind::kHardsigmoid, "hardsigmoid"},
    {OpKind::kSiLU, "silu"},
    {OpKind::kSigmoid, "sigmoid"},
    {OpKind::kMaxPool, "max_pool"},
    {OpKind::kAvgPool, "avg_pool"},
    {OpKind::kAdaptiveAvgPool, "adaptive_avg_pool"},
    {OpKind::kAdd, "add"},
    {OpKind::kMul, "mul"},
    {OpKind::kCat, "cat"},
    {OpKind::kFlatten, "flatten"},
    {OpKind::kSlice, "slice"},
    {OpKind::kChannelShuffle, "channel_shuffle"},
    {OpKind::kLinear, "linear"},
    {OpKind::kDropout, "dropout"},
    {OpKind::kCrossEntropyLoss, "cross_entropy_loss"},
    {OpKind::kBCEWithLogitsLoss, "bce_with_logits_loss"},
    {OpKind::kMSELoss, "mse_loss"},
    {OpKind::kSumLoss, "sum_loss"},
    {OpKind::kAttention, "attention"},
}};

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

const char* op_name(OpKind op) {
  for (const auto& [kind, name] : kNames)
    if (kind == op) return name;
  throw std::logic_error("op_name: operator kind without a name");
}

OpKind op_from_name(const std::string& name) {
  for (const auto& [kind, n] : kNames)
    if (name == n) return kind;
  throw std::invalid_argument("unknown operator '" + name + "'");
}

bool is_loss(OpKind op) {
  return op == OpKind::kCrossEntropyLoss || op == OpKind::kBCEWithLogitsLoss ||
         op == OpKind::kMSELoss || op == OpKind::kSumLoss;
}

bool is_convolution(OpKind op) { return op == OpKind::kConv || op == OpKind::kConvTranspose; }

BatchNormInputs batch_norm_inputs(size_t input_count) {
  if (input_count == 3) return {};
  return {1, 2, 3, 4};
}

std::string describe_attrs(OpKind op, const OpAttrs& a) {
  std::ostringstream s;
  switch (op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      s << "kernel=" << list(a.kernel) << " stride=" << list(a.stride)
        << " padding=" << list(a.padding) << " dilation=" << list(a.dilation);
      if (op == OpKind::kConvTranspose) s << " output_padding=" << list(a.output_padding);
      s << " groups=" << a.groups;
      break;
    case OpKind::kBatchNorm:
      s << "eps=" << a.eps << " momentum=" << a.momentum;
      break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      s << "kernel=" << list(a.kernel) << " stride=" << list(a.stride)
        << " padding=" << list(a.padding) << " ceil_mode=" << a.ceil_mode;
      if (op == OpKind::kAvgPool) s << " count_include_pad=" << a.count_include_pad;
      break;
    case OpKind::kAdaptiveAvgPool:
      s << "output_size=" << list(a.output_size);
      break;
    case OpKind::kCat:
    case OpKind::kFlatten:
      s << "dim=" << a.dim;
      break;
    case OpKind::kSlice:
      s << "dim=" << a.dim << " start=" << a.start << " length=" << a.length;
      break;
    case OpKind::kChannelShuffle:
      s << "groups=" << a.groups;
      break;
    case OpKind::kDropout:
      s << "p=" << a.p;
      if (a.dropout_shape == DropoutShape::kChannel) s << " channel-wise";
      break;
    case OpKind::kAten:
      if (a.aten) s << describe_aten_call(*a.aten);
      break;
    case OpKind::kAttention:
      if (a.attention) s << describe_attention(*a.attention) << " p=" << a.p;
      break;
    default:
      break;
  }
  if (a.inplace) s << (s.tellp() > 0 ? " " : "") << "inplace";
  if (a.lossy == LossyOffer::kOffered) s << (s.tellp() > 0 ? " " : "") << "lossy";
  return s.str();
}

}  // namespace monet
