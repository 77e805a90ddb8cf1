#include "graph/aten_call.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/memory_tracker.h"
#include "graph/aten_random.h"
#include "graph/graph.h"

namespace monet {
namespace {

// Whether the operator's one result is a list of tensors (tensor_split, meshgrid).
bool returns_tensor_list(const c10::FunctionSchema& schema) {
  if (schema.returns().size() != 1) return false;
  const auto list = schema.returns()[0].type()->cast<c10::ListType>();
  return list && list->getElementType()->kind() == c10::TypeKind::TensorType;
}

std::string qualified(const AtenCall& c) {
  return c.overload.empty() ? c.name : c.name + "." + c.overload;
}

// FNV-1a over a tensor's bytes (contiguous float64 copy): constant tensors in the
// fingerprint.
uint64_t tensor_hash(const at::Tensor& t) {
  // Complex values as their real and imaginary parts.
  const at::Tensor c =
      (t.is_complex() ? at::view_as_real(t.resolve_conj()) : t).to(at::kDouble).contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < c.nbytes(); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

void describe_value(std::ostream& s, const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    s << "tensor" << t.sizes() << c10::toString(t.scalar_type()) << '#' << std::hex
      << tensor_hash(t) << std::dec;
  } else if (v.isTensorList()) {  // the trace's constants among a list's node inputs
    s << '[';
    for (const at::Tensor& t : v.toTensorVector()) {
      if (t.defined()) describe_value(s, t);
      s << ',';
    }
    s << ']';
  } else if (v.isString()) {
    s << '\'' << v.toStringRef() << '\'';
  } else {
    s << v;
  }
}

// Whether `argument` is a dtype (ScalarType or ScalarType?).
bool is_dtype_argument(const c10::Argument& argument) {
  c10::TypePtr type = argument.real_type();
  if (const auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  return type->kind() == c10::TypeKind::ScalarTypeType;
}

// Floating-point constants of the trace (float32: monet traces a float32 twin of the
// model) in the floating type of float64 inputs, as the model's own constants are when it
// runs in float64 (a recurrent layer's initial state, a matmul's constant operand). A
// bfloat16 model's float32 constants and casts stay float32, as PyTorch computes them (an
// upcast for a norm or a softmax).

void match_constants_to_inputs(torch::jit::Stack* stack, const c10::FunctionSchema& schema,
                               const std::vector<at::Tensor>& inputs) {
  const auto floating = std::find_if(inputs.begin(), inputs.end(),
                                     [](const at::Tensor& t) { return t.is_floating_point(); });
  if (floating == inputs.end() || floating->scalar_type() != at::kDouble) return;
  const at::ScalarType type = floating->scalar_type();
  // The trace's float32 dtypes (x.to(torch.float32), x.float()) are the inputs' type.
  const auto& arguments = schema.arguments();
  for (size_t i = 0; i < stack->size() && i < arguments.size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isInt() && v.toInt() == static_cast<int64_t>(at::kFloat) &&
        is_dtype_argument(arguments[i]))
      v = static_cast<int64_t>(type);
  }
  const auto converted = [type](const at::Tensor& t) {
    return t.defined() && t.scalar_type() == at::kFloat ? t.to(type) : t;
  };
  for (c10::IValue& v : *stack) {
    if (v.isTensor()) {
      v = converted(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list = v.toTensorList().copy();
      for (size_t i = 0; i < list.size(); ++i) list.set(i, converted(list.get(i)));
      v = std::move(list);
    }
  }
}

// slice_scatter / select_scatter (view_writes.h) of complex tensors as a clone of the base
// with the part copied into its view: ATen has no complex derivative for the scatters, and
// autograd differentiates the clone, the view and the copy. Returns whether it did.
bool scatter_complex(const AtenCall& c, torch::jit::Stack* stack) {
  const bool slice = c.name == "aten::slice_scatter";
  if (!slice && c.name != "aten::select_scatter") return false;
  if (stack->size() < (slice ? 6u : 4u)) return false;
  const at::Tensor base = (*stack)[0].toTensor();
  if (!at::isComplexType(base.scalar_type())) return false;
  at::Tensor out = base.clone();
  const int64_t dim = (*stack)[2].toInt();
  at::Tensor part = slice ? out.slice(dim, (*stack)[3].toOptional<int64_t>(),
                                      (*stack)[4].toOptional<int64_t>(), (*stack)[5].toInt())
                          : out.select(dim, (*stack)[3].toInt());
  part.copy_((*stack)[1].toTensor());
  *stack = {out};
  return true;
}

}  // namespace

at::Tensor call_aten(const AtenCall& c, const std::vector<at::Tensor>& inputs,
                     uint64_t random_seed) {
  if (inputs.size() != c.tensor_slots.size())
    throw AtenCallError(qualified(c) + ": " + std::to_string(inputs.size()) +
                        " tensor inputs given for " + std::to_string(c.tensor_slots.size()));
  const auto op = c10::Dispatcher::singleton().findSchema({c.name, c.overload});
  if (!op) throw AtenCallError(qualified(c) + " is not an operator of the ATen dispatcher");
  torch::jit::Stack stack(c.arguments.begin(), c.arguments.end());
  match_constants_to_inputs(&stack, op->schema(), inputs);
  std::map<int, c10::List<at::Tensor>> lists;  // by slot
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int list_index = c.list_indices.empty() ? -1 : c.list_indices[k];
    if (list_index < 0) {
      stack[c.tensor_slots[k]] = inputs[k];
      continue;
    }
    const int slot = c.tensor_slots[k];
    if (!lists.count(slot))  // the trace's constants among the elements (AtenCall::arguments)
      lists[slot] =
          stack[slot].isTensorList() ? stack[slot].toTensorList().copy() : c10::List<at::Tensor>();
    c10::List<at::Tensor>& list = lists[slot];
    if (static_cast<int>(list.size()) <= list_index) list.resize(list_index + 1);
    list.set(list_index, inputs[k]);
  }
  for (auto& [slot, list] : lists) stack[slot] = std::move(list);
  std::optional<SeededDraws> seeded;
  if (c.draws_random) seeded.emplace(op->schema(), &stack, inputs, random_seed);
  if (!scatter_complex(c, &stack)) op->callBoxed(&stack);
  seeded.reset();
  if (c.several_results && stack.size() == 1 && stack[0].isTensorList()) {
    // A list of tensors (tensor_split, meshgrid): the node is one of its elements.
    const c10::List<at::Tensor> list = stack[0].toTensorList();
    if (c.result_index >= static_cast<int>(list.size()))
      throw AtenCallError(qualified(c) + " returned " + std::to_string(list.size()) +
                          " tensors; the node is its element " + std::to_string(c.result_index));
    stack = {list.get(c.result_index)};
  } else if (c.several_results && c.result_index < static_cast<int>(stack.size())) {
    stack = {std::move(stack[c.result_index])};
  }
  if (stack.size() != 1 || !stack[0].isTensor())
    throw AtenCallError(qualified(c) + " returned " + std::to_string(stack.size()) +
                        " values; monet takes operators returning one tensor");
  if (c.copies_result) return stack[0].toTensor().clone(at::MemoryFormat::Contiguous);
  return stack[0].toTensor();
}

at::Tensor storage_swappable(const at::Tensor& x, bool requires_grad) {
  at::Tensor t = x.variable_data();
  t.unsafeGetTensorImpl()->set_allow_tensor_metadata_change(true);
  return requires_grad ? t.requires_grad_(true) : t;
}

void point_storage_at(const at::Tensor& t, const c10::Storage& storage) {
  t.unsafeGetTensorImpl()->set_storage_keep_dtype(storage);
}

namespace {

// The values a probe's floating inputs take, tried in this order until the call runs:
// standard normal; uniform in [0, 1) for operators whose inputs are probabilities
// (binary_cross_entropy); and square matrices made positive definite (uniform in
// [0, 0.1) plus n on the diagonal of each n x n matrix) for factorisations that need it
// (linalg_cholesky).
enum class ProbeValues { kNormal, kUnitInterval, kPositiveDefinite };

// Random inputs of `shapes` (strided as `strides` gives, where it gives a non-empty entry:
// a view's layout, an expanded one's zero strides included; integer ones as indices 0 or
// 1; floating and complex ones in their type, float32 where `dtypes` has no entry, drawn
// as `values` says), the same on every call.
std::vector<at::Tensor> probe_inputs(const std::vector<std::vector<int64_t>>& shapes,
                                     const std::vector<std::vector<int64_t>>& strides,
                                     const std::vector<at::ScalarType>& dtypes,
                                     ProbeValues values) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  std::vector<at::Tensor> in;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const bool integral = k < dtypes.size() && at::isIntegralType(dtypes[k], /*includeBool=*/true);
    const bool strided = k < strides.size() && !strides[k].empty();
    int64_t extent = 1;  // elements of the storage the layout spans
    for (size_t d = 0; strided && d < shapes[k].size(); ++d)
      extent += (shapes[k][d] - 1) * strides[k][d];
    const std::vector<int64_t> storage_shape = strided ? std::vector<int64_t>{extent} : shapes[k];
    const bool floating = k < dtypes.size() && differentiable_type(dtypes[k]);
    const at::TensorOptions type = floating ? at::dtype(dtypes[k]) : at::dtype(at::kFloat);
    at::Tensor t = integral ? at::randint(0, 2, storage_shape, gen, at::dtype(dtypes[k]))
                   : values == ProbeValues::kNormal ? at::randn(storage_shape, gen, type)
                                                    : at::rand(storage_shape, gen, type);
    t = strided ? t.as_strided(shapes[k], strides[k]) : t;
    const auto& s = shapes[k];
    if (values == ProbeValues::kPositiveDefinite && !integral && !strided && s.size() >= 2 &&
        s[s.size() - 1] == s[s.size() - 2]) {
      const int64_t n = s.back();
      t = t * 0.1 + at::eye(n, type) * static_cast<double>(n);
    }
    in.push_back(t);
  }
  return in;
}

// What a kept autograd node of the call holds (AtenCall::autograd_saved_bytes,
// autograd_keeps_inputs_by_leaf): the call runs under autograd on leaves of the
// differentiable inputs, whose storage is then released as the "autograd" forward
// releases it (ops/autograd_node.h); the memory tracker measures what is left.
void probe_autograd_node(AtenCall* c, const std::vector<std::vector<int64_t>>& shapes,
                         const std::vector<bool>& differentiable,
                         const std::vector<std::vector<int64_t>>& strides,
                         const std::vector<at::ScalarType>& dtypes, ProbeValues values) {
  MemoryTracker::install();
  at::AutoGradMode grad_mode(true);
  std::vector<at::Tensor> in = probe_inputs(shapes, strides, dtypes, values);
  std::vector<c10::Storage> storages;
  for (size_t k = 0; k < in.size(); ++k) {
    storages.push_back(in[k].storage());
    in[k] = storage_swappable(in[k], differentiable[k]);
  }
  const int64_t before = MemoryTracker::current();
  at::Tensor out = call_aten(*c, in);
  const auto node = out.grad_fn();  // holds the autograd graph
  bool alias = false;
  for (const at::Tensor& x : in) alias = alias || out.is_alias_of(x);
  out.reset();
  const at::Tensor nothing = at::empty({0});
  for (const at::Tensor& x : in) point_storage_at(x, nothing.storage());
  c->autograd_keeps_inputs_by_leaf = !alias;
  for (const c10::Storage& storage : storages)
    if (storage.use_count() > 1) c->autograd_keeps_inputs_by_leaf = false;
  c->autograd_saved_bytes = std::max<int64_t>(0, MemoryTracker::current() - before);
}

// Fills the call's output shape and what its derivative keeps (make_aten_call).
void probe_aten_call(AtenCall* c, const std::vector<std::vector<int64_t>>& shapes,
                     const std::vector<bool>& differentiable,
                     const std::vector<std::vector<int64_t>>& strides,
                     const std::vector<at::ScalarType>& dtypes, ProbeValues values) {
  at::AutoGradMode grad_mode(true);
  std::vector<at::Tensor> in = probe_inputs(shapes, strides, dtypes, values);
  std::vector<int64_t> before;
  bool any = false;
  for (size_t k = 0; k < shapes.size(); ++k) {
    at::Tensor x = in[k];
    // A differentiable input is passed as a view of a leaf: the leaf's gradient
    // accumulator holds the leaf, so only what the derivative saves holds the view.
    if (differentiable[k]) {
      x = x.requires_grad_(true).view_as(x);
      any = true;
    }
    in[k] = x;
    before.push_back(static_cast<int64_t>(x.storage().use_count()));
  }
  at::Tensor out;
  try {
    out = call_aten(*c, in);
  } catch (const c10::Error& e) {
    throw AtenCallError(qualified(*c) +
                        " failed on inputs of the traced shapes: " + e.what_without_backtrace());
  }
  c->output_dtype = out.scalar_type();
  c->no_gradient = any && differentiable_type(out.scalar_type()) && !out.requires_grad();
  c->output_shape = out.sizes().vec();
  bool alias = false;
  for (const at::Tensor& t : in) alias = alias || out.is_alias_of(t);
  c->output_aliases_input = !in.empty() && out.is_alias_of(in[0]);
  if (alias && !c->output_aliases_input) {  // a view of a later input: the node copies it
    c->copies_result = true;
    out = out.clone(at::MemoryFormat::Contiguous);
    alias = false;
  }
  if (c->output_aliases_input && !out.is_contiguous()) c->output_strides = out.strides().vec();
  const auto output_storage = out.storage().getWeakStorageImpl();
  const auto node = out.grad_fn();  // keeps what the derivative saved alive
  out.reset();
  c->saves_input.assign(in.size(), false);
  for (size_t k = 0; k < in.size(); ++k)
    c->saves_input[k] =
        in[k].use_count() > 1 || static_cast<int64_t>(in[k].storage().use_count()) > before[k];
  c->saves_output = !alias && output_storage.use_count() > 0;
  // The derivative of an operator with several results may keep the others (max's and
  // sort's indices): a re-run computes them from the input's values. A view among a
  // list's pieces (tensor_split's) keeps nothing.
  if (c->several_results && !alias) c->saves_input.assign(in.size(), true);
}

}  // namespace

std::shared_ptr<const AtenCall> make_aten_call(
    std::string name, std::string overload, std::vector<c10::IValue> arguments,
    std::vector<int> tensor_slots, const std::vector<std::vector<int64_t>>& input_shapes,
    const std::vector<bool>& differentiable, const std::vector<std::vector<int64_t>>& input_strides,
    const std::vector<at::ScalarType>& input_dtypes, int result_index,
    std::vector<int> list_indices) {
  auto call = std::make_shared<AtenCall>();
  call->name = std::move(name);
  call->overload = std::move(overload);
  call->arguments = std::move(arguments);
  call->tensor_slots = std::move(tensor_slots);
  if (!list_indices.empty() && list_indices.size() != call->tensor_slots.size())
    throw AtenCallError(call->name + ": a list index for each tensor input is needed");
  if (std::all_of(list_indices.begin(), list_indices.end(), [](int i) { return i < 0; }))
    list_indices.clear();
  call->list_indices = std::move(list_indices);
  // Several results (values and indices): the node is one of them.
  if (const auto op = c10::Dispatcher::singleton().findSchema({call->name, call->overload})) {
    call->several_results = op->schema().returns().size() > 1 || returns_tensor_list(op->schema());
    call->draws_random = draws_random(op->schema()) || drops_out(op->schema(), call->arguments);
  }
  call->result_index = result_index;
  ProbeValues values = ProbeValues::kNormal;
  std::optional<AtenCallError> first_error;  // reported when no values suit the call
  for (ProbeValues v :
       {ProbeValues::kNormal, ProbeValues::kUnitInterval, ProbeValues::kPositiveDefinite}) {
    try {
      probe_aten_call(call.get(), input_shapes, differentiable, input_strides, input_dtypes, v);
      values = v;
      first_error.reset();
      break;
    } catch (const AtenCallError& e) {
      if (!first_error) first_error = e;
    }
  }
  if (first_error) throw *first_error;
  if (!call->output_aliases_input && !call->saves_output && !call->no_gradient &&
      differentiable_type(call->output_dtype))
    probe_autograd_node(call.get(), input_shapes, differentiable, input_strides, input_dtypes,
                        values);
  // A derivative that keeps a tensor of its own made from the inputs (matmul's contiguous
  // copy of a strided operand) needs their values, though it keeps none of them itself.
  if (call->autograd_saved_bytes > 0) call->saves_input.assign(call->saves_input.size(), true);
  return call;
}

bool is_view_node(const Node& n) {
  return n.op == OpKind::kFlatten || (n.op == OpKind::kAten && n.attrs.aten->output_aliases_input);
}

int storage_base(const Graph& g, int value) {
  while (g.value(value).producer >= 0 && is_view_node(g.node(g.value(value).producer)))
    value = g.node(g.value(value).producer).inputs[0];
  return value;
}

bool differentiable_type(at::ScalarType dtype) {
  return at::isFloatingType(dtype) || at::isComplexType(dtype);
}

bool takes_gradient(const Graph& g, int value) {
  const Value& v = g.value(value);
  if (!differentiable_type(v.dtype)) return false;
  if (v.producer < 0) return true;
  const Node& n = g.node(v.producer);
  return n.op != OpKind::kAten || !n.attrs.aten->no_gradient;
}

std::vector<int64_t> view_strides(const Graph& g, int value) {
  const int producer = g.value(value).producer;
  if (producer < 0 || g.node(producer).op != OpKind::kAten) return {};
  return g.node(producer).attrs.aten->output_strides;
}

AtenInputs aten_inputs_of(const Graph& g, const std::vector<int>& values) {
  AtenInputs in;
  for (int v : values) {
    const Value& value = g.value(v);
    in.shapes.push_back(value.shape);
    in.strides.push_back(view_strides(g, v));
    in.dtypes.push_back(value.dtype);
    in.differentiable.push_back(
        (value.kind == ValueKind::kActivation || value.kind == ValueKind::kParameter) &&
        takes_gradient(g, v));
    in.reads_no_gradient = in.reads_no_gradient && value.producer >= 0 && !takes_gradient(g, v);
  }
  return in;
}

std::shared_ptr<const AtenCall> with_gradient_of_inputs(std::shared_ptr<const AtenCall> call,
                                                        const AtenInputs& in) {
  if (!in.reads_no_gradient || call->no_gradient || !differentiable_type(call->output_dtype))
    return call;
  auto without = std::make_shared<AtenCall>(*call);
  without->no_gradient = true;
  return without;
}

namespace {

// Generic operators and attention (its matmuls) take inputs of any strides.
bool reads_strided_views(OpKind op) { return op == OpKind::kAten || op == OpKind::kAttention; }

// Makes view node `id` a copy of what it views.
void make_copy(Graph& g, int id) {
  auto copy = std::make_shared<AtenCall>(*g.node(id).attrs.aten);
  copy->output_aliases_input = false;
  copy->output_strides.clear();
  g.set_aten_call(id, std::move(copy));
}

// Every non-contiguous view (AtenCall::output_strides) that an operator other than a
// generic one reads becomes a copy: specialised operators read contiguous tensors. Returns
// the nodes made copies.
std::vector<int> copy_views_read_by_specialised_operators(Graph& g) {
  std::vector<int> copied;
  for (int id = static_cast<int>(g.nodes().size()) - 1; id >= 0; --id) {
    const Node& n = g.node(id);
    if (n.op != OpKind::kAten || n.attrs.aten->output_strides.empty()) continue;
    const auto& readers = g.value(n.output).consumers;
    if (std::all_of(readers.begin(), readers.end(),
                    [&](int r) { return reads_strided_views(g.node(r).op); }))
      continue;
    make_copy(g, id);
    copied.push_back(id);
  }
  return copied;
}

// Whether the derivative of a generic call keeps anything: an input, or the output (a
// tensor of its own made from the inputs marks every input kept, make_aten_call).
bool derivative_keeps_anything(const AtenCall& c) {
  return c.saves_output || std::count(c.saves_input.begin(), c.saves_input.end(), true) > 0;
}

// Whether a backward pass may read `value`, or a view of it. Specialised operators are
// assumed to (most read their inputs); a generic one where its derivative keeps anything.
bool backward_may_read(const Graph& g, int value) {
  for (int r : g.value(value).consumers) {
    const Node& n = g.node(r);
    if (is_view_node(n) && n.inputs[0] == value) {
      if (backward_may_read(g, n.output)) return true;
    } else if (n.op != OpKind::kAten || derivative_keeps_anything(*n.attrs.aten)) {
      return true;
    }
  }
  return false;
}

// Every view of part of its input's storage (select, slice) that a backward may read becomes
// a copy. Returns the nodes made copies.
std::vector<int> copy_partial_views_kept_for_backward(Graph& g) {
  std::vector<int> copied;
  for (int id = static_cast<int>(g.nodes().size()) - 1; id >= 0; --id) {
    const Node& n = g.node(id);
    if (n.op != OpKind::kAten || !n.attrs.aten->output_aliases_input) continue;
    if (g.value(n.output).numel() >= g.value(n.inputs[0]).numel()) continue;
    if (!backward_may_read(g, n.output)) continue;
    make_copy(g, id);
    copied.push_back(id);
  }
  return copied;
}

// Node `id`'s call probed again on the layouts its inputs now have.
std::shared_ptr<const AtenCall> probed_again(const Graph& g, int id) {
  const Node& n = g.node(id);
  const AtenCall& c = *n.attrs.aten;
  const AtenInputs in = aten_inputs_of(g, n.inputs);
  std::shared_ptr<const AtenCall> probed;
  try {
    probed =
        make_aten_call(c.name, c.overload, c.arguments, c.tensor_slots, in.shapes,
                       in.differentiable, in.strides, in.dtypes, c.result_index, c.list_indices);
  } catch (const AtenCallError& e) {
    throw AtenCallError(n.name + ": " + e.what());
  }
  // What the import decided beside the probe (a buffer's writer, a shared random stream, no
  // gradient) does not follow the layout.
  auto again = std::make_shared<AtenCall>(*probed);
  again->no_gradient = again->no_gradient || c.no_gradient;
  again->random_stream = c.random_stream;
  again->writes_buffer = c.writes_buffer;
  return again;
}

// Generic nodes downstream of `copied` were probed on the strided views those were (what
// the derivative keeps, a view's strides); probes them again on the copies' layout.
void probe_readers_again(Graph& g, const std::vector<int>& copied) {
  std::set<int> changed;  // values whose layout changed
  for (int id : copied) changed.insert(g.node(id).output);
  const std::set<int> fixed(copied.begin(), copied.end());
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op != OpKind::kAten || fixed.count(id)) continue;
    if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](int v) { return changed.count(v); }))
      continue;
    auto call = probed_again(g, id);
    if (call->output_strides != n.attrs.aten->output_strides) changed.insert(n.output);
    g.set_aten_call(id, std::move(call));
  }
}

}  // namespace

void copy_views_where_needed(Graph& g) {
  std::vector<int> copied = copy_views_read_by_specialised_operators(g);
  const std::vector<int> partial = copy_partial_views_kept_for_backward(g);
  copied.insert(copied.end(), partial.begin(), partial.end());
  probe_readers_again(g, copied);
}

std::string describe_aten_call(const AtenCall& c) {
  std::ostringstream s;
  s << qualified(c) << '(';
  for (size_t i = 0; i < c.arguments.size(); ++i) {
    if (i) s << ", ";
    std::vector<size_t> here;  // the node inputs at argument i
    for (size_t k = 0; k < c.tensor_slots.size(); ++k)
      if (c.tensor_slots[k] == static_cast<int>(i)) here.push_back(k);
    if (here.empty()) {
      describe_value(s, c.arguments[i]);
    } else if (c.list_indices.empty() || c.list_indices[here[0]] < 0) {
      s << '%' << here[0];
    } else {  // a list of node inputs, in list order
      std::sort(here.begin(), here.end(),
                [&](size_t a, size_t b) { return c.list_indices[a] < c.list_indices[b]; });
      s << '[';
      for (size_t j = 0; j < here.size(); ++j) s << (j ? ", %" : "%") << here[j];
      s << ']';
    }
  }
  s << ") saves=[";
  for (size_t k = 0; k < c.saves_input.size(); ++k) s << (k ? "," : "") << c.saves_input[k];
  s << ']' << (c.saves_output ? " saves_output" : "") << (c.output_aliases_input ? " view" : "");
  if (c.several_results) s << " result=" << c.result_index;
  if (c.copies_result) s << " copied";
  if (c.no_gradient) s << " no_gradient";
  if (c.writes_buffer) s << " writes_buffer=" << *c.writes_buffer;
  if (!at::isFloatingType(c.output_dtype)) s << " -> " << c10::toString(c.output_dtype);
  return s.str();
}

std::string describe_constant(const c10::IValue& value) {
  std::ostringstream s;
  describe_value(s, value);
  return s.str();
}

}  // namespace monet
