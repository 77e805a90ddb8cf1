// AtenCall: an ATen operator that monet has no dedicated OpKind for, as the graph keeps it
// (OpKind::kAten): the operator's name and overload, every argument in its schema's order
// (constants, and the places of the node's tensor inputs), and what running it once under
// autograd showed: its output's shape, and which of its inputs (or its output) PyTorch's
// derivative keeps, so that a backward re-running the operator knows which inputs it needs
// with their values and which only by shape. The call runs through the dispatcher, so any
// operator with a schema and a derivative works, on any device.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace monet {

class Graph;
struct Node;

struct AtenCall {
  std::string name;      // qualified operator name, "aten::gelu"
  std::string overload;  // overload name ("" for the default, "Tensor", "Scalar", ...)
  /// Every argument in the schema's order; None where a node input goes (tensor_slots).
  std::vector<c10::IValue> arguments;
  /// Argument position of each node input, ordered as node.inputs.
  std::vector<int> tensor_slots;
  /// By node input: its index in the tensor list the argument at its slot takes (einsum's
  /// operands, stack's, a recurrent layer's weights), or -1 where that argument is the
  /// tensor itself. Empty: no list arguments.
  std::vector<int> list_indices;
  /// By node input: PyTorch's derivative keeps it (its values matter to the backward).
  std::vector<bool> saves_input;
  /// PyTorch's derivative keeps the output (tanh, exp): every input then matters, since a
  /// backward re-running the operator computes the output from them.
  bool saves_output = false;
  /// Where the derivative keeps no output and the result is no view: whether the
  /// operator's autograd graph holds its inputs only through the leaves it ran on (not
  /// through views or copies of them), so that a kept autograd node
  /// (ops/autograd_node.h) can hold them by shape only.
  bool autograd_keeps_inputs_by_leaf = false;
  /// Bytes the operator's autograd graph holds of its own beyond its inputs (max's
  /// indices, a mask), measured by the memory tracker when the call was probed (float32
  /// inputs of the traced shapes).
  int64_t autograd_saved_bytes = 0;
  /// The output is a view of the first input's storage (reshape, view, flatten, squeeze,
  /// unsqueeze, permute, transpose, expand, select, slice): the node takes no memory of
  /// its own, and its output holds all of the input's storage while it lives. Probed on
  /// inputs laid out as the executor lays them out (make_aten_call's input_strides).
  bool output_aliases_input = false;
  /// Such a view's strides when it is not contiguous (permute, transpose, expand); empty
  /// otherwise. Only generic operators read non-contiguous views (copy_views_where_needed):
  /// every other activation is contiguous.
  std::vector<int64_t> output_strides;
  std::vector<int64_t> output_shape;  // as probed at import
  /// The result's type, as probed: floating point, or an integer or boolean type (a
  /// comparison's mask, argmax's or max's indices), which has no gradient.
  at::ScalarType output_dtype = at::kFloat;
  /// The operator returns several values (torch.max(x, dim): values, indices) or a list of
  /// tensors (tensor_split, meshgrid): the node is its result or element `result_index`,
  /// the others are dropped (each one a model uses is a node of its own).
  bool several_results = false;
  int result_index = 0;
  /// The result is a view of an input other than the first (meshgrid's later pieces):
  /// the node returns a contiguous copy of it, which it owns.
  bool copies_result = false;
  /// PyTorch records no derivative for the floating result (detach): like an integer
  /// result it takes no gradient, and nothing flows back through it.
  bool no_gradient = false;
  /// The operator draws random numbers from a generator the trace left at None
  /// (bernoulli, rand, normal: stochastic depth's noise) or from the default generator
  /// (randn_like, rand_like, alpha_dropout, which take none): each call draws from a
  /// generator seeded with call_aten's `random_seed`, so that a recomputation, a re-running
  /// backward and the reference draw what the forward drew.
  bool draws_random = false;
  /// The draws' stream when the results of one call are several nodes (an LSTM's output
  /// and final state, each a call of its own): a negative number the nodes share, so that
  /// each call draws the same; 0: the node's own (its id).
  int random_stream = 0;
  /// PyTorch's forward writes the result into this buffer (a value id): `out=` into a
  /// buffer or an in-place update of one (spectral_norm's power iteration). monet computes
  /// it out of place; the first forward keeps a copy (the node's per-iteration state) that
  /// the buffer takes when the iteration ends, so recomputations read the buffer as the
  /// forward read it.
  std::optional<int> writes_buffer;
};

/// Thrown when an operator cannot be called, probed or differentiated; the message names
/// the operator.
class AtenCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Runs the operator on `inputs` (ordered as node.inputs) through the dispatcher and
/// returns its single tensor output. Autograd records it when grad mode is on and an input
/// requires a gradient, as for any ATen call. An operator that draws random numbers
/// (AtenCall::draws_random) draws them seeded with `random_seed` (graph/aten_random.h).
at::Tensor call_aten(const AtenCall& call, const std::vector<at::Tensor>& inputs,
                     uint64_t random_seed = 0);

/// A tensor of `x`'s shape and storage with a version counter of its own, whose storage
/// can later be pointed elsewhere (point_storage_at); a leaf requiring a gradient when
/// `requires_grad`. How a kept autograd node holds the plan's activations by shape only
/// (ops/autograd_node.h), and how probing a call checks that it can.
at::Tensor storage_swappable(const at::Tensor& x, bool requires_grad);
/// Points `t` (made by storage_swappable) at `storage`, keeping its shape and strides.
void point_storage_at(const at::Tensor& t, const c10::Storage& storage);

/// A call of `name.overload` with `arguments` (None where `tensor_slots` puts the node's
/// inputs), probed: run once under autograd on random inputs of `input_shapes` and `input_dtypes`
/// (strided as `input_strides` gives, where it gives a non-empty entry; else contiguous;
/// those `differentiable` names require a gradient; an input whose `input_dtypes` entry is
/// an integer type gets random indices 0 or 1 instead) for its output shape and type,
/// what its derivative keeps, whether its output is a view and whether PyTorch records a
/// derivative for it (AtenCall::no_gradient). Throws AtenCallError when the call fails or
/// its result is not a tensor. An operator with several results (torch.max(x, dim):
/// values, indices) is called for its result `result_index` (AtenCall::several_results).
/// `list_indices`: as AtenCall::list_indices (the slot's argument in `arguments`, where it
/// is a list of tensors, gives the elements no node input takes: the trace's constants).
std::shared_ptr<const AtenCall> make_aten_call(
    std::string name, std::string overload, std::vector<c10::IValue> arguments,
    std::vector<int> tensor_slots, const std::vector<std::vector<int64_t>>& input_shapes,
    const std::vector<bool>& differentiable,
    const std::vector<std::vector<int64_t>>& input_strides = {},
    const std::vector<at::ScalarType>& input_dtypes = {}, int result_index = 0,
    std::vector<int> list_indices = {});

/// Whether `node` always returns a view of its first input's storage (flatten, a generic
/// operator probed as a view).
bool is_view_node(const Node& node);
/// The value whose storage `value` shares: its view nodes' first inputs followed back to
/// a value no view node produced (`value` itself when it is no view).
int storage_base(const Graph& g, int value);
/// Whether tensors of `dtype` take gradients: floating-point and complex ones (a complex
/// value's gradient is complex, as PyTorch's).
bool differentiable_type(at::ScalarType dtype);
/// Whether the value takes a gradient where what it is computed from does: a floating or
/// complex result of an operator PyTorch records a derivative for.
bool takes_gradient(const Graph& g, int value);

/// The strides of `value` when it is a non-contiguous view (its generic producer's
/// AtenCall::output_strides), else empty (contiguous).
std::vector<int64_t> view_strides(const Graph& graph, int value);

/// What make_aten_call needs of a call's tensor inputs `values` (node inputs, in order):
/// their shapes, layouts (view_strides), types, and which are differentiable (floating-point
/// or complex activations and parameters that take a gradient).
struct AtenInputs {
  std::vector<std::vector<int64_t>> shapes, strides;
  std::vector<at::ScalarType> dtypes;
  std::vector<bool> differentiable;
  /// Nothing the call reads carries a gradient: it reads no value (a random draw), or only
  /// values the model computed that take none (integer results, detached ones, random
  /// draws). Its result takes none either, as in autograd (with_gradient_of_inputs). The
  /// model's inputs and buffers count as carrying one.
  bool reads_no_gradient = true;
};
AtenInputs aten_inputs_of(const Graph& graph, const std::vector<int>& values);
/// `call` (made by make_aten_call on `in`) marked AtenCall::no_gradient where its result is
/// floating but nothing it reads carries a gradient (AtenInputs::reads_no_gradient): an
/// operator such as fractional max pooling then reads a random draw as the constant it is.
std::shared_ptr<const AtenCall> with_gradient_of_inputs(std::shared_ptr<const AtenCall> call,
                                                        const AtenInputs& in);

/// Decides which views stay views, and probes again what reads the others. A view becomes
/// a copy where
///  - it is not contiguous (AtenCall::output_strides) and an operator other than a generic
///    one reads it: specialised operators (convolution, batch norm, losses, ...) read
///    contiguous tensors;
///  - it views part of its input's storage (select, slice) and a backward may read it
///    (through further views too): kept, the view would hold all of its input's storage,
///    the copy holds only its part, as PyTorch's matmul keeps its own copy of a sliced
///    operand. A view that only passes through operators whose backward reads nothing of
///    it stays a view.
/// Generic operators downstream of a copy are probed again on the layout they now read.
/// Run on a finished graph (the importer and GraphBuilder::finish do).
void copy_views_where_needed(Graph& graph);

/// "aten::gelu(%0, approximate='tanh') saves=[0]": the operator, its arguments (constant
/// tensors by shape and a hash of their values) and what its derivative keeps.
/// Deterministic: part of the graph fingerprint.
std::string describe_aten_call(const AtenCall& call);

/// A constant argument as describe_aten_call writes it (a tensor by shape, dtype and a
/// hash of its values).
std::string describe_constant(const c10::IValue& value);

}  // namespace monet
