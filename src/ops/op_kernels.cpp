// Dispatch from (node, implementation) to the kernels, and the operators simple enough
// to live here: add, mul, cat, flatten, linear, the losses.
#include "ops/op_kernels.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>

#include "graph/aten_call.h"
#include "ops/reference_forward.h"

namespace monet {

uint64_t node_seed(uint64_t iteration_seed, int node_id) {
  // splitmix64 of the pair: independent streams per node and iteration.
  uint64_t z = iteration_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(node_id) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t node_seed(uint64_t iteration_seed, const Node& n) {
  const bool shared = n.op == OpKind::kAten && n.attrs.aten && n.attrs.aten->random_stream < 0;
  return node_seed(iteration_seed, shared ? n.attrs.aten->random_stream : n.id);
}

at::Tensor dropout_noise(at::IntArrayRef shape, double p, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return dropout_scale(at::empty(shape).bernoulli_(1 - p, gen), p);
}

at::Tensor dropout_scale(at::Tensor kept, double p) { return kept.div_(1 - p); }

namespace {

// Some ATen kernels (the CPU 3-D transposed convolution) return a tensor whose storage
// is larger than the tensor. A result the caller keeps must own exactly its own bytes, as
// the memory model (simulator, planner) assumes: copy such results into a tight tensor.
// A contiguous result also gets the standard strides: one can carry others on its size-1
// dimensions (a [N, C, 1, 1] permuted from [N, 1, 1, C]), which kernels read as
// channels-last and take another path than on the profile's inputs (a bfloat16 depthwise
// convolution's weight gradient then makes the weight dense), so the run would not be the
// one profiled.
at::Tensor tight(at::Tensor t) {
  if (!t.defined()) return t;
  if (t.storage().nbytes() > static_cast<size_t>(t.nbytes()))
    t = t.clone(at::MemoryFormat::Contiguous);
  if (!t.is_contiguous()) return t;
  std::vector<int64_t> standard(t.dim(), 1);
  for (int64_t d = t.dim() - 2; d >= 0; --d)
    standard[d] = standard[d + 1] * std::max<int64_t>(t.size(d + 1), 1);
  if (t.strides() == at::IntArrayRef(standard)) return t;
  return t.as_strided(t.sizes(), standard, t.storage_offset());
}

std::vector<at::Tensor> dispatch_backward(const Graph& g, const Node& n,
                                          const BackwardImplInfo& impl, const BackwardArgs& a,
                                          NodeState& state);

}  // namespace

std::vector<int64_t> kernels::channel_shape(const at::Tensor& x) {
  std::vector<int64_t> s(x.dim(), 1);
  s[1] = x.size(1);
  return s;
}

at::Tensor kernels::channel_shuffle(const at::Tensor& x, int64_t groups) {
  std::vector<int64_t> grouped = x.sizes().vec();
  grouped[1] /= groups;
  grouped.insert(grouped.begin() + 1, groups);
  return x.reshape(grouped).transpose(1, 2).contiguous().view(x.sizes());
}

ForwardOutput run_forward(const Graph& g, const Node& n, const ForwardImplInfo& impl,
                          const std::vector<at::Tensor>& in, NodeState& state, bool training) {
  ForwardOutput out;
  switch (n.op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      out = kernels::conv_forward(n, impl.name, in);
      break;
    case OpKind::kBatchNorm:
      out = kernels::batch_norm_forward(n, in, state, training);
      break;
    case OpKind::kReLU:
    case OpKind::kReLU6:
      out = kernels::activation_forward(n, impl, in);
      break;
    case OpKind::kHardswish:
    case OpKind::kHardsigmoid:
    case OpKind::kSiLU:
    case OpKind::kSigmoid:
      out.output = kernels::smooth_activation_forward(n, in[0]);
      break;
    case OpKind::kMul:
      out.output = at::mul(in[0], in[1]);
      break;
    case OpKind::kDropout:
      out = kernels::dropout_forward(n, impl, in[0], state, training);
      break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
    case OpKind::kAdaptiveAvgPool:
      out = kernels::pool_forward(n, impl.name, in);
      break;
    case OpKind::kAdd: {
      at::Tensor a = in[0];
      out.output = impl.inplace ? a.add_(in[1]) : at::add(in[0], in[1]);
      break;
    }
    case OpKind::kCat:
      out.output = at::cat(in, n.attrs.dim);
      break;
    case OpKind::kFlatten:
      out.output = in[0].flatten(n.attrs.dim);
      break;
    case OpKind::kSlice:
      out.output = in[0].narrow(n.attrs.dim, n.attrs.start, n.attrs.length).contiguous();
      break;
    case OpKind::kChannelShuffle:
      out.output = kernels::channel_shuffle(in[0], n.attrs.groups);
      break;
    case OpKind::kLinear:
      out.output = at::linear(in[0], in[1], in.size() > 2 ? in[2] : at::Tensor());
      break;
    case OpKind::kCrossEntropyLoss:
      out.output = at::cross_entropy_loss(in[0], in[1], {}, at::Reduction::Mean, -100, 0.0);
      break;
    case OpKind::kBCEWithLogitsLoss:
    case OpKind::kMSELoss:
    case OpKind::kSumLoss:
      out.output = reference_forward(n, in, training);
      break;
    case OpKind::kAten:
      out = kernels::aten_forward(g, n, impl, in, state);
      break;
    case OpKind::kAttention:
      out = kernels::attention_forward(n, impl, in, state, training);
      break;
  }
  state.computed = true;
  if (!impl.inplace && !impl.output_aliases_input) out.output = tight(std::move(out.output));
  return out;
}

std::vector<at::Tensor> run_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                     const BackwardArgs& a, NodeState& state) {
  std::vector<at::Tensor> grads = dispatch_backward(g, n, impl, a, state);
  if (!impl.grads_alias_output)
    for (auto& t : grads) t = tight(std::move(t));
  return grads;
}

namespace {

// A loss's gradient with respect to its prediction by LibTorch's own backward (on what
// it saves, recomputed from the prediction), so it rounds exactly as autograd's does.
at::Tensor loss_backward(const Node& n, const std::vector<at::Tensor>& inputs,
                         const at::Tensor& grad_output) {
  const at::Tensor prediction = inputs[0].detach().requires_grad_(true);
  at::AutoGradMode grad_mode(true);
  const at::Tensor loss = reference_forward(n, {prediction, inputs[1]}, /*training=*/true);
  return torch::autograd::grad({loss}, {prediction}, {grad_output}).at(0);
}

// Views of the output gradient along the concatenated dimension.
std::vector<at::Tensor> cat_backward(const Graph& g, const Node& n, const BackwardArgs& a) {
  std::vector<at::Tensor> grads(n.inputs.size());
  int64_t offset = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const int64_t len = g.value(n.inputs[i]).shape[n.attrs.dim];
    if (a.needs_grad[i]) grads[i] = a.grad_output.narrow(n.attrs.dim, offset, len);
    offset += len;
  }
  return grads;
}

// The weight part (weight and bias gradients) or the input part of a Linear.
std::vector<at::Tensor> linear_backward(const Node& n, const BackwardImplInfo& impl,
                                        const BackwardArgs& a) {
  std::vector<at::Tensor> grads(n.inputs.size());
  const at::Tensor& go = a.grad_output;
  // Inputs of any rank: the leading dimensions are rows (ConvNeXt's [N, H, W, C]).
  const at::Tensor rows = go.reshape({-1, go.size(-1)});
  if (impl.part == BackwardPart::kWeight) {
    if (a.needs_grad[1]) grads[1] = rows.t().mm(a.inputs[0].reshape({-1, a.inputs[0].size(-1)}));
    if (n.inputs.size() > 2 && a.needs_grad[2]) grads[2] = rows.sum(0);
  } else if (a.needs_grad[0]) {
    grads[0] = go.matmul(a.inputs[1]);
  }
  return grads;
}

std::vector<at::Tensor> dispatch_backward(const Graph& g, const Node& n,
                                          const BackwardImplInfo& impl, const BackwardArgs& a,
                                          NodeState& state) {
  const at::Tensor& go = a.grad_output;
  std::vector<at::Tensor> grads(n.inputs.size());
  switch (n.op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      return kernels::conv_backward(g, n, impl, a);
    case OpKind::kBatchNorm:
      return kernels::batch_norm_backward(n, impl, a, state);
    case OpKind::kReLU:
    case OpKind::kReLU6:
      return kernels::activation_backward(g, n, impl, a);
    case OpKind::kHardswish:
    case OpKind::kHardsigmoid:
    case OpKind::kSiLU:
    case OpKind::kSigmoid:
      return kernels::smooth_activation_backward(n, impl, a);
    case OpKind::kMul:
      // b broadcasts to a's shape: its gradient sums over the broadcast dimensions.
      if (a.needs_grad[0]) grads[0] = go * a.inputs[1];
      if (a.needs_grad[1]) grads[1] = (go * a.inputs[0]).sum_to_size(a.inputs[1].sizes());
      return grads;
    case OpKind::kDropout:
      return kernels::dropout_backward(n, impl, a, state);
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
    case OpKind::kAdaptiveAvgPool:
      return kernels::pool_backward(g, n, impl, a);
    case OpKind::kAdd:
      for (size_t i = 0; i < 2; ++i)
        if (a.needs_grad[i]) grads[i] = go;
      return grads;
    case OpKind::kCat:
      return cat_backward(g, n, a);
    case OpKind::kFlatten:
      if (a.needs_grad[0]) grads[0] = go.view(g.value(n.inputs[0]).shape);
      return grads;
    case OpKind::kSlice:
      if (a.needs_grad[0]) {
        grads[0] = at::zeros(g.value(n.inputs[0]).shape, go.options());
        grads[0].narrow(n.attrs.dim, n.attrs.start, n.attrs.length).copy_(go);
      }
      return grads;
    case OpKind::kChannelShuffle:
      if (a.needs_grad[0]) grads[0] = kernels::channel_shuffle(go, go.size(1) / n.attrs.groups);
      return grads;
    case OpKind::kLinear:
      return linear_backward(n, impl, a);
    case OpKind::kCrossEntropyLoss:
    case OpKind::kBCEWithLogitsLoss:
    case OpKind::kMSELoss:
      if (a.needs_grad[0]) grads[0] = loss_backward(n, a.inputs, go);
      return grads;
    case OpKind::kSumLoss:
      if (a.needs_grad[0]) grads[0] = go.expand(g.value(n.inputs[0]).shape).contiguous();
      return grads;
    case OpKind::kAten:
      return kernels::aten_backward(g, n, impl, a, state);
    case OpKind::kAttention:
      return kernels::attention_backward(n, impl, a, state);
  }
  throw std::logic_error(std::string("run_backward: no backward for ") + op_name(n.op));
}

}  // namespace

}  // namespace monet
