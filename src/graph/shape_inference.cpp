#include "graph/shape_inference.h"

#include "graph/aten_call.h"
#include "graph/attention_spec.h"
#include "graph/graph.h"

namespace monet {
namespace {

[[noreturn]] void fail(const std::string& node, const std::string& what) {
  throw GraphError("node '" + node + "': " + what);
}

void expect_arity(const std::string& node, const std::vector<const Value*>& in, size_t lo,
                  size_t hi) {
  if (in.size() < lo || in.size() > hi)
    fail(node, "expects " + std::to_string(lo) + (hi != lo ? "-" + std::to_string(hi) : "") +
                   " inputs, got " + std::to_string(in.size()));
}

void expect_rank(const std::string& node, const Value& v, size_t lo, size_t hi) {
  if (v.shape.size() < lo || v.shape.size() > hi)
    fail(node, "input '" + v.name + "' has shape " + shape_string(v.shape) + ", expected rank " +
                   std::to_string(lo) + (hi != lo ? "-" + std::to_string(hi) : ""));
}

// Per-spatial-dimension attribute with broadcasting of a single entry.
int64_t at_dim(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v.at(i);
}

void check_spatial_attrs(const std::string& node, const OpAttrs& a, size_t spatial) {
  for (const auto* v : {&a.kernel, &a.stride, &a.padding, &a.dilation, &a.output_padding})
    if (v->size() > 1 && v->size() != spatial)
      fail(node, "attribute lists must have one entry per spatial dimension (" +
                     std::to_string(spatial) + ")");
}

// Floor division (C++ truncates towards zero; PyTorch's shape formulas floor).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = floor_div(ceil_mode ? span + s - 1 : span, s) + 1;
  // PyTorch: the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

std::vector<int64_t> conv_shape(const std::string& node, const std::vector<const Value*>& in,
                                const OpAttrs& a, bool transposed) {
  expect_arity(node, in, 2, 3);
  const Value& x = *in[0];
  const Value& w = *in[1];
  expect_rank(node, x, 3, 5);
  const size_t spatial = x.shape.size() - 2;
  if (w.shape.size() != x.shape.size())
    fail(node, "weight '" + w.name + "' has shape " + shape_string(w.shape) +
                   ", which does not match input rank " + std::to_string(x.shape.size()));
  check_spatial_attrs(node, a, spatial);
  const int64_t g = a.groups;
  if (g < 1) fail(node, "groups must be positive");
  const int64_t in_ch = x.shape[1];
  const int64_t w_in = transposed ? w.shape[0] : w.shape[1] * g;
  const int64_t out_ch = transposed ? w.shape[1] * g : w.shape[0];
  if (in_ch != w_in)
    fail(node, "input '" + x.name + "' has " + std::to_string(in_ch) + " channels but weight '" +
                   w.name + "' " + shape_string(w.shape) + " expects " + std::to_string(w_in) +
                   " (groups=" + std::to_string(g) + ")");
  if (in_ch % g != 0 || out_ch % g != 0) fail(node, "channels are not divisible by groups");
  if (in.size() == 3 && (in[2]->shape.size() != 1 || in[2]->shape[0] != out_ch))
    fail(node, "bias '" + in[2]->name + "' has shape " + shape_string(in[2]->shape) +
                   ", expected [" + std::to_string(out_ch) + "]");
  std::vector<int64_t> out = {x.shape[0], out_ch};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t k = w.shape[2 + i], s = at_dim(a.stride, i, 1), p = at_dim(a.padding, i, 0),
                  d = at_dim(a.dilation, i, 1), op = at_dim(a.output_padding, i, 0);
    const int64_t n = x.shape[2 + i];
    const int64_t o = transposed ? (n - 1) * s - 2 * p + d * (k - 1) + op + 1
                                 : floor_div(n + 2 * p - d * (k - 1) - 1, s) + 1;
    if (o < 1)
      fail(node, "output spatial size would be " + std::to_string(o) + " for input " +
                     shape_string(x.shape) + "; the input is too small");
    out.push_back(o);
  }
  return out;
}

std::vector<int64_t> pool_shape(const std::string& node, const std::vector<const Value*>& in,
                                const OpAttrs& a) {
  expect_arity(node, in, 1, 1);
  const Value& x = *in[0];
  expect_rank(node, x, 3, 5);
  const size_t spatial = x.shape.size() - 2;
  check_spatial_attrs(node, a, spatial);
  if (a.kernel.empty()) fail(node, "pooling needs a kernel size");
  std::vector<int64_t> out = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t k = at_dim(a.kernel, i, 1);
    const int64_t s = at_dim(a.stride, i, k), p = at_dim(a.padding, i, 0);
    if (2 * p > k) fail(node, "padding must be at most half the kernel size");
    const int64_t o = pooled_size(x.shape[2 + i], k, s, p, 1, a.ceil_mode);
    if (o < 1)
      fail(node, "output spatial size would be " + std::to_string(o) + " for input " +
                     shape_string(x.shape) + "; the input is too small");
    out.push_back(o);
  }
  return out;
}

// q [..., T, D], k [..., S, D], v [..., S, Dv] with equal batch dimensions: [..., T, Dv].
std::vector<int64_t> attention_shape(const std::string& node, const std::vector<const Value*>& in,
                                     const OpAttrs& a) {
  expect_arity(node, in, 3, 3);
  if (!a.attention) fail(node, "an attention node without its specification");
  const Value &q = *in[0], &k = *in[1], &v = *in[2];
  for (const Value* x : in) expect_rank(node, *x, 3, 8);
  const size_t r = q.shape.size();
  auto batch = [&](const Value& x) {
    return std::vector<int64_t>(x.shape.begin(), x.shape.end() - 2);
  };
  if (k.shape.size() != r || v.shape.size() != r || batch(k) != batch(q) || batch(v) != batch(q) ||
      k.shape[r - 1] != q.shape[r - 1] || v.shape[r - 2] != k.shape[r - 2])
    fail(node, "q " + shape_string(q.shape) + ", k " + shape_string(k.shape) + " and v " +
                   shape_string(v.shape) + " do not fit attention ([..., T, D], [..., S, D], " +
                   "[..., S, Dv])");
  if (a.attention->block_rows < 1) fail(node, "attention block_rows must be positive");
  std::vector<int64_t> out = q.shape;
  out[r - 1] = v.shape[r - 1];
  return out;
}

}  // namespace

std::vector<int64_t> cross_entropy_target_shape(const std::vector<int64_t>& logits) {
  std::vector<int64_t> target = logits;
  target.erase(target.begin() + 1);
  return target;
}

bool broadcasts_to(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  bool ok = from.size() <= to.size();
  for (size_t j = 0; ok && j < from.size(); ++j) {
    const int64_t d = from[from.size() - 1 - j];
    ok = d == 1 || d == to[to.size() - 1 - j];
  }
  return ok;
}

namespace {

std::vector<int64_t> batch_norm_shape(const std::string& node, const std::vector<const Value*>& in,
                                      const OpAttrs& a) {
  expect_arity(node, in, 3, 5);
  if (in.size() == 4)
    fail(node,
         "batch norm takes x, weight, bias and the running statistics, or x and "
         "the running statistics (affine=False); 4 inputs given");
  expect_rank(node, *in[0], 2, 5);
  const int64_t c = in[0]->shape[1];
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i]->shape != std::vector<int64_t>{c})
      fail(node, "'" + in[i]->name + "' has shape " + shape_string(in[i]->shape) + ", expected [" +
                     std::to_string(c) + "]");
  return in[0]->shape;
}

std::vector<int64_t> adaptive_pool_shape(const std::string& node,
                                         const std::vector<const Value*>& in, const OpAttrs& a) {
  expect_arity(node, in, 1, 1);
  expect_rank(node, *in[0], 3, 5);
  const size_t spatial = in[0]->shape.size() - 2;
  if (a.output_size.size() != spatial)
    fail(node, "output_size needs one entry per spatial dimension");
  std::vector<int64_t> out = {in[0]->shape[0], in[0]->shape[1]};
  out.insert(out.end(), a.output_size.begin(), a.output_size.end());
  return out;
}

std::vector<int64_t> mul_shape(const std::string& node, const std::vector<const Value*>& in,
                               const OpAttrs& a) {
  expect_arity(node, in, 2, 2);
  const auto& x = in[0]->shape;
  const auto& s = in[1]->shape;
  if (!broadcasts_to(s, x))
    fail(node, "cannot multiply '" + in[0]->name + "' " + shape_string(x) + " by '" + in[1]->name +
                   "' " + shape_string(s) + ": the second operand must broadcast to the first");
  return x;
}

std::vector<int64_t> cat_shape(const std::string& node, const std::vector<const Value*>& in,
                               const OpAttrs& a) {
  if (in.empty()) fail(node, "cat needs at least one input");
  auto out = in[0]->shape;
  const auto d = static_cast<size_t>(a.dim);
  if (a.dim < 0 || d >= out.size()) fail(node, "cat dimension out of range");
  for (size_t i = 1; i < in.size(); ++i) {
    const auto& s = in[i]->shape;
    bool ok = s.size() == out.size();
    for (size_t j = 0; ok && j < s.size(); ++j) ok = j == d || s[j] == out[j];
    if (!ok)
      fail(node, "cannot concatenate '" + in[i]->name + "' " + shape_string(s) + " with " +
                     shape_string(in[0]->shape) + " along dim " + std::to_string(a.dim));
    out[d] += s[d];
  }
  return out;
}

std::vector<int64_t> flatten_shape(const std::string& node, const std::vector<const Value*>& in,
                                   const OpAttrs& a) {
  expect_arity(node, in, 1, 1);
  const auto& s = in[0]->shape;
  if (a.dim < 0 || static_cast<size_t>(a.dim) >= s.size())
    fail(node, "flatten start dimension out of range");
  std::vector<int64_t> out(s.begin(), s.begin() + a.dim);
  int64_t rest = 1;
  for (size_t j = a.dim; j < s.size(); ++j) rest *= s[j];
  out.push_back(rest);
  return out;
}

std::vector<int64_t> slice_shape(const std::string& node, const std::vector<const Value*>& in,
                                 const OpAttrs& a) {
  expect_arity(node, in, 1, 1);
  auto out = in[0]->shape;
  if (a.dim < 0 || static_cast<size_t>(a.dim) >= out.size())
    fail(node, "slice dimension out of range");
  if (a.start < 0 || a.length < 1 || a.start + a.length > out[a.dim])
    fail(node, "slice [" + std::to_string(a.start) + ", " + std::to_string(a.start + a.length) +
                   ") is outside dimension " + std::to_string(a.dim) + " of '" + in[0]->name +
                   "' " + shape_string(out));
  out[a.dim] = a.length;
  return out;
}

std::vector<int64_t> linear_shape(const std::string& node, const std::vector<const Value*>& in,
                                  const OpAttrs& a) {
  expect_arity(node, in, 2, 3);
  const auto& x = in[0]->shape;
  const auto& w = in[1]->shape;
  if (x.empty() || w.size() != 2 || x.back() != w[1])
    fail(node, "input '" + in[0]->name + "' " + shape_string(x) + " does not fit weight '" +
                   in[1]->name + "' " + shape_string(w));
  if (in.size() == 3 && in[2]->shape != std::vector<int64_t>{w[0]})
    fail(node, "bias has shape " + shape_string(in[2]->shape));
  auto out = x;
  out.back() = w[0];
  return out;
}

std::vector<int64_t> cross_entropy_shape(const std::string& node,
                                         const std::vector<const Value*>& in, const OpAttrs& a) {
  // Logits [N, C] with a class per sample, or [N, C, ...] with one per position.
  expect_arity(node, in, 2, 2);
  expect_rank(node, *in[0], 2, 5);
  const std::vector<int64_t> target = cross_entropy_target_shape(in[0]->shape);
  if (in[1]->shape != target || in[1]->dtype != at::kLong)
    fail(node, "target '" + in[1]->name + "' must be int64 of shape " + shape_string(target));
  return {};
}

}  // namespace

std::vector<int64_t> infer_shape(OpKind op, const std::vector<const Value*>& in, const OpAttrs& a,
                                 const std::string& node) {
  switch (op) {
    case OpKind::kConv:
      return conv_shape(node, in, a, false);
    case OpKind::kConvTranspose:
      return conv_shape(node, in, a, true);
    case OpKind::kBatchNorm:
      return batch_norm_shape(node, in, a);
    case OpKind::kReLU:
    case OpKind::kReLU6:
    case OpKind::kHardswish:
    case OpKind::kHardsigmoid:
    case OpKind::kSiLU:
    case OpKind::kSigmoid:
    case OpKind::kDropout:
      expect_arity(node, in, 1, 1);
      if (op == OpKind::kDropout && (a.p < 0 || a.p >= 1))
        fail(node, "dropout probability must be in [0, 1)");
      return in[0]->shape;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      return pool_shape(node, in, a);
    case OpKind::kAdaptiveAvgPool:
      return adaptive_pool_shape(node, in, a);
    case OpKind::kAdd:
      expect_arity(node, in, 2, 2);
      if (in[0]->shape != in[1]->shape)
        fail(node, "cannot add '" + in[0]->name + "' " + shape_string(in[0]->shape) + " and '" +
                       in[1]->name + "' " + shape_string(in[1]->shape));
      return in[0]->shape;
    case OpKind::kMul:
      return mul_shape(node, in, a);
    case OpKind::kCat:
      return cat_shape(node, in, a);
    case OpKind::kFlatten:
      return flatten_shape(node, in, a);
    case OpKind::kSlice:
      return slice_shape(node, in, a);
    case OpKind::kChannelShuffle: {
      expect_arity(node, in, 1, 1);
      const auto& s = in[0]->shape;
      if (s.size() < 2 || a.groups < 1 || s[1] % a.groups != 0)
        fail(node, "cannot shuffle the channels of '" + in[0]->name + "' " + shape_string(s) +
                       " in " + std::to_string(a.groups) + " groups");
      return s;
    }
    case OpKind::kLinear:
      return linear_shape(node, in, a);
    case OpKind::kCrossEntropyLoss:
      return cross_entropy_shape(node, in, a);
    case OpKind::kBCEWithLogitsLoss:
    case OpKind::kMSELoss:
      expect_arity(node, in, 2, 2);
      if (in[0]->shape != in[1]->shape)
        fail(node, "target '" + in[1]->name + "' " + shape_string(in[1]->shape) +
                       " must have the output's shape " + shape_string(in[0]->shape));
      return {};
    case OpKind::kSumLoss:
      expect_arity(node, in, 1, 1);
      return {};
    case OpKind::kAttention:
      return attention_shape(node, in, a);
    case OpKind::kAten:
      // The shape running the operator once at import gave (aten_call.h).
      if (!a.aten) fail(node, "an ATen operator node without its call");
      if (in.size() != a.aten->tensor_slots.size())
        fail(node, "expects " + std::to_string(a.aten->tensor_slots.size()) + " inputs, got " +
                       std::to_string(in.size()));
      return a.aten->output_shape;
  }
  fail(node, "operator without shape inference");
}

}  // namespace monet
