// The importer's generic path: an operator with no dedicated OpKind becomes an
// OpKind::kAten node that calls it through the dispatcher (aten_call.h).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <optional>
#include <set>

#include "graph/aten_call.h"
#include "graph/aten_random.h"
#include "graph/torchscript/torchscript_importer.h"

namespace monet::torchscript {
namespace {

// In-place operators as traced (mul_, clamp_) run out of place: their result is what a
// later reader sees, and the activation they overwrite is read by nobody after them.
bool read_after(const JitNode* node, const JitValue* v) {
  for (const auto& use : v->uses())
    if (use.user != node && !use.user->isBefore(node)) return true;
  return false;
}

// Operators whose result depends on their first argument's shape and type only.
const std::set<std::string> kShapeOnly = {"aten::new_zeros", "aten::new_ones",   "aten::new_full",
                                          "aten::new_empty", "aten::zeros_like", "aten::ones_like",
                                          "aten::full_like", "aten::empty_like"};

// Operators whose result is uninitialised memory.
const std::set<std::string> kEmpty = {"aten::empty", "aten::empty_like", "aten::new_empty",
                                      "aten::empty_strided"};

// A constant for argument `i` of `node`'s schema: a number where the schema takes a
// tensor (the trace's prim::NumToTensor, which the importer keeps as a number) becomes
// the 0-dimensional tensor PyTorch made of it; `sparse` is false.
c10::IValue argument_constant(const JitNode* node, size_t i, const c10::IValue& v) {
  const auto& args = node->schema().arguments();
  // An embedding's sparse gradient (sparse=True) is dense here: gradients are dense
  // tensors in the plan's memory and in the fused updates.
  if (i < args.size() && args[i].name() == "sparse" && v.isBool()) return false;
  if (i >= args.size() || !args[i].type()->cast<c10::TensorType>() || v.isTensor()) return v;
  if (v.isInt()) return at::scalar_tensor(v.toScalar(), at::kLong);
  if (v.isDouble()) return at::scalar_tensor(v.toScalar(), at::kDouble);
  if (v.isBool()) return at::scalar_tensor(v.toScalar(), at::kBool);
  return v;
}

// The overload of `name` that the dispatcher knows, writes none of its arguments, and
// takes arguments of the types of `schema`'s, without argument `skipped` where given.
std::optional<std::string> overload_taking(const std::string& name,
                                           const c10::FunctionSchema& schema,
                                           std::optional<size_t> skipped = std::nullopt) {
  std::vector<std::string> wanted;
  for (size_t i = 0; i < schema.arguments().size(); ++i)
    if (skipped != i) wanted.push_back(schema.arguments()[i].type()->str());
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const auto& op : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name))) {
    const c10::FunctionSchema& other = op->schema();
    if (other.is_mutable() || other.arguments().size() != wanted.size()) continue;
    bool same = true;
    for (size_t i = 0; same && i < wanted.size(); ++i)
      same = other.arguments()[i].type()->str() == wanted[i];
    if (same && dispatcher.findSchema({name, other.overload_name()})) return other.overload_name();
  }
  return std::nullopt;
}

// The overload of the out-of-place operator `name` that takes what the in-place `schema`
// takes: its own name where there is one (mul_.Tensor, mul.Tensor), else the one of the
// same argument types (bernoulli_.float, bernoulli.p). None when there is none.
std::optional<std::string> out_of_place_overload(const std::string& name,
                                                 const c10::FunctionSchema& schema) {
  if (c10::Dispatcher::singleton().findSchema({name, schema.overload_name()}))
    return schema.overload_name();
  return overload_taking(name, schema);
}

// Operators whose result's shape follows their input's values, not its shape.
const std::set<std::string> kValueShaped = {
    "aten::nonzero",       "aten::nonzero_numpy", "aten::argwhere",
    "aten::masked_select", "aten::unique",        "aten::_unique",
    "aten::_unique2",      "aten::unique_dim",    "aten::unique_consecutive"};

}  // namespace

void Importer::refuse_value_shaped(JitNode* node, const std::string& kind) {
  const Entry::Kind second = node->inputs().size() > 1 ? arg(node, 1).kind : Entry::kConstant;
  bool mask_index = false;  // x[mask]: as many rows as the mask has true values
  if (kind == "aten::index" && second == Entry::kTensorList)
    for (int v : arg(node, 1).values)
      mask_index =
          mask_index || graph_.value(v).dtype == at::kBool || graph_.value(v).dtype == at::kByte;
  // repeat_interleave by a tensor the model computes (not by a number or a constant)
  const bool repeats = kind == "aten::repeat_interleave" && second == Entry::kTensor;
  if (!mask_index && !repeats && !kValueShaped.count(kind)) return;
  fail(node, "'" + kind + "'" + (mask_index ? " with a boolean mask" : "") +
                 ": its result's shape follows the values of a tensor the model computes, and "
                 "a plan fixes every shape; multiply by the mask or use torch.where (a loss: "
                 "ignore_index) instead");
}

bool Importer::skip_state_update(JitNode* node, const std::string& kind) {
  if (kind.back() != '_' || !node->maybeSchema() || !node->schema().is_mutable() ||
      node->inputs().empty())
    return false;
  const auto it = entries_.find(node->inputs()[0]);
  if (it == entries_.end() || it->second.path.empty() ||
      (it->second.kind != Entry::kState && it->second.kind != Entry::kConstant))
    return false;
  const Entry written = it->second;
  // Batch norm's num_batches_tracked += 1 in a train-mode trace: not part of the
  // computation being trained (batch norm updates its running statistics itself).
  const bool parameter = state_.count(written.path) && state_.at(written.path).second;
  if (!ends_with(written.path, "num_batches_tracked")) {
    if (!parameter) return false;  // written when the iteration ends (translate_aten)
    fail(node, "in-place '" + kind + "' on the parameter '" + written.path +
                   "' is not supported: it would update the model's parameters in the "
                   "forward; update it outside forward()");
  }
  for (const JitValue* output : node->outputs()) entries_[output] = written;
  return true;
}

bool Importer::fold_constants(JitNode* node, const std::string& kind) {
  if (kind.rfind("aten::", 0) != 0 || !node->maybeSchema()) return false;
  if (skip_state_update(node, kind)) return true;
  // Random draws (stochastic depth's noise) are new at every step: a node, not a constant.
  if (draws_random(node->schema())) return false;
  torch::jit::Stack stack;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const auto it = entries_.find(node->inputs()[i]);
    if (it == entries_.end()) return false;
    const Entry& e = it->second;
    if (e.kind == Entry::kConstant) {
      stack.push_back(argument_constant(node, i, e.constant));
    } else if (i == 0 && kShapeOnly.count(kind) && e.kind == Entry::kTensor) {
      const Value& v = graph_.value(e.value);
      stack.emplace_back(at::zeros(v.shape, at::dtype(v.dtype)));
    } else {
      return false;
    }
  }
  try {
    node->getOperation()(stack);
  } catch (const c10::Error& e) {
    fail(node, "'" + kind + "' on constants failed: " + e.what_without_backtrace());
  }
  if (stack.size() != node->outputs().size())
    fail(node, "'" + kind + "' on constants gave " + std::to_string(stack.size()) + " values");
  // An uninitialised tensor (torch.empty, later filled) is zeros: its contents are then the
  // same at every import, as the fingerprint that hashes the trace's constants needs.
  if (kEmpty.count(kind) && stack.size() == 1 && stack[0].isTensor()) stack[0].toTensor().zero_();
  for (size_t i = 0; i < stack.size(); ++i)
    entries_[node->outputs()[i]] = constant_entry(std::move(stack[i]));
  return true;
}

std::optional<int> Importer::buffer_written(JitNode* node, size_t i) {
  const Entry& e = arg(node, i);
  if (e.kind == Entry::kTensor) {
    const auto it = buffer_of_value_.find(e.value);
    return it == buffer_of_value_.end() ? std::nullopt : std::optional<int>(it->second);
  }
  if ((e.kind != Entry::kState && e.kind != Entry::kConstant) || e.path.empty() ||
      !state_.count(e.path) || state_.at(e.path).second)
    return std::nullopt;
  return state_value(node, e.path);
}

void Importer::write_buffer(const JitValue* result, int buffer) {
  const int value = entries_.at(result).value;
  const int id = graph_.value(value).producer;
  if (const auto previous = buffer_writer_.find(buffer); previous != buffer_writer_.end()) {
    auto call = std::make_shared<AtenCall>(*graph_.node(previous->second).attrs.aten);
    call->writes_buffer.reset();  // a later call writes the buffer's final value
    graph_.set_aten_call(previous->second, call);
  }
  auto call = std::make_shared<AtenCall>(*graph_.node(id).attrs.aten);
  call->writes_buffer = buffer;
  // Nothing flows back through it: PyTorch refuses `out=` under autograd, and a buffer is
  // updated under no_grad.
  call->no_gradient = true;
  graph_.set_aten_call(id, call);
  buffer_writer_[buffer] = id;
  buffer_of_value_[value] = buffer;
}

void Importer::check_in_place_target(JitNode* node, const std::string& kind, size_t i) {
  // Into a tensor the model computes, or into a constant of the trace (MultiheadAttention
  // fills a zeros_like(mask) in place): the out-of-place operator, its result in the
  // written tensor's place. Not into the model's state (buffers: buffer_written).
  const Entry& written = arg(node, i);
  if (written.kind != Entry::kTensor && (written.kind != Entry::kConstant || !written.path.empty()))
    fail(node, "in-place '" + kind + "' on a parameter or buffer is not supported");
  if (written.kind == Entry::kTensor) {  // nor into a view of one (weight.detach())
    const Value& b = graph_.value(storage_base(graph_, written.value));
    if (b.kind == ValueKind::kParameter || b.kind == ValueKind::kBuffer)
      fail(node, "in-place '" + kind + "' on a view of '" + b.name +
                     "' is not supported: it would update the model's state in the forward "
                     "(nn.Embedding's max_norm renormalises its weight so)");
  }
  if (read_after(node, node->inputs()[i]))
    fail(node, "in-place '" + kind +
                   "' on a tensor that is read again afterwards is not supported; trace "
                   "the model with the out-of-place operator");
}

void Importer::translate_aten(JitNode* node, const std::string& kind,
                              const std::map<size_t, c10::IValue>& overrides) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  // Any operator the dispatcher knows: ATen's, and those a library registers
  // (torchvision::deform_conv2d, loaded with torchvision in Python).
  if (!schema || kind.rfind("prim::", 0) == 0) fail(node, "unsupported operator '" + kind + "'");
  refuse_value_shaped(node, kind);
  const std::vector<Result> results = used_results(node, kind);
  OutOfPlace call{schema->name(), schema->overload_name(), std::nullopt, std::nullopt};
  if (schema->is_mutable()) call = out_of_place_call(node, kind);
  const std::string &name = call.name, &overload = call.overload;
  std::vector<c10::IValue> arguments;
  std::vector<int> slots;
  std::vector<int> inputs, list_indices;
  std::string module;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    if (call.out == i) continue;
    if (const auto o = overrides.find(i); o != overrides.end()) {
      arguments.push_back(o->second);
      continue;
    }
    const Entry& e = arg(node, i);
    if (e.kind == Entry::kConstant) {
      arguments.push_back(argument_constant(node, i, e.constant));
      continue;
    }
    // A list of tensors (einsum's operands, a recurrent layer's weights): each element is
    // a node input at this argument, and its constants are the argument's.
    const bool list = e.kind == Entry::kTensorList;
    arguments.push_back(list && !e.positions.empty() ? e.constant : c10::IValue());
    const std::vector<int> values = list ? e.values : std::vector<int>{tensor(node, i)};
    for (size_t j = 0; j < values.size(); ++j) {
      const Value& value = graph_.value(values[j]);
      if (value.kind == ValueKind::kParameter && module.empty()) module = parent(value.name);
      slots.push_back(static_cast<int>(i));
      list_indices.push_back(!list                 ? -1
                             : e.positions.empty() ? static_cast<int>(j)
                                                   : e.positions[j]);
      inputs.push_back(values[j]);
    }
  }
  // A random draw of constants' shapes (stochastic depth's noise) is a node of its own
  // that reads no value; anything else computed from constants alone is folded.
  if (inputs.empty() && !draws_random(*schema))
    fail(node, "unsupported operator '" + kind + "': it reads no tensor of the model");
  const std::string label = kind.substr(kind.find("::") + 2);  // without "aten::"
  const AtenInputs in = aten_inputs_of(graph_, inputs);
  // Results of one random call (an LSTM's output and state with dropout) draw alike.
  const int stream = results.size() > 1 ? -(++shared_random_streams_) : 0;
  for (const Result& result : results) {
    OpAttrs a;
    try {
      a.aten = with_gradient_of_inputs(
          make_aten_call(name, overload, arguments, slots, in.shapes, in.differentiable, in.strides,
                         in.dtypes, result.index, list_indices),
          in);
    } catch (const AtenCallError& err) {
      fail(node, std::string("unsupported operator '") + kind + "': " + err.what());
    }
    if (a.aten->draws_random && stream < 0) {
      auto shared = std::make_shared<AtenCall>(*a.aten);
      shared->random_stream = stream;
      a.aten = std::move(shared);
    }
    if (kind == "aten::gelu") a.lossy = options_.lossy;
    emit(node, OpKind::kAten, inputs, std::move(a), module, result.value, label.c_str());
    if (call.buffer) write_buffer(result.value, *call.buffer);
  }
}

Importer::OutOfPlace Importer::out_of_place_call(JitNode* node, const std::string& kind) {
  const c10::FunctionSchema& schema = node->schema();
  OutOfPlace call{schema.name(), schema.overload_name(), std::nullopt, std::nullopt};
  if (call.name.back() == '_') {  // in place: into its first argument
    call.buffer = buffer_written(node, 0);
    if (!call.buffer) check_in_place_target(node, kind);
    call.name.pop_back();
    const std::optional<std::string> overload = out_of_place_overload(call.name, schema);
    if (!overload) fail(node, "unsupported operator '" + kind + "': it has no out-of-place form");
    call.overload = *overload;
    return call;
  }
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].alias_info() || !args[i].alias_info()->isWrite()) continue;
    if (call.out)
      fail(node, "unsupported operator '" + kind + "': it writes into several arguments");
    call.out = i;
  }
  if (!call.out || *call.out >= node->inputs().size())
    fail(node, "unsupported operator '" + kind + "': it writes into an argument");
  call.buffer = buffer_written(node, *call.out);
  if (!call.buffer) check_in_place_target(node, kind, *call.out);
  // div.Tensor for div.out: the overload taking all but `out`.
  const std::optional<std::string> overload = overload_taking(call.name, schema, call.out);
  if (!overload) fail(node, "unsupported operator '" + kind + "': it has no form without out=");
  call.overload = *overload;
  return call;
}

std::vector<Importer::Result> Importer::used_results(JitNode* node, const std::string& kind) {
  std::vector<Result> results;
  const auto outputs = node->outputs();
  // A list of tensors (tensor_split, meshgrid) that the trace unpacks: each element the
  // model uses is a node of its own, its value the unpacked one.
  if (outputs.size() == 1 && outputs[0]->type()->cast<c10::ListType>() &&
      outputs[0]->uses().size() == 1 &&
      outputs[0]->uses()[0].user->kind() == c10::Symbol::fromQualString("prim::ListUnpack")) {
    const auto pieces = outputs[0]->uses()[0].user->outputs();
    for (size_t i = 0; i < pieces.size(); ++i)
      if (pieces[i]->hasUses()) results.push_back({static_cast<int>(i), pieces[i]});
    Entry unpacked;
    unpacked.kind = Entry::kUnpackedList;
    entries_[outputs[0]] = unpacked;
    return results;
  }
  // The results the model uses (the first when it uses none): each becomes a node.
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i]->hasUses()) results.push_back({static_cast<int>(i), outputs[i]});
  if (results.empty() && !outputs.empty()) results.push_back({0, outputs[0]});
  for (const Result& r : results)
    if (!r.value->type()->cast<c10::TensorType>())
      fail(node, "unsupported operator '" + kind +
                     "': monet takes operators whose results are tensors or lists of tensors "
                     "unpacked into tensors (scalars and other results are not supported)");
  if (results.empty()) fail(node, "unsupported operator '" + kind + "': it returns nothing");
  return results;
}

}  // namespace monet::torchscript
