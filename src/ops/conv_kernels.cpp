// Convolution (and transposed convolution) implementations.
#include <map>
#include <mutex>
#include <tuple>

#include "ops/op_kernels.h"
#include "ops/shape_stand_in.h"
#include "ops/sparse_storage.h"

namespace monet::kernels {
namespace {

at::Tensor bias_of(const std::vector<at::Tensor>& in) {
  return in.size() > 2 ? in[2] : at::Tensor();
}

// output_padding that makes a transposed convolution of the gradient reproduce the
// forward input's spatial size exactly.
std::vector<int64_t> input_grad_output_padding(const Node& n, at::IntArrayRef input_shape,
                                               at::IntArrayRef grad_shape, at::IntArrayRef w) {
  const auto& a = n.attrs;
  std::vector<int64_t> op;
  for (size_t i = 0; i + 2 < input_shape.size(); ++i) {
    const int64_t k = w[2 + i];
    const int64_t full =
        (grad_shape[2 + i] - 1) * a.stride[i] - 2 * a.padding[i] + a.dilation[i] * (k - 1) + 1;
    op.push_back(input_shape[2 + i] - full);
  }
  return op;
}

// Weight gradient, im2col one sample at a time: low workspace, more GEMM calls.
at::Tensor weight_grad_im2col(const Node& n, const at::Tensor& g, const at::Tensor& x,
                              const at::Tensor& w) {
  const auto& a = n.attrs;
  const int64_t batch = x.size(0), cout = w.size(0);
  at::Tensor gw = at::zeros({cout, w.numel() / cout}, w.options());
  const at::IntArrayRef kernel(w.sizes().data() + 2, 2);
  for (int64_t s = 0; s < batch; ++s) {
    at::Tensor cols = at::im2col(x.narrow(0, s, 1), kernel, a.dilation, a.padding, a.stride);
    gw.addmm_(g[s].reshape({cout, -1}), cols[0].t());
  }
  return gw.view(w.sizes());
}

}  // namespace

ForwardOutput conv_forward(const Node& n, const std::string& impl,
                           const std::vector<at::Tensor>& in) {
  const auto& a = n.attrs;
  const at::Tensor& x = in[0];
  const at::Tensor& w = in[1];
  const at::Tensor b = bias_of(in);
  const bool transposed = n.op == OpKind::kConvTranspose;
  if (impl == "sparse_input" || impl == "half_input") {
    ForwardOutput out = conv_forward(n, "default", in);
    out.intermediate = impl == "half_input" ? x.to(at::kHalf) : encode_sparse(x);
    return out;
  }
  // oneDNN's convolution takes float32 only: in another dtype (a float64 model) "mkldnn"
  // runs as "default", the same computation.
  if (impl == "default" || (impl == "mkldnn" && x.scalar_type() != at::kFloat)) {
    std::vector<int64_t> op =
        transposed ? a.output_padding : std::vector<int64_t>(a.kernel.size(), 0);
    return {at::convolution(x, w, b, a.stride, a.padding, a.dilation, transposed, op, a.groups),
            {}};
  }
  if (impl == "mkldnn")
    return {at::mkldnn_convolution(x.contiguous(), w, b, a.padding, a.stride, a.dilation, a.groups),
            {}};
  const at::IntArrayRef kernel(w.sizes().data() + 2, 2);
  if (impl == "im2col") return {at::_slow_conv2d_forward(x, w, kernel, b, a.stride, a.padding), {}};
  if (impl == "dilated_im2col")
    return {at::slow_conv_dilated2d(x, w, kernel, b, a.stride, a.padding, a.dilation), {}};
  throw std::invalid_argument("conv: unknown forward implementation " + impl);
}

std::vector<at::Tensor> conv_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& args) {
  const auto& a = n.attrs;
  const at::Tensor& go = args.grad_output;
  const at::Tensor& w = args.inputs[1];
  const bool transposed = n.op == OpKind::kConvTranspose;
  const bool has_bias = n.inputs.size() > 2;
  std::vector<at::Tensor> grads(n.inputs.size());
  if (impl.part == BackwardPart::kWeight) {
    at::Tensor x = args.inputs[0];
    if (impl.name == "sparse_input")
      x = decode_sparse(args.intermediate, g.value(n.inputs[0]).shape, go.scalar_type());
    else if (impl.name == "half_input")
      x = args.intermediate.to(go.scalar_type());
    const bool need_w = args.needs_grad[1], need_b = has_bias && args.needs_grad[2];
    if (impl.name == "im2col_gemm") {
      if (need_w) grads[1] = weight_grad_im2col(n, go, x, w);
      if (need_b) grads[2] = go.sum({0, 2, 3});
      return grads;
    }
    std::vector<int64_t> op =
        transposed ? a.output_padding : std::vector<int64_t>(a.kernel.size(), 0);
    c10::optional<at::IntArrayRef> bias_sizes;
    std::vector<int64_t> bias_shape;
    if (has_bias) {
      bias_shape = {w.size(transposed ? 1 : 0) * (transposed ? a.groups : 1)};
      bias_sizes = at::IntArrayRef(bias_shape);
    }
    auto r = at::convolution_backward(go, x, w, bias_sizes, a.stride, a.padding, a.dilation,
                                      transposed, op, a.groups, {false, need_w, need_b});
    if (need_w) grads[1] = std::get<1>(r);
    if (need_b) grads[2] = std::get<2>(r);
    return grads;
  }
  // Input part: needs only the weight and the shapes.
  if (!args.needs_grad[0]) return grads;
  const auto& in_shape = g.value(n.inputs[0]).shape;
  if (transposed) {
    std::vector<int64_t> zeros(a.kernel.size(), 0);
    grads[0] = at::convolution(go, w, {}, a.stride, a.padding, a.dilation, false, zeros, a.groups);
    return grads;
  }
  const auto op = input_grad_output_padding(n, in_shape, go.sizes(), w.sizes());
  if (impl.name == "aten" || impl.name == "aten_shape") {
    // ATen reads the input only for its shape: "aten_shape" passes a contiguous stand-in
    // that holds no memory (shape_stand_in.h); "aten" passes the real input, which lets
    // ATen pick its fastest kernel (much faster for depthwise convolutions).
    const at::Tensor input =
        impl.name == "aten" ? args.inputs[0] : zero_shape_stand_in(in_shape, go.options());
    std::vector<int64_t> zeros(a.kernel.size(), 0);
    grads[0] = std::get<0>(at::convolution_backward(go, input, w, c10::nullopt, a.stride, a.padding,
                                                    a.dilation, false, zeros, a.groups,
                                                    {true, false, false}));
  } else if (impl.name == "slow_transpose") {
    const at::IntArrayRef kernel(w.sizes().data() + 2, 2);
    grads[0] = at::slow_conv_transpose2d(go, w, kernel, {}, a.stride, a.padding, op, a.dilation);
  } else {
    grads[0] = at::convolution(go, w, {}, a.stride, a.padding, a.dilation, true, op, a.groups);
  }
  return grads;
}

bool transposed_convolution_takes(at::ScalarType dtype, size_t spatial_dims, bool thnn) {
  static std::mutex mutex;
  static std::map<std::tuple<at::ScalarType, size_t, bool>, bool> takes;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(dtype, spatial_dims, thnn);
  if (const auto known = takes.find(key); known != takes.end()) return known->second;
  // Two input channels to one output channel, as an input gradient reads a weight.
  std::vector<int64_t> x_shape = {1, 2}, w_shape = {2, 1};
  x_shape.resize(2 + spatial_dims, 2);
  w_shape.resize(2 + spatial_dims, 1);
  const at::Tensor x = at::zeros(x_shape, at::dtype(dtype));
  const at::Tensor w = at::zeros(w_shape, at::dtype(dtype));
  const std::vector<int64_t> ones(spatial_dims, 1), zeros(spatial_dims, 0);
  bool runs = true;
  try {
    if (thnn)
      at::slow_conv_transpose2d(x, w, ones);
    else
      at::convolution(x, w, {}, ones, zeros, ones, true, zeros, 1);
  } catch (const c10::Error&) {
    runs = false;
  }
  return takes[key] = runs;
}

}  // namespace monet::kernels
