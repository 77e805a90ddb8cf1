#include <algorithm>

#include "graph/shape_inference.h"
#include "graph/torchscript/torchscript_importer.h"

// The specialised translations: ATen calls monet has its own operators for (convolution,
// linear, batch norm, pooling, concatenation, dropout, elementwise, views). Where its
// operator does not apply one throws NotSpecialised, and Importer::translate makes the
// call a generic node.

namespace monet::torchscript {

void Importer::translate_specialised(JitNode* node, const std::string& kind) {
  if (kind == "aten::_pack_padded_sequence")
    fail(node,
         "packed sequences (pack_padded_sequence) are not supported: their shapes depend on "
         "the lengths' values, which a trace fixes; pad the batch and mask it instead");
  if (translate_recurrent_layers(node, kind)) return;
  if (kind == "aten::transpose" || kind == "aten::permute") {
    translate_transpose(node, kind);
  } else if (kind == "aten::chunk" || kind == "aten::unsafe_chunk" || kind == "aten::split" ||
             kind == "aten::unsafe_split" || kind == "aten::split_with_sizes" ||
             kind == "aten::unsafe_split_with_sizes") {
    translate_split(node, kind);
  } else if (kind == "prim::ListUnpack") {
    translate_unpack(node);
  } else if (kind == "aten::_convolution" || kind == "aten::convolution" ||
             kind == "aten::conv1d" || kind == "aten::conv2d" || kind == "aten::conv3d") {
    translate_conv(node, kind);
  } else if (kind == "aten::batch_norm" && kept_in_evaluation(node, 5)) {
    // Running statistics, read and not updated; autograd's backward (a frozen batch norm).
    translate_aten(node, kind);
  } else if (kind == "aten::batch_norm" && generic_path()) {
    // Batch statistics, no running statistics (OperatorPath::kGeneric).
    translate_aten(node, kind, {{3, c10::IValue()}, {4, c10::IValue()}, {5, true}});
  } else if (kind == "aten::batch_norm" && is_none(node, 3) && is_none(node, 4)) {
    // track_running_stats=False: batch statistics in training and evaluation alike, a
    // generic node (with or without affine parameters).
    translate_aten(node, kind, {{5, true}});
  } else if (kind == "aten::batch_norm") {
    translate_batch_norm(node);
  } else if (kind.rfind("aten::max_pool", 0) == 0 || kind.rfind("aten::avg_pool", 0) == 0 ||
             kind.rfind("aten::adaptive_avg_pool", 0) == 0 || kind == "aten::mean") {
    translate_pool(node, kind);
  } else if (kind == "aten::linear") {
    const int w = tensor(node, 1);
    std::vector<int> in = {tensor(node, 0), w};
    if (!is_none(node, 2)) in.push_back(tensor(node, 2));
    if (needs_generic_layer(in)) return translate_aten(node, kind);
    emit(node, OpKind::kLinear, in, {}, parent(graph_.value(w).name));
  } else if (kind == "aten::cat" || kind == "aten::concat") {
    const Entry& list = arg(node, 0);
    if (list.kind != Entry::kTensorList) fail(node, "cat of something that is not a tensor list");
    if (!list.positions.empty()) return translate_aten(node, kind);  // constants among them
    OpAttrs a;
    a.dim = int_arg(node, 1, "dim");
    if (a.dim < 0) a.dim += static_cast<int64_t>(shape_of(list.values.at(0)).size());
    if (list.values.size() == 1) return alias(node, list.values[0]);
    emit(node, OpKind::kCat, list.values, a);
  } else if (kind == "aten::dropout" || kind == "aten::dropout_" ||
             kind == "aten::feature_dropout" || kind == "aten::feature_dropout_") {
    // p = 0 is the identity, as ATen's dropout returns its input: no node, no memory; so
    // is a dropout kept in evaluation mode.
    if (double_arg(node, 1, "p") == 0.0 || kept_in_evaluation(node, 2))
      return alias(node, tensor(node, 0));
    OpAttrs a;
    a.p = double_arg(node, 1, "p");
    // nn.Dropout1d/2d/3d: whole channels of a batched input.
    if (kind.find("feature") != std::string::npos) a.dropout_shape = DropoutShape::kChannel;
    emit(node, OpKind::kDropout, {tensor(node, 0)}, a);
  } else if (kind == "aten::flatten" || kind == "aten::view" || kind == "aten::reshape" ||
             kind == "aten::contiguous") {
    translate_reshape(node, kind);
  } else {
    translate_elementwise(node, kind);
  }
}

// Batch norm with running statistics: the specialised node, which updates them once per
// iteration however often a plan recomputes it; with or without affine parameters.
void Importer::translate_batch_norm(JitNode* node) {
  const bool affine = !is_none(node, 1);
  if (affine == is_none(node, 2) || is_none(node, 3) || is_none(node, 4))
    fail(node,
         "batch norm with running statistics and a weight without a bias (or a bias without "
         "a weight, or one running statistic without the other) is not supported");
  if (is_none(node, 6))
    fail(node, "batch norm with momentum=None (a cumulative average) is not supported");
  OpAttrs a;
  a.momentum = double_arg(node, 6, "momentum");
  a.eps = double_arg(node, 7, "eps");
  std::vector<int> inputs = {tensor(node, 0)};
  for (size_t i = affine ? 1 : 3; i <= 4; ++i) inputs.push_back(tensor(node, i));
  const std::string module = parent(graph_.value(inputs[1]).name);
  emit(node, OpKind::kBatchNorm, std::move(inputs), a, module);
}

void Importer::translate_conv(JitNode* node, const std::string& kind) {
  const bool general = kind == "aten::_convolution" || kind == "aten::convolution";
  const int x = tensor(node, 0);
  const int w = tensor(node, 1);
  std::vector<int> in = {x, w};
  if (!is_none(node, 2)) in.push_back(tensor(node, 2));
  const auto& ws = shape_of(w);
  const size_t spatial = ws.size() - 2;
  OpAttrs a;
  a.kernel.assign(ws.begin() + 2, ws.end());
  // String padding ('same', 'valid'), a weight or bias the model computes (weight
  // standardisation) or a parameter as the input: a generic node.
  if (!constant(node, 4, "padding").isIntList() || needs_generic_layer(in))
    return translate_aten(node, kind);
  a.stride = per_dim(ints_arg(node, 3, "stride"), spatial);
  a.padding = per_dim(ints_arg(node, 4, "padding"), spatial);
  a.dilation = per_dim(ints_arg(node, 5, "dilation"), spatial);
  bool transposed = false;
  if (general) {
    transposed = bool_arg(node, 6, "transposed");
    a.output_padding = per_dim(ints_arg(node, 7, "output_padding"), spatial);
    a.groups = int_arg(node, 8, "groups");
  } else {
    a.groups = int_arg(node, 6, "groups");
  }
  // Grouped or dilated transposed convolution: a generic node.
  const bool dilated =
      std::any_of(a.dilation.begin(), a.dilation.end(), [](int64_t d) { return d != 1; });
  if (transposed && (a.groups != 1 || dilated)) return translate_aten(node, kind);
  if (!transposed) a.output_padding.clear();
  emit(node, transposed ? OpKind::kConvTranspose : OpKind::kConv, in, a,
       parent(graph_.value(w).name));
}

void Importer::translate_element(JitNode* node, const std::string& kind) {
  const JitNode* made = node->input(0)->node();
  const std::string maker = made->kind().toQualString();
  if (kind == "prim::TupleUnpack") {
    if (maker != "prim::TupleConstruct" || made->inputs().size() != node->outputs().size())
      fail(node, "unpacking of a tuple the trace does not build");
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      Entry e = entry(made->inputs()[i]);
      entries_[node->outputs()[i]] = std::move(e);
    }
    return;
  }
  if (maker == "prim::TupleConstruct" || maker == "prim::ListConstruct") {
    if (maker == "prim::ListConstruct" && kind != "aten::__getitem__")
      return translate_aten(node, kind);
    int64_t i = int_arg(node, 1, "index");
    if (i < 0) i += static_cast<int64_t>(made->inputs().size());
    if (i < 0 || i >= static_cast<int64_t>(made->inputs().size()))
      fail(node, "index " + std::to_string(i) + " out of range");
    Entry e = entry(made->inputs()[i]);
    entries_[node->output()] = std::move(e);
    return;
  }
  if (maker == "prim::DictConstruct") {
    const c10::IValue key = constant(node, 1, "key");
    for (size_t i = 0; i + 1 < made->inputs().size(); i += 2) {
      const Entry& k = entry(made->inputs()[i]);
      if (k.kind == Entry::kConstant && k.constant == key) {
        Entry e = entry(made->inputs()[i + 1]);
        entries_[node->output()] = std::move(e);
        return;
      }
    }
    fail(node, "a key the dict does not hold");
  }
  if (kind == "aten::__getitem__") return translate_aten(node, kind);
  fail(node, "indexing of a tuple the trace does not build");
}

void Importer::translate_pool(JitNode* node, const std::string& kind) {
  const int x = tensor(node, 0);
  const size_t spatial = shape_of(x).size() - 2;
  // The specialised pooling runs 2-D and 3-D windows; 1-D pooling, max pooling that
  // returns its indices or is dilated, and a divisor override run on the generic path.
  if (shape_of(x).size() < 4 || spatial > 3) return translate_aten(node, kind);
  OpAttrs a;
  if (kind == "aten::mean") {
    // Global average pooling written as x.mean((2, 3)) (EfficientNet-style heads); any
    // other mean is a generic operator.
    if (node->inputs().size() < 3 || !constant(node, 1, "dim").isIntList() ||
        shape_of(x).size() < 3 || (node->inputs().size() > 3 && !is_none(node, 3)))
      return translate_aten(node, kind);
    std::vector<int64_t> dims = ints_arg(node, 1, "dim");
    for (auto& d : dims)
      if (d < 0) d += static_cast<int64_t>(spatial + 2);
    std::set<int64_t> got(dims.begin(), dims.end()), want;
    for (size_t d = 2; d < spatial + 2; ++d) want.insert(static_cast<int64_t>(d));
    if (got != want) return translate_aten(node, kind);
    a.output_size.assign(spatial, 1);
    const bool keepdim = bool_arg(node, 2, "keepdim");
    emit(node, OpKind::kAdaptiveAvgPool, {x}, a);
    if (!keepdim) {
      OpAttrs f;
      f.dim = 1;
      emit(node, OpKind::kFlatten, {entries_.at(node->output()).value}, f);
    }
    return;
  }
  if (kind.rfind("aten::adaptive_avg_pool", 0) == 0) {
    a.output_size = per_dim(ints_arg(node, 1, "output_size"), spatial);
    return emit(node, OpKind::kAdaptiveAvgPool, {x}, a);
  }
  const bool max = kind.rfind("aten::max_pool", 0) == 0;
  if (kind.find("with_indices") != std::string::npos) return translate_aten(node, kind);
  a.kernel = per_dim(ints_arg(node, 1, "kernel_size"), spatial);
  a.stride = per_dim(ints_arg(node, 2, "stride"), spatial, a.kernel);
  a.padding = per_dim(ints_arg(node, 3, "padding"), spatial, std::vector<int64_t>(spatial, 0));
  if (max) {
    for (auto d : ints_arg(node, 4, "dilation"))
      if (d != 1) return translate_aten(node, kind);
    a.ceil_mode = bool_arg(node, 5, "ceil_mode");
  } else {
    a.ceil_mode = bool_arg(node, 4, "ceil_mode");
    a.count_include_pad = bool_arg(node, 5, "count_include_pad");
    if (node->inputs().size() > 6 && !is_none(node, 6)) return translate_aten(node, kind);
  }
  emit(node, max ? OpKind::kMaxPool : OpKind::kAvgPool, {x}, a);
}

void Importer::translate_elementwise(JitNode* node, const std::string& kind) {
  static const std::map<std::string, OpKind> unary = {
      {"aten::relu", OpKind::kReLU},           {"aten::relu6", OpKind::kReLU6},
      {"aten::hardswish", OpKind::kHardswish}, {"aten::hardsigmoid", OpKind::kHardsigmoid},
      {"aten::silu", OpKind::kSiLU},           {"aten::sigmoid", OpKind::kSigmoid},
      {"aten::hardtanh", OpKind::kReLU6}};
  const std::string base = kind.back() == '_' ? kind.substr(0, kind.size() - 1) : kind;
  if (auto it = unary.find(base); it != unary.end()) {
    if (generic_path()) return translate_aten(node, kind);
    const int x = tensor(node, 0);
    if (base == "aten::hardtanh" &&
        (double_arg(node, 1, "min_val") != 0.0 || double_arg(node, 2, "max_val") != 6.0))
      return translate_aten(node, kind);
    OpAttrs a;
    // ReLU and ReLU6 have in-place implementations; the others run out of place.
    const bool has_inplace = it->second == OpKind::kReLU || it->second == OpKind::kReLU6;
    a.inplace = has_inplace && inplace_allowed(node, x);
    return emit(node, it->second, {x}, a);
  }
  if (base == "aten::add" || base == "aten::mul") {
    const Entry& self = arg(node, 0);
    // Arithmetic with a scalar, a parameter or a buffer: a generic operator.
    const Entry& other = arg(node, 1);
    if (self.kind != Entry::kTensor || other.kind != Entry::kTensor)
      return translate_aten(node, kind);
    const int a = tensor(node, 0), b = tensor(node, 1);
    if (base == "aten::add") {
      if ((node->inputs().size() > 2 && double_arg(node, 2, "alpha") != 1.0) ||
          shape_of(a) != shape_of(b))
        return translate_aten(node, kind);
      OpAttrs at;
      at.inplace = inplace_allowed(node, a);
      return emit(node, OpKind::kAdd, {a, b}, at);
    }
    // Multiplication: the operand that broadcasts goes second. Operands that broadcast
    // to each other ([N, L, 1] by [N, 1, L]) multiply on the generic path.
    const Value &va = graph_.value(a), &vb = graph_.value(b);
    const bool swap = va.shape.size() < vb.shape.size() ||
                      (va.shape.size() == vb.shape.size() && va.numel() < vb.numel());
    const std::vector<int> operands = swap ? std::vector<int>{b, a} : std::vector<int>{a, b};
    if (!broadcasts_to(shape_of(operands[1]), shape_of(operands[0])))
      return translate_aten(node, kind);
    return emit(node, OpKind::kMul, operands, {});
  }
  translate_aten(node, kind);
}

}  // namespace monet::torchscript
