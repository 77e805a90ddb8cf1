// The importer's generic path: an operator with no dedicated OpKind becomes an
// OpKind::kAten node that calls it through the dispatcher (aten_call.h).
#include <torch/csrc/jit/ir/ir.h>

#include "graph/aten_call.h"
#include "graph/torchscript_importer.h"

namespace monet::torchscript {
namespace {

// In-place operators as traced (mul_, clamp_) run out of place: their result is what a
// later reader sees, and the activation they overwrite is read by nobody after them.
bool read_after(const JitNode* node, const JitValue* v) {
  for (const auto& use : v->uses())
    if (use.user != node && !use.user->isBefore(node)) return true;
  return false;
}

}  // namespace

void Importer::translate_aten(JitNode* node, const std::string& kind) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema || kind.rfind("aten::", 0) != 0) fail(node, "unsupported operator '" + kind + "'");
  if (node->outputs().size() != 1 || !node->output()->type()->cast<c10::TensorType>())
    fail(node, "unsupported operator '" + kind +
                   "': monet takes operators returning one tensor (several outputs, "
                   "lists and scalars are not supported)");
  auto call = std::make_shared<AtenCall>();
  call->name = schema->name();
  call->overload = schema->overload_name();
  if (schema->is_mutable()) {
    if (call->name.back() != '_')
      fail(node, "unsupported operator '" + kind + "': it writes into an argument");
    if (arg(node, 0).kind != Entry::kTensor)
      fail(node, "in-place '" + kind + "' on a parameter or buffer is not supported");
    if (read_after(node, node->inputs()[0]))
      fail(node, "in-place '" + kind +
                     "' on a tensor that is read again afterwards is not supported; trace "
                     "the model with the out-of-place operator");
    call->name.pop_back();
  }
  std::vector<int> inputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<bool> differentiable;
  std::string module;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const Entry& e = arg(node, i);
    if (e.kind == Entry::kConstant) {
      call->arguments.push_back(e.constant);
      continue;
    }
    if (e.kind == Entry::kTensorList)
      fail(node, "unsupported operator '" + kind + "': a list of tensors as argument");
    const int v = tensor(node, i);
    const Value& value = graph_.value(v);
    if (value.kind == ValueKind::kParameter && module.empty()) module = parent(value.name);
    call->arguments.emplace_back();
    call->tensor_slots.push_back(static_cast<int>(i));
    inputs.push_back(v);
    shapes.push_back(value.shape);
    differentiable.push_back(value.kind == ValueKind::kActivation ||
                             value.kind == ValueKind::kParameter);
  }
  if (inputs.empty())
    fail(node, "unsupported operator '" + kind + "': it reads no tensor of the model");
  try {
    probe_aten_call(call.get(), shapes, differentiable);
  } catch (const AtenCallError& err) {
    fail(node, std::string("unsupported operator '") + kind + "': " + err.what());
  }
  OpAttrs a;
  a.aten = std::move(call);
  const std::string label = kind.substr(6);  // without "aten::"
  emit(node, OpKind::kAten, std::move(inputs), std::move(a), module, nullptr, label.c_str());
}

}  // namespace monet::torchscript
