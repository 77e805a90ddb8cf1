// ReLU / ReLU6 (in place or not; backward from input, output or a 1-bit sign mask),
// the smooth activations (hardswish, hardsigmoid, SiLU, sigmoid; backward from the input,
// or from the output where it determines the derivative) and dropout (noise kept, a
// 1-bit mask of the kept elements kept, or the noise regenerated from the node's seed).
#include "ops/bit_mask.h"
#include "ops/op_kernels.h"

namespace monet::kernels {
namespace {

bool is_relu6(const Node& n) { return n.op == OpKind::kReLU6; }

// Where the backward passes the gradient: 0 < x (ReLU) or 0 < x < 6 (ReLU6).
at::Tensor pass_mask(const Node& n, const at::Tensor& x) {
  return is_relu6(n) ? at::logical_and(x > 0, x < 6) : x > 0;
}

}  // namespace

ForwardOutput activation_forward(const Node& n, const ForwardImplInfo& impl,
                                 const std::vector<at::Tensor>& in) {
  at::Tensor x = in[0];
  if (n.op == OpKind::kDropout) throw std::logic_error("dropout goes through dropout_forward");
  ForwardOutput out;
  if (impl.emits_intermediate) out.intermediate = pack_bits(pass_mask(n, x));
  if (impl.inplace)
    out.output = is_relu6(n) ? at::hardtanh_(x, 0.0, 6.0) : at::relu_(x);
  else
    out.output = is_relu6(n) ? at::hardtanh(x, 0.0, 6.0) : at::relu(x);
  return out;
}

std::vector<at::Tensor> activation_backward(const Graph& g, const Node& n,
                                            const BackwardImplInfo& impl, const BackwardArgs& a) {
  std::vector<at::Tensor> grads(1);
  if (!a.needs_grad[0]) return grads;
  const at::Tensor& go = a.grad_output;
  if (impl.name == "mask") {
    const at::Tensor mask = unpack_bits(a.intermediate, g.value(n.inputs[0]).shape);
    grads[0] = go.masked_fill(mask.logical_not(), 0);
    return grads;
  }
  // The output passes the same test as the input: y in (0, 6) iff x in (0, 6).
  const at::Tensor& ref = impl.name == "output" ? a.output : a.inputs[0];
  grads[0] =
      is_relu6(n) ? at::hardtanh_backward(go, ref, 0.0, 6.0) : at::threshold_backward(go, ref, 0);
  return grads;
}

at::Tensor smooth_activation_forward(const Node& n, const at::Tensor& x) {
  switch (n.op) {
    case OpKind::kHardswish:
      return at::hardswish(x);
    case OpKind::kHardsigmoid:
      return at::hardsigmoid(x);
    case OpKind::kSiLU:
      return at::silu(x);
    case OpKind::kSigmoid:
      return at::sigmoid(x);
    default:
      throw std::logic_error(std::string("not a smooth activation: ") + op_name(n.op));
  }
}

std::vector<at::Tensor> smooth_activation_backward(const Node& n, const BackwardImplInfo& impl,
                                                   const BackwardArgs& a) {
  std::vector<at::Tensor> grads(1);
  if (!a.needs_grad[0]) return grads;
  const at::Tensor& go = a.grad_output;
  const bool from_output = impl.name == "output";
  switch (n.op) {
    case OpKind::kHardswish:
      grads[0] = at::hardswish_backward(go, a.inputs[0]);
      break;
    case OpKind::kSiLU:
      grads[0] = at::silu_backward(go, a.inputs[0]);
      break;
    case OpKind::kSigmoid:
      grads[0] = at::sigmoid_backward(go, from_output ? a.output : at::sigmoid(a.inputs[0]));
      break;
    case OpKind::kHardsigmoid:
      if (from_output) {
        // The slope is 1/6 where the output is strictly between 0 and 1; ATen's kernel
        // uses the float constant 1.0f / 6.0f in every precision, and so does this.
        const at::Tensor& y = a.output;
        const double slope = static_cast<double>(1.0f / 6.0f);
        grads[0] = (go * slope).masked_fill_(at::logical_or(y <= 0, y >= 1), 0);
      } else {
        grads[0] = at::hardsigmoid_backward(go, a.inputs[0]);
      }
      break;
    default:
      throw std::logic_error(std::string("not a smooth activation: ") + op_name(n.op));
  }
  return grads;
}

ForwardOutput dropout_forward(const Node& n, const ForwardImplInfo& impl, const at::Tensor& x,
                              const NodeState& state, bool training) {
  const bool mask = impl.name == "mask";
  const std::vector<int64_t> shape = dropout_noise_shape(n, x.sizes().vec());
  if (!training || n.attrs.p == 0) {
    if (!impl.emits_intermediate) return {x.clone(), at::Tensor()};
    return {x.clone(), mask ? pack_bits(at::ones(shape, x.options().dtype(at::kBool)))
                            : at::ones(shape, x.options())};
  }
  at::Tensor noise = dropout_noise(shape, n.attrs.p, state.seed);
  at::Tensor y = x * noise;
  if (!impl.emits_intermediate) return {y, at::Tensor()};
  return {y, mask ? pack_bits(noise != 0) : noise};
}

std::vector<at::Tensor> dropout_backward(const Node& n, const BackwardImplInfo& impl,
                                         const BackwardArgs& a, const NodeState& state) {
  std::vector<at::Tensor> grads(1);
  if (!a.needs_grad[0]) return grads;
  if (impl.name == "noise") {
    grads[0] = a.grad_output * a.intermediate;
  } else if (impl.name == "mask") {
    const at::Tensor kept =
        unpack_bits(a.intermediate, dropout_noise_shape(n, a.grad_output.sizes().vec()));
    grads[0] = n.attrs.p == 0 ? a.grad_output.clone()
                              : a.grad_output * dropout_scale(kept.to(at::kFloat), n.attrs.p);
  } else {
    grads[0] =
        n.attrs.p == 0
            ? a.grad_output.clone()
            : a.grad_output * dropout_noise(dropout_noise_shape(n, a.grad_output.sizes().vec()),
                                            n.attrs.p, state.seed);
  }
  return grads;
}

}  // namespace monet::kernels
