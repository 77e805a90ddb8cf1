#include "ops/op_impl.h"

#include <algorithm>

#include <stdexcept>

#include "graph/aten_call.h"
#include "ops/aten_impls.h"
#include "ops/bit_mask.h"
#include "ops/op_kernels.h"
#include "ops/sparse_storage.h"

namespace monet {
namespace {

bool is_plain_conv2d(const Graph& g, const Node& n) {
  const auto& a = n.attrs;
  if (n.op != OpKind::kConv || g.value(n.inputs[0]).shape.size() != 4 || a.groups != 1)
    return false;
  for (auto d : a.dilation)
    if (d != 1) return false;
  return true;
}

// In-place-capable element-wise operators: the default follows the graph's attribute.
std::vector<ForwardImplInfo> inplace_choice(const Node& n, const std::string& what) {
  auto out_of_place = make_forward_impl("default", false, false, what + " into a new tensor");
  auto inplace = make_forward_impl("inplace", true, false, what + " in place on the input");
  if (n.attrs.inplace) return {inplace, out_of_place};
  return {out_of_place, inplace};
}

}  // namespace

ForwardImplInfo make_forward_impl(std::string name, bool inplace, bool intermediate,
                                  std::string d) {
  ForwardImplInfo f;
  f.name = std::move(name);
  f.inplace = inplace;
  f.emits_intermediate = intermediate;
  f.description = std::move(d);
  return f;
}

BackwardImplInfo make_backward_impl(std::string name, BackwardPart part, std::vector<int> inputs,
                                    bool output, bool intermediate, std::string d,
                                    std::vector<std::string> requires_forward) {
  BackwardImplInfo b;
  b.name = std::move(name);
  b.part = part;
  b.reads_inputs = std::move(inputs);
  b.reads_output = output;
  b.reads_intermediate = intermediate;
  b.description = std::move(d);
  b.requires_forward = std::move(requires_forward);
  return b;
}

const char* backward_part_name(BackwardPart part) {
  switch (part) {
    case BackwardPart::kAll:
      return "all";
    case BackwardPart::kWeight:
      return "weight";
    case BackwardPart::kInput:
      return "input";
  }
  return "?";
}

BackwardPart backward_part_from_name(const std::string& name) {
  if (name == "all") return BackwardPart::kAll;
  if (name == "weight") return BackwardPart::kWeight;
  if (name == "input") return BackwardPart::kInput;
  throw std::invalid_argument("unknown backward part '" + name + "'");
}

namespace {

// Every forward implementation of the node's operator.
std::vector<ForwardImplInfo> operator_forward_impls(const Graph& g, const Node& n) {
  switch (n.op) {
    case OpKind::kConv: {
      std::vector<ForwardImplInfo> v = {
          make_forward_impl("default", false, false,
                            "at::convolution (oneDNN where PyTorch uses it)"),
          make_forward_impl("mkldnn", false, false, "oneDNN convolution called directly")};
      if (is_plain_conv2d(g, n)) {
        v.push_back(make_forward_impl("im2col", false, false, "im2col + GEMM (THNN slow_conv2d)"));
        v.push_back(make_forward_impl("dilated_im2col", false, false,
                                      "per-sample im2col (slow_conv_dilated2d)"));
      }
      auto sparse =
          make_forward_impl("sparse_input", false, true,
                            "at::convolution; keeps its input as CSR rows of 256 with 8-bit column "
                            "indices for the weight gradient (Gist SSDC)");
      auto half =
          make_forward_impl("half_input", false, true,
                            "at::convolution; keeps its input in float16 for the weight gradient "
                            "(Gist delayed precision reduction: lossy)");
      sparse.gist_encoding = sparse.size_is_bound = true;
      half.gist_encoding = half.lossy = true;
      v.insert(v.end(), {sparse, half});
      return v;
    }
    case OpKind::kReLU:
    case OpKind::kReLU6: {
      auto v = inplace_choice(n, op_name(n.op));
      v.push_back(make_forward_impl("mask", false, true, "out of place, plus a 1-bit sign mask"));
      v.push_back(
          make_forward_impl("inplace_mask", true, true, "in place, plus a 1-bit sign mask"));
      return v;
    }
    case OpKind::kAdd:
      return inplace_choice(n, "add");
    case OpKind::kMaxPool:
      return {
          make_forward_impl("default", false, true, "keeps int64 argmax indices, as PyTorch does"),
          make_forward_impl("argmax8", false, true, "keeps the argmax as an 8-bit window offset"),
          make_forward_impl("plain", false, false, "keeps nothing")};
    case OpKind::kDropout:
      return {make_forward_impl("default", false, true,
                                "keeps the scaled noise tensor, as PyTorch does"),
              make_forward_impl("reseed", false, false,
                                "keeps nothing; backward regenerates the noise"),
              make_forward_impl("mask", false, true,
                                "keeps which elements were kept, 1 bit an element")};
    case OpKind::kAten:
      return aten_forward_impls(g, n);
    case OpKind::kAttention:
      return {make_forward_impl("materialised", false, true,
                                "keeps the probabilities [..., T, S], as unfused attention does"),
              make_forward_impl("chunked", false, false,
                                "query rows in blocks (attention_spec.h), keeps nothing"),
              make_forward_impl("lse", false, true,
                                "query rows in blocks, keeps the rows' log-sum-exp [..., T]")};
    case OpKind::kFlatten: {
      auto view = make_forward_impl("default", false, false, "a view of the input (no copy)");
      view.output_aliases_input = true;
      return {view};
    }
    default:
      return {make_forward_impl("default", false, false, "reference ATen call")};
  }
}

}  // namespace

bool storage_shared(const Graph& g, int value) {
  const Value& v = g.value(value);
  if (v.producer >= 0 && is_view_node(g.node(v.producer))) return true;
  for (int c : v.consumers)
    if (is_view_node(g.node(c)) && g.node(c).inputs[0] == value) return true;
  return false;
}

std::vector<ForwardImplInfo> forward_impls(const Graph& g, const Node& n) {
  std::vector<ForwardImplInfo> v = operator_forward_impls(g, n);
  // Writing in place into a storage another value views would change that value too.
  if (!n.inputs.empty() && storage_shared(g, n.inputs[0]))
    v.erase(std::remove_if(v.begin(), v.end(), [](const ForwardImplInfo& f) { return f.inplace; }),
            v.end());
  return v;
}

namespace {

// A convolution's (or transposed convolution's) weight and input gradient implementations.
std::vector<BackwardImplInfo> conv_backward_impls(const Graph& g, const Node& n) {
  using P = BackwardPart;
  auto transposed =
      make_backward_impl("transposed", P::kInput, {}, false, false,
                         "transposed convolution of the gradient (needs no activation)");
  auto aten =
      make_backward_impl("aten", P::kInput, {0}, false, false,
                         "at::convolution_backward, input (reads the input: fastest depthwise)");
  auto aten_shape =
      make_backward_impl("aten_shape", P::kInput, {}, false, false,
                         "at::convolution_backward on a stand-in of the input (no memory)");
  std::vector<BackwardImplInfo> v = {make_backward_impl("default", P::kWeight, {0}, false, false,
                                                        "at::convolution_backward, weight")};
  // ATen's own input gradient is what autograd runs, and it is several times faster
  // than a transposed convolution of the gradient on 3x3 layers (ResNet-18 layer1 at
  // 160², batch 8: 6.3 ms against 41 ms), so it is the default: on the real input for
  // depthwise convolutions (ATen's fastest kernel there), else on a stand-in
  // that holds no memory (shape_stand_in.h), which keeps the default backward
  // free of the activation.
  const bool depthwise = n.attrs.groups > 1 && n.attrs.groups == g.value(n.inputs[0]).shape[1];
  if (n.op == OpKind::kConvTranspose) {
    v.push_back(make_backward_impl("conv", P::kInput, {}, false, false,
                                   "convolution of the gradient (needs no activation)"));
  } else if (depthwise) {
    v.insert(v.end(), {aten, transposed, aten_shape});
  } else {
    v.insert(v.end(), {aten_shape, transposed, aten});
  }
  const Value& out = g.value(n.output);
  if (!kernels::transposed_convolution_takes(out.dtype, out.shape.size() - 2, /*thnn=*/false))
    v.erase(std::remove_if(v.begin(), v.end(),
                           [](const BackwardImplInfo& b) { return b.name == "transposed"; }),
            v.end());
  if (n.op == OpKind::kConv) {
    auto sparse =
        make_backward_impl("sparse_input", P::kWeight, {}, false, true,
                           "weight gradient from the CSR copy of the input", {"sparse_input"});
    auto half =
        make_backward_impl("half_input", P::kWeight, {}, false, true,
                           "weight gradient from the float16 copy of the input", {"half_input"});
    sparse.gist_encoding = half.gist_encoding = true;
    v.insert(v.end(), {sparse, half});
  }
  if (is_plain_conv2d(g, n)) {
    v.push_back(
        make_backward_impl("im2col_gemm", P::kWeight, {0}, false, false, "im2col + batched GEMM"));
    if (kernels::transposed_convolution_takes(g.value(n.output).dtype, 2, /*thnn=*/true))
      v.push_back(make_backward_impl("slow_transpose", P::kInput, {}, false, false,
                                     "THNN slow_conv_transpose2d of the gradient"));
  }
  return v;
}

// Attention's backward: from kept probabilities, or recomputing them (plain or from the
// kept log-sum-exp); it reads whichever of q, k and v are activations.
std::vector<BackwardImplInfo> attention_backward_impls(const Graph& g, const Node& n) {
  using P = BackwardPart;
  std::vector<int> qkv;
  for (int k = 0; k < 3; ++k)
    if (g.value(n.inputs[k]).kind == ValueKind::kActivation) qkv.push_back(k);
  return {make_backward_impl("probabilities", P::kAll, qkv, false, true,
                             "from q, k, v and the kept probabilities", {"materialised"}),
          make_backward_impl("recompute", P::kAll, qkv, false, false,
                             "recomputes the probabilities from q and k, block by block"),
          make_backward_impl("recompute_lse", P::kAll, qkv, false, true,
                             "recomputes the probabilities block by block from q, k and "
                             "the kept log-sum-exp",
                             {"lse"})};
}

}  // namespace

std::vector<BackwardImplInfo> backward_impls(const Graph& g, const Node& n) {
  using P = BackwardPart;
  switch (n.op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      return conv_backward_impls(g, n);
    case OpKind::kLinear:
      return {make_backward_impl("default", P::kWeight, {0}, false, false, "grad^T x"),
              make_backward_impl("default", P::kInput, {}, false, false, "grad W")};
    case OpKind::kBatchNorm:
      return {make_backward_impl("input", P::kAll, {0}, false, false,
                                 "from the input (native backward)"),
              make_backward_impl("output", P::kAll, {}, true, false,
                                 "from the output (x - mean = (y - b) / (w invstd))")};
    case OpKind::kReLU:
    case OpKind::kReLU6: {
      auto out = make_backward_impl("output", P::kAll, {}, true, false, "from the output");
      auto in = make_backward_impl("input", P::kAll, {0}, false, false, "from the input");
      auto mask = make_backward_impl("mask", P::kAll, {}, false, true, "from the 1-bit sign mask",
                                     {"mask", "inplace_mask"});
      if (n.attrs.inplace) return {out, in, mask};
      return {in, out, mask};
    }
    case OpKind::kSigmoid:
    case OpKind::kHardsigmoid: {
      // PyTorch saves sigmoid's output and hardsigmoid's input; either can serve.
      auto out = make_backward_impl("output", P::kAll, {}, true, false, "from the output");
      auto in = make_backward_impl("input", P::kAll, {0}, false, false, "from the input");
      if (n.op == OpKind::kSigmoid) return {out, in};
      return {in, out};
    }
    case OpKind::kHardswish:
    case OpKind::kSiLU:
      return {make_backward_impl("input", P::kAll, {0}, false, false, "from the input")};
    case OpKind::kMul:
      return {make_backward_impl("default", P::kAll, {0, 1}, false, false, "from both operands")};
    case OpKind::kMaxPool:
      return {make_backward_impl("indices", P::kAll, {}, false, true, "from int64 argmax indices",
                                 {"default"}),
              make_backward_impl("argmax8", P::kAll, {}, false, true, "from 8-bit window offsets",
                                 {"argmax8"}),
              make_backward_impl("input", P::kAll, {0}, false, false,
                                 "recomputes the argmax from the input")};
    case OpKind::kDropout:
      return {make_backward_impl("noise", P::kAll, {}, false, true, "from the kept noise tensor",
                                 {"default"}),
              make_backward_impl("reseed", P::kAll, {}, false, false,
                                 "regenerates the noise from its seed"),
              make_backward_impl("mask", P::kAll, {}, false, true,
                                 "from the 1-bit mask of kept elements", {"mask"})};
    case OpKind::kCrossEntropyLoss:
    case OpKind::kBCEWithLogitsLoss:
    case OpKind::kMSELoss:
      return {make_backward_impl("default", P::kAll, {0, 1}, false, false,
                                 "from the logits and targets")};
    case OpKind::kAten:
      return aten_backward_impls(g, n);
    case OpKind::kAttention:
      return attention_backward_impls(g, n);
    case OpKind::kAdd:
    case OpKind::kCat:
    case OpKind::kFlatten: {
      auto b =
          make_backward_impl("default", P::kAll, {}, false, false, "views of the output gradient");
      b.grads_alias_output = true;
      return {b};
    }
    default:
      return {make_backward_impl("default", P::kAll, {}, false, false, "needs shapes only")};
  }
}

std::vector<BackwardPart> backward_parts(const Graph& g, const Node& n) {
  std::vector<BackwardPart> parts;
  for (const auto& b : backward_impls(g, n))
    if (std::find(parts.begin(), parts.end(), b.part) == parts.end()) parts.push_back(b.part);
  return parts;
}

bool compatible(const ForwardImplInfo& f, const BackwardImplInfo& b) {
  if (b.reads_intermediate && std::find(b.requires_forward.begin(), b.requires_forward.end(),
                                        f.name) == b.requires_forward.end())
    return false;
  if (f.inplace &&
      std::find(b.reads_inputs.begin(), b.reads_inputs.end(), 0) != b.reads_inputs.end())
    return false;
  return true;
}

ForwardImplInfo find_forward_impl(const std::vector<ForwardImplInfo>& impls, const Node& node,
                                  const std::string& name) {
  for (const auto& i : impls)
    if (i.name == name) return i;
  throw std::invalid_argument("node '" + node.name + "' (" + op_name(node.op) +
                              ") has no forward implementation '" + name + "'");
}

BackwardImplInfo find_backward_impl(const std::vector<BackwardImplInfo>& impls, const Node& node,
                                    BackwardPart part, const std::string& name) {
  for (const auto& i : impls)
    if (i.name == name && i.part == part) return i;
  throw std::invalid_argument("node '" + node.name + "' (" + op_name(node.op) +
                              ") has no backward implementation '" + name + "' for part '" +
                              backward_part_name(part) + "'");
}

std::string out_of_place(const std::string& impl) {
  if (impl == "inplace") return "default";
  if (impl == "inplace_mask") return "mask";
  return impl;
}

std::vector<bool> backward_grad_mask(const Graph& g, const Node& n, BackwardPart part,
                                     const std::vector<bool>& needs_grad) {
  std::vector<bool> mask(n.inputs.size(), false);
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Value& v = g.value(n.inputs[k]);
    const bool here = part == BackwardPart::kAll ||
                      (part == BackwardPart::kWeight) == (v.kind == ValueKind::kParameter);
    mask[k] = needs_grad[v.id] && here;
  }
  return mask;
}

int64_t node_state_bytes(const Graph& g, const Node& n) {
  if (n.op == OpKind::kAten) return aten_state_bytes(g, n);
  if (n.op != OpKind::kBatchNorm) return 0;
  const Value& x = g.value(n.inputs[0]);
  return 2 * x.shape[1] * static_cast<int64_t>(c10::elementSize(x.dtype));
}

int64_t forward_result_bytes(const Graph& g, const Node& n, const ForwardImplInfo& f,
                             bool first_forward) {
  int64_t bytes = first_forward ? node_state_bytes(g, n) : 0;
  if (!f.inplace && !f.output_aliases_input) bytes += g.value(n.output).bytes();
  if (f.emits_intermediate) bytes += intermediate_bytes(g, n, f.name);
  return bytes;
}

int64_t backward_result_bytes(const Graph& g, const Node& n, const BackwardImplInfo& b,
                              const std::vector<bool>& mask) {
  if (b.grads_alias_output) return 0;
  int64_t bytes = 0;
  for (size_t k = 0; k < mask.size(); ++k)
    if (mask[k]) bytes += g.value(n.inputs[k]).bytes();
  return bytes;
}

std::vector<int64_t> dropout_noise_shape(const Node& n, std::vector<int64_t> shape) {
  if (n.attrs.dropout_shape == DropoutShape::kChannel)
    for (size_t d = 2; d < shape.size(); ++d) shape[d] = 1;
  return shape;
}

int64_t intermediate_bytes(const Graph& g, const Node& n, const std::string& forward_impl) {
  const Value& out = g.value(n.output);
  switch (n.op) {
    case OpKind::kReLU:
    case OpKind::kReLU6:
      return packed_bits_bytes(g.value(n.inputs[0]).numel());
    case OpKind::kMaxPool:
      return forward_impl == "argmax8" ? out.numel() : out.numel() * 8;
    case OpKind::kDropout: {
      int64_t noise = 1;
      for (int64_t d : dropout_noise_shape(n, out.shape)) noise *= d;
      return forward_impl == "mask" ? packed_bits_bytes(noise) : noise * out.bytes() / out.numel();
    }
    case OpKind::kConv: {
      const Value& x = g.value(n.inputs[0]);
      if (forward_impl == "half_input") return x.numel() * 2;
      if (forward_impl == "sparse_input")  // every element non-zero: the upper bound
        return sparse_storage_bytes(x.numel(), x.numel(),
                                    static_cast<int64_t>(c10::elementSize(x.dtype)));
      return 0;
    }
    case OpKind::kAten:
      return aten_intermediate_bytes(g, n, forward_impl);
    case OpKind::kAttention: {
      // The probabilities [..., T, S], or one log-sum-exp per query row [..., T].
      const Value& q = g.value(n.inputs[0]);
      const int64_t rows = q.numel() / q.shape.back();
      const int64_t s = g.value(n.inputs[1]).shape[q.shape.size() - 2];
      const int64_t element = static_cast<int64_t>(c10::elementSize(q.dtype));
      if (forward_impl == "materialised") return rows * s * element;
      return forward_impl == "lse" ? rows * element : 0;
    }
    default:
      return 0;
  }
}

}  // namespace monet
