#include "ops/aten_impls.h"

#include <algorithm>
#include <stdexcept>

#include "graph/aten_call.h"
#include "ops/bit_mask.h"
#include "ops/few_bit_gelu.h"

namespace monet {
namespace {

using P = BackwardPart;

const std::string& op_of(const Node& n) { return n.attrs.aten->name; }

// The activation inputs whose values the re-running backward needs: those PyTorch's
// derivative saves, or all when it saves the output (recomputed from them).
std::vector<int> rerun_reads(const Graph& g, const Node& n) {
  std::vector<int> reads;
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (g.value(n.inputs[k]).kind == ValueKind::kActivation &&
        (n.attrs.aten->saves_output || n.attrs.aten->saves_input[k]))
      reads.push_back(static_cast<int>(k));
  return reads;
}

BackwardImplInfo rerun(const Graph& g, const Node& n) {
  return make_backward_impl("rerun", P::kAll, rerun_reads(g, n), false, false,
                            "re-runs the operator under autograd from its inputs (stand-ins of "
                            "their shape where PyTorch's derivative does not read them)");
}

// The activation inputs among the first `count`.
std::vector<int> activations_among(const Graph& g, const Node& n, size_t count) {
  std::vector<int> reads;
  for (size_t k = 0; k < count && k < n.inputs.size(); ++k)
    if (g.value(n.inputs[k]).kind == ValueKind::kActivation) reads.push_back(static_cast<int>(k));
  return reads;
}

// The input's position when it is an activation (its backward reads it), else none.
std::vector<int> input_read(const Graph& g, const Node& n) { return activations_among(g, n, 1); }

}  // namespace

bool is_plain_batched_matmul(const Graph& g, const Node& n) {
  if (op_of(n) != "aten::matmul" && op_of(n) != "aten::bmm") return false;
  if (n.inputs.size() != 2) return false;
  const auto& a = g.value(n.inputs[0]).shape;
  const auto& b = g.value(n.inputs[1]).shape;
  return a.size() >= 2 && a.size() == b.size() && std::equal(a.begin(), a.end() - 2, b.begin());
}

bool is_plain_softmax(const Node& n) {
  return op_of(n) == "aten::softmax" && n.attrs.aten->arguments.size() == 3 &&
         n.attrs.aten->arguments[2].isNone();
}

bool is_plain_cross_entropy(const Graph& g, const Node& n) {
  if (op_of(n) != "aten::cross_entropy_loss" || n.inputs.size() != 2) return false;
  const auto& args = n.attrs.aten->arguments;  // (input, target, weight, reduction,
  if (args.size() != 6 || !args[2].isNone() || !args[3].isInt() ||   // ignore_index,
      args[3].toInt() != at::Reduction::Mean || !args[4].isInt() ||  // label_smoothing)
      !args[5].isDouble() || args[5].toDouble() != 0.0)
    return false;
  const Value& logits = g.value(n.inputs[0]);
  const Value& target = g.value(n.inputs[1]);  // class indices, not probabilities
  return target.dtype == at::kLong && target.shape.size() + 1 == logits.shape.size() &&
         logits.shape.size() >= 2;
}

bool is_aten_norm(const Node& n) {
  return op_of(n) == "aten::layer_norm" || op_of(n) == "aten::group_norm";
}

int64_t aten_state_bytes(const Graph& g, const Node& n) {
  if (n.attrs.aten->writes_buffer) return g.value(n.output).bytes();  // the buffer's next value
  if (!is_aten_norm(n)) return 0;
  const Value& x = g.value(n.inputs[0]);
  const c10::IValue& what = n.attrs.aten->arguments.at(1);  // normalised shape, or groups
  int64_t rows = x.numel();
  if (what.isInt())
    rows = x.shape[0] * what.toInt();  // group norm: N x G
  else
    for (int64_t d : what.toIntVector()) rows /= d;
  return 2 * rows * static_cast<int64_t>(c10::elementSize(x.dtype));  // mean and rstd
}

double aten_scalar_argument(const Node& n, size_t position) {
  return n.attrs.aten->arguments.at(position).toScalar().toDouble();
}

bool offers_lossy_gelu(const Node& n) {
  return op_of(n) == "aten::gelu" && n.attrs.lossy == LossyOffer::kOffered;
}

namespace {

// An operator with backwards of its own (aten_backward_impls' specialised branches); the
// others get the generic ones.
bool has_specialised_backward(const Graph& g, const Node& n) {
  const std::string& op = op_of(n);
  return op == "aten::tanh" || op == "aten::gelu" || op == "aten::elu" ||
         op == "aten::leaky_relu" || is_plain_softmax(n) || is_plain_batched_matmul(g, n) ||
         is_aten_norm(n) || is_plain_cross_entropy(g, n);
}

}  // namespace

bool offers_autograd_node(const Graph& g, const Node& n) {
  // Probed only for results that are no view, of floating type, whose derivative keeps no
  // output (make_aten_call): false for every other call.
  return n.attrs.aten->autograd_keeps_inputs_by_leaf && !n.attrs.aten->no_gradient &&
         !has_specialised_backward(g, n);
}

std::vector<int> autograd_saved_activations(const Graph& g, const Node& n) {
  std::vector<int> reads;
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (g.value(n.inputs[k]).kind == ValueKind::kActivation && n.attrs.aten->saves_input[k])
      reads.push_back(static_cast<int>(k));
  return reads;
}

std::vector<ForwardImplInfo> aten_forward_impls(const Graph& g, const Node& n) {
  if (n.attrs.aten->output_aliases_input) {
    auto view = make_forward_impl("view", false, false,
                                  n.attrs.aten->name + ": a view of the input (no copy)");
    view.output_aliases_input = true;
    return {view};
  }
  std::vector<ForwardImplInfo> v = {
      make_forward_impl("default", false, false, n.attrs.aten->name + " through the dispatcher")};
  if (op_of(n) == "aten::leaky_relu")
    v.push_back(make_forward_impl("mask", false, true, "out of place, plus a 1-bit sign mask"));
  if (offers_lossy_gelu(n)) {
    auto codes = make_forward_impl("lossy_4bit", false, true,
                                   "LOSSY: out of place, plus a 4-bit code of the input");
    codes.lossy = true;
    v.push_back(codes);
  }
  if (offers_autograd_node(g, n))
    v.push_back(make_forward_impl("autograd", false, true,
                                  "under autograd: keeps the operator's autograd node (what "
                                  "PyTorch's derivative saves), as PyTorch does"));
  if (is_aten_norm(n))
    v.front().description =
        "ATen's native norm; the first forward keeps the statistics, recomputations reuse them";
  return v;
}

std::vector<BackwardImplInfo> aten_backward_impls(const Graph& g, const Node& n) {
  // An integer or boolean result (a mask, indices) or a detached one has no gradient: no
  // backward.
  if (!takes_gradient(g, n.output)) return {};
  if (!has_specialised_backward(g, n)) {
    if (!offers_autograd_node(g, n)) return {rerun(g, n)};
    return {rerun(g, n),
            make_backward_impl("autograd", P::kAll, autograd_saved_activations(g, n), false, true,
                               "runs the kept autograd node on the live inputs it saved (no "
                               "re-run), as PyTorch's backward does",
                               {"autograd"})};
  }
  const std::string& op = op_of(n);
  const auto output =
      make_backward_impl("output", P::kAll, {}, true, false, "from the output (its derivative)");
  const auto input = make_backward_impl("input", P::kAll, input_read(g, n), false, false,
                                        "from the input, with ATen's derivative");
  if (op == "aten::tanh") return {output, rerun(g, n)};
  if (is_plain_softmax(n))
    return {make_backward_impl("output", P::kAll, {}, true, false,
                               "from the output (softmax's derivative), as PyTorch does"),
            rerun(g, n)};
  if (is_plain_batched_matmul(g, n))
    return {make_backward_impl("inputs", P::kAll, activations_among(g, n, 2), false, false,
                               "from both inputs: two matmuls, no re-run, as PyTorch does"),
            rerun(g, n)};
  if (is_plain_cross_entropy(g, n))
    return {make_backward_impl("softmax", P::kAll, activations_among(g, n, 2), false, false,
                               "(softmax(logits) - one-hot) x grad / count, in one tensor of "
                               "the logits' size"),
            rerun(g, n)};
  if (is_aten_norm(n))
    return {make_backward_impl("input", P::kAll, input_read(g, n), false, false,
                               "from the input and the statistics (native backward)"),
            make_backward_impl("output", P::kAll, {}, true, false,
                               "from the output and the statistics: x_hat = (y - b) / w")};
  if (op == "aten::gelu") {
    if (!offers_lossy_gelu(n)) return {input};
    return {input, make_backward_impl("lossy_4bit", P::kAll, {}, false, true,
                                      "LOSSY: a piecewise-constant derivative from the 4-bit "
                                      "code (few-bit backward)",
                                      {"lossy_4bit"})};
  }
  if (op == "aten::elu") {
    if (aten_scalar_argument(n, 1) >= 0) return {input, output};
    return {input};
  }
  if (op == "aten::leaky_relu") {
    std::vector<BackwardImplInfo> v = {input};
    if (aten_scalar_argument(n, 1) >= 0) v.push_back(output);
    v.push_back(make_backward_impl("mask", P::kAll, {}, false, true,
                                   "from the 1-bit sign mask (derivative 1 or the slope)",
                                   {"mask"}));
    return v;
  }
  throw std::logic_error(n.name + ": " + op + " is listed as specialised but has no backward");
}

int64_t aten_intermediate_bytes(const Graph& g, const Node& n, const std::string& forward_impl) {
  if (op_of(n) == "aten::leaky_relu" && forward_impl == "mask")
    return packed_bits_bytes(g.value(n.inputs[0]).numel());
  if (forward_impl == "autograd") return n.attrs.aten->autograd_saved_bytes;
  if (offers_lossy_gelu(n) && forward_impl == "lossy_4bit")
    return few_bit_gelu_bytes(g.value(n.inputs[0]).numel());
  return 0;
}

}  // namespace monet
