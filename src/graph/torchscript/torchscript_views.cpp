#include <algorithm>
#include <cmath>

#include "graph/torchscript/torchscript_importer.h"

namespace monet::torchscript {

void Importer::translate_reshape(JitNode* node, const std::string& kind) {
  if (arg(node, 0).kind == Entry::kGroupedChannels) return ungroup_channels(node, kind);
  const int x = tensor(node, 0);
  // A non-contiguous view (a generic permute's, transpose's): contiguous() copies it, and
  // flatten may have to; both are then generic.
  const bool strided = !view_strides(graph_, x).empty();
  if (kind == "aten::contiguous") return strided ? translate_aten(node, kind) : alias(node, x);
  const auto& s = shape_of(x);
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = 0;
  if (kind == "aten::flatten") {
    start = int_arg(node, 1, "start_dim");
    int64_t end = int_arg(node, 2, "end_dim");
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    if (end != rank - 1) return translate_aten(node, kind);
  } else {
    // view / reshape to the shape flatten(start) gives, for some start, or the channels
    // split in groups (the first step of a channel shuffle).
    const std::vector<int64_t> want = target_shape(node, graph_.value(x).numel());
    if (want == s) return alias(node, x);
    if (rank >= 2 && want.size() == s.size() + 1 && want[0] == s[0] && want[1] * want[2] == s[1] &&
        std::equal(want.begin() + 3, want.end(), s.begin() + 2)) {
      Entry e;
      e.kind = Entry::kGroupedChannels;
      e.value = x;
      e.groups = want[1];
      e.steps = {node};
      entries_[node->output()] = e;
      return;
    }
    start = static_cast<int64_t>(want.size()) - 1;
    bool ok = start >= 0 && start < rank;
    for (int64_t j = 0; ok && j < start; ++j) ok = want[j] == s[j];
    if (!ok) return translate_aten(node, kind);
  }
  if (start == rank - 1) return alias(node, x);
  if (strided) return translate_aten(node, kind);
  OpAttrs a;
  a.dim = start;
  emit(node, OpKind::kFlatten, {x}, a);
}

std::vector<int64_t> Importer::target_shape(const JitNode* node, int64_t numel) const {
  std::vector<int64_t> want = ints_arg(node, 1, "shape");
  int64_t known = 1;
  for (auto d : want)
    if (d != -1) known *= d;
  for (auto& d : want)
    if (d == -1) d = known > 0 ? numel / known : 0;
  return want;
}

void Importer::ungroup_channels(JitNode* node, const std::string& kind) {
  const Entry grouped = arg(node, 0);
  if (kind == "aten::contiguous") {
    entries_[node->output()] = grouped;
    return;
  }
  const int x = grouped.value;
  bool back = false;  // to x's own shape
  if (kind == "aten::flatten") {
    back = int_arg(node, 1, "start_dim") == 1 && int_arg(node, 2, "end_dim") == 2;
  } else {
    back = target_shape(node, graph_.value(x).numel()) == shape_of(x);
  }
  if (!back) return translate_aten(node, kind);  // not a channel shuffle: generic views
  if (!grouped.transposed) return alias(node, x);
  OpAttrs a;
  a.groups = grouped.groups;
  emit(node, OpKind::kChannelShuffle, {x}, a);
}

void Importer::translate_transpose(JitNode* node, const std::string& kind) {
  const Entry& in = arg(node, 0);
  if (in.kind == Entry::kTensor || in.kind == Entry::kState) return translate_aten(node, kind);
  bool swaps_groups = false;  // swaps dimensions 1 and 2 and nothing else
  if (kind == "aten::transpose") {
    const int64_t rank = in.kind == Entry::kGroupedChannels
                             ? static_cast<int64_t>(shape_of(in.value).size()) + 1
                             : 0;
    int64_t d0 = int_arg(node, 1, "dim0"), d1 = int_arg(node, 2, "dim1");
    if (d0 < 0) d0 += rank;
    if (d1 < 0) d1 += rank;
    swaps_groups = std::min(d0, d1) == 1 && std::max(d0, d1) == 2;
  } else {
    const std::vector<int64_t> perm = ints_arg(node, 1, "dims");
    swaps_groups = perm.size() >= 3 && perm[0] == 0 && perm[1] == 2 && perm[2] == 1;
    for (size_t i = 3; swaps_groups && i < perm.size(); ++i)
      swaps_groups = perm[i] == static_cast<int64_t>(i);
  }
  if (in.kind != Entry::kGroupedChannels || !swaps_groups) return translate_aten(node, kind);
  Entry out = in;
  out.transposed = !in.transposed;
  out.steps.push_back(node);
  entries_[node->output()] = out;
}

int Importer::grouped_channels_value(const Entry& grouped) {
  const std::vector<JitNode*> steps = grouped.steps;  // `grouped` may move as entries are added
  for (JitNode* step : steps)
    if (entries_.at(step->output()).kind != Entry::kTensor)
      translate_aten(step, step->kind().toQualString());
  return entries_.at(steps.back()->output()).value;
}

void Importer::translate_split(JitNode* node, const std::string& kind) {
  const int x = tensor(node, 0);
  const auto& s = shape_of(x);
  Entry e;
  e.kind = Entry::kPieces;
  e.value = x;
  e.dim = int_arg(node, 2, "dim");
  if (e.dim < 0) e.dim += static_cast<int64_t>(s.size());
  if (e.dim < 0 || e.dim >= static_cast<int64_t>(s.size())) fail(node, "dimension out of range");
  const int64_t size = s[e.dim];
  const bool chunk = kind.find("chunk") != std::string::npos;
  const c10::IValue& sizes = constant(node, 1, chunk ? "chunks" : "split_size");
  if (sizes.isIntList()) {
    e.lengths = sizes.toIntVector();
  } else {
    const int64_t n = int_arg(node, 1, chunk ? "chunks" : "split_size");
    if (n < 1) fail(node, "the number or size of pieces must be positive");
    const int64_t piece = chunk ? (size + n - 1) / n : n;  // torch.chunk's ceiling division
    for (int64_t at = 0; at < size; at += piece) e.lengths.push_back(std::min(piece, size - at));
  }
  int64_t total = 0;
  for (auto l : e.lengths) total += l;
  if (total != size)
    fail(node, "pieces of " + std::to_string(total) + " entries for a dimension of " +
                   std::to_string(size));
  entries_[node->output()] = e;
}

void Importer::translate_unpack(JitNode* node) {
  const Entry& list = arg(node, 0);
  const auto outputs = node->outputs();
  if (list.kind == Entry::kUnpackedList) return;  // its pieces are nodes (translate_aten)
  if (list.kind == Entry::kConstant && list.constant.isTensorList()) {
    // A list computed from constants (meshgrid of aranges): each piece a constant.
    const c10::List<at::Tensor> pieces = list.constant.toTensorList();
    if (pieces.size() != outputs.size())
      fail(node, "unpacking " + std::to_string(pieces.size()) + " tensors into " +
                     std::to_string(outputs.size()) + " values");
    for (size_t i = 0; i < pieces.size(); ++i)
      entries_[outputs[i]] = constant_entry(c10::IValue(pieces.get(i)));
    return;
  }
  if (list.kind == Entry::kTensorList && !list.positions.empty() &&
      list.constant.toTensorList().size() == outputs.size()) {  // constants among them
    const Entry elements = list;                                // alias() may rehash entries_
    const c10::List<at::Tensor> all = elements.constant.toTensorList();
    for (size_t i = 0; i < outputs.size(); ++i) entries_[outputs[i]] = constant_entry(all.get(i));
    for (size_t j = 0; j < elements.values.size(); ++j)
      alias(node, elements.values[j], outputs[elements.positions[j]]);
    return;
  }
  const size_t count = list.kind == Entry::kPieces       ? list.lengths.size()
                       : list.kind == Entry::kTensorList ? list.values.size()
                                                         : 0;
  if (count == 0) fail(node, "unpacking of something that is not a list of tensors");
  if (count != outputs.size())
    fail(node, "unpacking " + std::to_string(count) + " tensors into " +
                   std::to_string(outputs.size()) + " values");
  if (list.kind == Entry::kTensorList) {
    for (size_t i = 0; i < count; ++i) alias(node, list.values[i], outputs[i]);
    return;
  }
  const Entry pieces = list;  // emit() may rehash entries_
  int64_t start = 0;
  for (size_t i = 0; i < count; ++i) {
    const int64_t length = pieces.lengths[i];
    if (count == 1) {
      alias(node, pieces.value, outputs[i]);
    } else if (outputs[i]->hasUses()) {
      OpAttrs a;
      a.dim = pieces.dim;
      a.start = start;
      a.length = length;
      emit(node, OpKind::kSlice, {pieces.value}, a, "", outputs[i]);
    }
    start += length;
  }
}

// Arithmetic on numbers (sizes read by aten::size, as in channels // groups) is done
// here: the importer knows every shape. Returns false when an operand is a tensor.
bool Importer::fold_arithmetic(JitNode* node, const std::string& kind) {
  static const std::set<std::string> kArithmetic = {
      "aten::add",          "aten::sub",      "aten::mul",      "aten::div",
      "aten::floor_divide", "aten::floordiv", "aten::remainder"};
  if (!kArithmetic.count(kind) || node->inputs().size() < 2) return false;
  c10::Scalar operand[2];
  for (size_t i = 0; i < 2; ++i) {
    auto it = entries_.find(node->inputs()[i]);
    if (it == entries_.end() || it->second.kind != Entry::kConstant) return false;
    const c10::IValue& c = it->second.constant;
    if (c.isInt() || c.isDouble())
      operand[i] = c.toScalar();
    else if (c.isTensor() && c.toTensor().dim() == 0)  // not [1, 1]: its shape is kept
      operand[i] = c.toTensor().item();
    else
      return false;
  }
  const bool ints = operand[0].isIntegral(false) && operand[1].isIntegral(false);
  const double a = operand[0].toDouble(), b = operand[1].toDouble();
  std::string rounding;
  if (kind == "aten::div" && node->inputs().size() > 2 && !is_none(node, 2))
    rounding = constant(node, 2, "rounding_mode").toStringRef();
  const bool divides = kind == "aten::div" || kind == "aten::floor_divide" ||
                       kind == "aten::floordiv" || kind == "aten::remainder";
  if (divides && b == 0) fail(node, "division by zero in a size computation");
  double r = 0;
  if (kind == "aten::add" || kind == "aten::sub") {
    const double alpha = node->inputs().size() > 2 ? double_arg(node, 2, "alpha") : 1.0;
    r = kind == "aten::add" ? a + alpha * b : a - alpha * b;
  } else if (kind == "aten::mul") {
    r = a * b;
  } else if (kind == "aten::remainder") {
    r = a - std::floor(a / b) * b;
  } else if (kind == "aten::div" && rounding.empty()) {
    entries_[node->output()] = constant_entry(c10::IValue(a / b));
    return true;
  } else {
    r = rounding == "trunc" ? std::trunc(a / b) : std::floor(a / b);
  }
  entries_[node->output()] =
      constant_entry(ints ? c10::IValue(static_cast<int64_t>(r)) : c10::IValue(r));
  return true;
}

}  // namespace monet::torchscript
