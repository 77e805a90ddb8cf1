// Importer: translates one TorchScript module's inlined forward graph into a Graph, value
// by value (torchscript_import.h is the entry point). Shared by the importer's two source
// files: torchscript_import.cpp (modules, parameters, layers, element-wise operators) and
// torchscript_views.cpp (reshapes, channel shuffles, chunk/split, arithmetic on sizes).
#pragma once

#include <torch/script.h>

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/aten_call.h"
#include "graph/graph.h"
#include "graph/torchscript/torchscript_import.h"

namespace monet::torchscript {

using JitNode = torch::jit::Node;
using JitValue = torch::jit::Value;

// What a TorchScript value stands for while the graph is translated.
// Two kinds stand for views that only some patterns may use:
//  - kGroupedChannels: x.view(N, groups, C / groups, ...), possibly transposed to
//    (N, C / groups, groups, ...); reshaped back to x's shape it is a channel shuffle.
//  - kPieces: torch.chunk / split of x along `dim` (one slice per piece on unpacking).
// kUnpackedList: a generic operator's list of tensors (tensor_split, meshgrid) whose
// pieces the model uses are nodes already, made with the operator (translate_aten).
struct Entry {
  enum Kind {
    kModule,
    kState,
    kTensor,
    kConstant,
    kTensorList,
    kGroupedChannels,
    kPieces,
    kUnpackedList,
    kIgnored
  } kind = kIgnored;
  /// kModule: module path ("" = root); kState, and kConstant made of a buffer: tensor path
  std::string path;
  int value = -1;           // kTensor, kGroupedChannels, kPieces: graph value id
  c10::IValue constant;     // kConstant
  std::vector<int> values;  // kTensorList: the graph values among its elements
  /// kTensorList with constant tensors among its elements (torch.cat([x, zeros])): each
  /// value's position in the list, and `constant` the whole list, its other elements the
  /// trace's constants. Empty where every element is a value.
  std::vector<int> positions;
  int64_t groups = 1;       // kGroupedChannels
  bool transposed = false;  // kGroupedChannels: dims 1 and 2 swapped
  /// kGroupedChannels: the view and transposes that made it, translated as generic nodes
  /// where something other than a channel shuffle reads it.
  std::vector<JitNode*> steps;
  int64_t dim = 0;               // kPieces
  std::vector<int64_t> lengths;  // kPieces: along dim, in order
};

inline std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A per-spatial-dimension attribute as TorchScript gives it: one entry for all
// dimensions, one per dimension, or none (`fallback`).
inline std::vector<int64_t> per_dim(std::vector<int64_t> v, size_t spatial,
                                    const std::vector<int64_t>& fallback = {}) {
  if (v.empty()) return fallback;
  if (v.size() == 1) v.assign(spatial, v[0]);
  return v;
}

inline std::string parent(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

class Importer {
 public:
  Importer(const std::string& path, torch::jit::Module module, std::vector<InputSpec> inputs,
           ImportOptions options)
      : path_(path),
        module_(std::move(module)),
        inputs_(std::move(inputs)),
        options_(std::move(options)),
        graph_(module_name(path)) {
    // A frozen parameter (requires_grad=False: a fine-tuned model's backbone) gets no
    // gradient in PyTorch: here it is a buffer, read and never trained.
    for (const auto& p : module_.named_parameters(/*recurse=*/true))
      state_[p.name] = {p.value, p.value.requires_grad()};
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) state_[b.name] = {b.value, false};
  }

  /// The Graph of the module's forward method (input, layers, loss).
  Graph run();

 private:
  /// The one floating type of the module's parameters and buffers (float32 when it has
  /// none); throws ImportError naming two tensors of different floating types, or one of a
  /// type monet does not plan.
  at::ScalarType floating_dtype() const;

  static std::string module_name(const std::string& path) {
    auto slash = path.find_last_of('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const auto dot = base.rfind('.');
    return dot == std::string::npos ? base : base.substr(0, dot);
  }

  static Entry module_entry(const std::string& path) {
    Entry e;
    e.kind = Entry::kModule;
    e.path = path;
    return e;
  }

  static Entry constant_entry(c10::IValue v) {
    Entry e;
    e.kind = Entry::kConstant;
    e.constant = std::move(v);
    return e;
  }

  [[noreturn]] void fail(const JitNode* node, const std::string& what) const {
    throw failure(node, what);
  }

  ImportError failure(const JitNode* node, const std::string& what) const {
    std::ostringstream s;
    s << "'" << path_ << "': " << what << "\n  at " << location(node) << "\n  in: " << *node;
    std::string text = s.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return ImportError(text, node->kind().toQualString(), location(node));
  }

  // Thrown where a specialised translation does not apply: it reads a constant of the
  // trace (zeros from new_zeros) where it needs a tensor of the model, or integer or
  // boolean tensors where it computes in the graph's floating type. translate() then makes
  // the operator a generic node (constants inside its call).
  struct NotSpecialised : ImportError {
    explicit NotSpecialised(const ImportError& e) : ImportError(e) {}
  };

  // The Python source line that produced the node (a saved module records it behind the
  // serialized code's own range), else the serialized code's line.
  static std::string location(const JitNode* node) {
    const auto& range = node->sourceRange();
    for (const auto& r :
         {range.findSourceRangeThatGenerated(), c10::optional<torch::jit::SourceRange>(range)}) {
      if (!r) continue;
      if (auto flc = r->file_line_col()) {
        const auto& [file, line, col] = *flc;
        return file + ":" + std::to_string(line);
      }
    }
    return "(no source location recorded)";
  }

  const Entry& entry(const JitValue* v) const {
    auto it = entries_.find(v);
    if (it == entries_.end() || it->second.kind == Entry::kIgnored)
      throw ImportError("'" + path_ + "': value %" + v->debugName() +
                        " is used but monet did not translate what produces it");
    return it->second;
  }

  const Entry& arg(const JitNode* node, size_t i) const {
    if (i >= node->inputs().size())
      fail(node, "expected at least " + std::to_string(i + 1) + " arguments");
    return entry(node->inputs()[i]);
  }

  const c10::IValue& constant(const JitNode* node, size_t i, const char* what) const {
    const Entry& e = arg(node, i);
    if (e.kind != Entry::kConstant)
      fail(node, std::string("argument '") + what + "' must be a constant");
    return e.constant;
  }
  bool is_none(const JitNode* node, size_t i) const {
    const Entry& e = arg(node, i);
    return e.kind == Entry::kConstant && e.constant.isNone();
  }
  int64_t int_arg(const JitNode* node, size_t i, const char* what) const {
    const auto& c = constant(node, i, what);
    if (c.isInt()) return c.toInt();
    if (c.isTensor() && c.toTensor().numel() == 1) return c.toTensor().item<int64_t>();
    fail(node, std::string("argument '") + what + "' must be an integer");
  }
  double double_arg(const JitNode* node, size_t i, const char* what) const {
    const auto& c = constant(node, i, what);
    if (c.isDouble() || c.isInt()) return c.toScalar().toDouble();
    fail(node, std::string("argument '") + what + "' must be a number");
  }
  bool bool_arg(const JitNode* node, size_t i, const char* what) const {
    const auto& c = constant(node, i, what);
    if (!c.isBool()) fail(node, std::string("argument '") + what + "' must be a boolean");
    return c.toBool();
  }
  std::vector<int64_t> ints_arg(const JitNode* node, size_t i, const char* what) const {
    const auto& c = constant(node, i, what);
    if (c.isIntList()) return c.toIntVector();
    if (c.isInt()) return {c.toInt()};
    fail(node, std::string("argument '") + what + "' must be a list of integers");
  }

  // The graph value of a tensor argument: an activation, or a parameter or buffer added to
  // the graph on first use.
  int tensor(const JitNode* node, size_t i) {
    const Entry& e = arg(node, i);
    if (e.kind == Entry::kTensor) return e.value;
    if (e.kind == Entry::kState) return state_value(node, e.path);
    if (e.kind == Entry::kConstant && !e.path.empty() && e.constant.isTensor() &&
        e.constant.toTensor().is_floating_point())
      return state_value(node, e.path);  // a buffer kept as a constant elsewhere
    if (e.kind == Entry::kGroupedChannels) return grouped_channels_value(e);
    if (e.kind == Entry::kPieces)
      fail(node, "the pieces of chunk/split are supported only when unpacked into tensors");
    const std::string what = "argument " + std::to_string(i) + " must be a tensor";
    if (e.kind == Entry::kConstant && e.constant.isTensor())
      throw NotSpecialised(failure(node, what));
    fail(node, what);
  }

  int state_value(const JitNode* node, const std::string& name) {
    if (auto it = state_ids_.find(name); it != state_ids_.end()) return it->second;
    const auto& [t, trainable] = state_.at(name);
    // An integer buffer: a count that generic operators read (num_batches_tracked).
    const bool count = !trainable && !t.is_floating_point() && !t.is_complex();
    if (!count && t.scalar_type() != graph_.floating_dtype())
      fail(node, "tensor '" + name + "' is " + std::string(c10::toString(t.scalar_type())) +
                     "; the model's parameters are " + c10::toString(graph_.floating_dtype()));
    if (auto same = state_by_tensor_.find(t.unsafeGetTensorImpl()); same != state_by_tensor_.end())
      return state_ids_[name] = same->second;  // a tied weight
    const std::vector<int64_t> shape = t.sizes().vec();
    // Stand-in initialisation, for when the file's values are not loaded (profiling):
    // PyTorch's layer defaults, batch norm's ones for scales and running variances.
    InitSpec init{InitKind::kZeros};
    if (shape.size() >= 2)
      init.kind = InitKind::kKaimingUniformDefault;
    else if (ends_with(name, ".weight") || ends_with(name, "running_var"))
      init.kind = InitKind::kOnes;
    const int id = trainable ? graph_.add_parameter(name, shape, init)
                   : count   ? graph_.add_buffer(name, shape, init, t.scalar_type())
                             : graph_.add_buffer(name, shape, init);
    state_ids_[name] = id;
    state_by_tensor_[t.unsafeGetTensorImpl()] = id;
    return id;
  }

  // A unique node name: the module of the node's weight, or the operator inside the
  // module that holds the last weighted one ("layer1.0.relu", "layer1.0.relu.1").
  std::string node_name(const std::string& module, const char* op) {
    std::string base = module.empty() ? join(scope_, op) : module;
    if (!module.empty()) scope_ = parent(module);
    return unused_name(base);
  }
  // `base`, or base.1, base.2, ...: no node's name before it, nor a parameter's or
  // buffer's (a buffer called `mean` beside aten::mean, a loss module's node beside the
  // loss monet appends, a submodule `target` beside the target).
  std::string unused_name(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name) || state_.count(name); ++k)
      name = base + "." + std::to_string(k);
    names_.insert(name);
    return name;
  }

  // Adds the node translating `node` and maps `output` (node's only output when null) to
  // it.
  void emit(JitNode* node, OpKind op, std::vector<int> inputs, OpAttrs attrs,
            const std::string& module = "", const JitValue* output = nullptr,
            const char* label = nullptr) {
    // Token ids concatenated or reshaped: not for the specialised operators (NotSpecialised).
    if (op != OpKind::kAten && !inputs.empty() &&
        graph_.value(inputs[0]).dtype != graph_.floating_dtype() && node->kind().is_aten())
      throw NotSpecialised(failure(node, "first input is not of the model's floating type"));
    const std::string name = node_name(module, label ? label : op_name(op));
    Entry e;
    e.kind = Entry::kTensor;
    try {
      e.value = graph_.add_node(op, name, std::move(inputs), std::move(attrs));
    } catch (const GraphError& err) {
      fail(node, err.what());
    }
    entries_[output ? output : node->output()] = e;
  }

  void alias(JitNode* node, int value, const JitValue* output = nullptr) {
    Entry e;
    e.kind = Entry::kTensor;
    e.value = value;
    entries_[output ? output : node->output()] = e;
  }

  // Whether a layer's weight or bias (`inputs` after the first) is a tensor the model
  // computes, not a parameter or buffer, or its input (the first) is a parameter (a learned
  // query fed to a Linear): the specialised layers give parameters their gradients in the
  // weight part of the backward and an activation its gradient in the input part, so such
  // a layer is a generic node (autograd's backward).
  bool needs_generic_layer(const std::vector<int>& inputs) const {
    if (graph_.value(inputs[0]).kind == ValueKind::kParameter) return true;
    for (size_t i = 1; i < inputs.size(); ++i)
      if (graph_.value(inputs[i]).kind == ValueKind::kActivation) return true;
    return false;
  }
  // In place when the TorchScript op is (relu_, add_) and the overwritten activation has
  // no other reader in the graph.
  bool inplace_allowed(const JitNode* node, int value) const {
    const std::string kind = node->kind().toQualString();
    return kind.back() == '_' && graph_.value(value).kind == ValueKind::kActivation &&
           node->inputs()[0]->uses().size() == 1;
  }

  const std::vector<int64_t>& shape_of(int v) const { return graph_.value(v).shape; }

  void translate(JitNode* node);
  // Whether `node` reads a floating tensor of a type other than the graph's.
  bool reads_another_floating_type(const JitNode* node) const;
  // An operator with a specialised translation where one applies, else a generic node.
  void translate_specialised(JitNode* node, const std::string& kind);
  // A stacked LSTM, GRU or RNN as one generic node per layer where its layers form a plain
  // chain (torchscript_recurrent.cpp); false where they do not.
  bool translate_recurrent_layers(JitNode* node, const std::string& kind);
  bool translate_structure(JitNode* node, const std::string& kind);
  // prim::If and prim::Loop of scripted code on constants of the import: the branch taken,
  // the loop unrolled (torchscript_control_flow.cpp); refused on computed values.
  void translate_branch(JitNode* node);
  void translate_loop(JitNode* node);
  // A Python number of a tensor (prim::NumToTensor, aten::Int, Bool, Float,
  // ScalarImplicit): a constant where the tensor is one, refused where the model computes it.
  void translate_number(JitNode* node, const std::string& kind);
  // prim::GetAttr: a submodule, a parameter or buffer (state), or a buffer as a constant.
  void translate_attribute(JitNode* node);
  // prim::ListConstruct: a constant list, or a list of tensors.
  void translate_list(JitNode* node);
  void translate_size(JitNode* node, const std::string& kind);
  // Makes the output trained (options_.output of a tuple or dict) the traced graph's only
  // output, and drops what only the others read (their nodes are not imported).
  void keep_trained_output(torch::jit::Graph& jit) const;
  // torch::jit::EliminateDeadCode, except that a batch norm updating running statistics
  // stays, with what it reads, where nothing reads its result (a branch to an output not
  // trained, or to none: an auxiliary head), as PyTorch's forward updates them; and that
  // in-place writes whose results and targets no one reads go too.
  static void eliminate_dead_code(torch::jit::Graph& jit);
  // The batch norms that update running statistics (training mode, with statistics).
  static std::vector<JitNode*> norms_updating_statistics(torch::jit::Graph& jit);
  // Appends options_.loss and its target.
  void add_loss(int output);
  // [N, T, C] logits as [N, C, T] (a transposed view node), for cross-entropy.
  int classes_second(int logits);
  // Whether the trace feeds its input to an embedding's indices (token ids: int64).
  static bool input_is_token_ids(const JitValue* input);
  // The values the trace passes to batch or instance norms or writes into (their
  // running statistics and buffers the forward updates stay state; any other buffer is a
  // constant of the trace).
  static std::set<const JitValue*> state_arguments(const torch::jit::Graph& jit);
  // A batch norm or dropout recorded in evaluation mode inside a model traced in training
  // mode: a submodule the user put in eval() (a frozen batch norm), run as recorded.
  bool kept_in_evaluation(const JitNode* node, size_t training_arg) const;
  void translate_conv(JitNode* node, const std::string& kind);
  // prim::TupleUnpack, prim::TupleIndex, aten::__getitem__ and prim::DictIndex of a
  // tuple, list or dict the trace builds (prim::TupleConstruct, ListConstruct,
  // DictConstruct): the element's entry.
  void translate_element(JitNode* node, const std::string& kind);
  void translate_pool(JitNode* node, const std::string& kind);
  void translate_elementwise(JitNode* node, const std::string& kind);
  void translate_reshape(JitNode* node, const std::string& kind);
  void translate_transpose(JitNode* node, const std::string& kind);
  // view / reshape / flatten / contiguous of channels viewed in groups.
  void ungroup_channels(JitNode* node, const std::string& kind);
  // The tensor a view of channels in groups stands for, its steps made generic nodes.
  int grouped_channels_value(const Entry& grouped);
  // A view's target shape (argument 1) with -1 resolved for `numel` entries.
  std::vector<int64_t> target_shape(const JitNode* node, int64_t numel) const;
  void translate_batch_norm(JitNode* node);
  void translate_split(JitNode* node, const std::string& kind);
  void translate_unpack(JitNode* node);
  bool fold_arithmetic(JitNode* node, const std::string& kind);
  // Any other operator with a schema and a derivative, as a generic node (aten_call.h).
  // `overrides`: arguments given other values than the trace's, by position.
  // Refuses an in-place operator whose out-of-place form with its result in the written
  // tensor's place would not compute what the trace does (a write into the model's state,
  // or into a tensor read again afterwards).
  void check_in_place_target(JitNode* node, const std::string& kind, size_t written = 0);
  // Refuses an operator whose result's shape follows a computed tensor's values
  // (nonzero, masked_select, unique, indexing by a boolean mask): a plan fixes shapes.
  void refuse_value_shaped(JitNode* node, const std::string& kind);
  // A call that writes one of its arguments, as the out-of-place call monet runs.
  struct OutOfPlace {
    std::string name, overload;
    std::optional<size_t> out;  // `out=`: the argument written, which the call drops
    std::optional<int> buffer;  // the buffer it writes (buffer_written), if any
  };
  OutOfPlace out_of_place_call(JitNode* node, const std::string& kind);
  // The buffer a mutating call's argument `i` writes: a buffer of the model, or the value a
  // previous call will write into one; none for anything else (AtenCall::writes_buffer).
  std::optional<int> buffer_written(JitNode* node, size_t i);
  // The call emitted for `result` writes `buffer` when the iteration ends, in place of
  // the buffer's previous writer in this forward.
  void write_buffer(const JitValue* result, int buffer);
  void translate_aten(JitNode* node, const std::string& kind,
                      const std::map<size_t, c10::IValue>& overrides = {});
  // A result of a generic operator that becomes a node: its index among the operator's
  // results (or in its list of tensors) and the trace's value for it.
  struct Result {
    int index;
    const JitValue* value;
  };
  // The results of `node` the model uses (translate_aten).
  std::vector<Result> used_results(JitNode* node, const std::string& kind);
  bool generic_path() const { return options_.activations_and_norms == OperatorPath::kGeneric; }
  // An operator none of whose arguments is a tensor of the model (or one it reads only
  // for its shape and type: new_zeros, zeros_like), run at import: its results are
  // constants of the trace (Swin's attention masks). Returns false for any other.
  bool fold_constants(JitNode* node, const std::string& kind);
  // An in-place update of a parameter or buffer inside forward(): batch norm's
  // num_batches_tracked += 1 is skipped (returns true), any other refused (a recomputation
  // would repeat it). Returns false for any other node.
  bool skip_state_update(JitNode* node, const std::string& kind);

  std::string path_;
  torch::jit::Module module_;
  std::vector<InputSpec> inputs_;
  ImportOptions options_;
  Graph graph_;
  std::map<std::string, std::pair<at::Tensor, bool>> state_;  // name -> (tensor, trainable)
  std::map<std::string, int> state_ids_;
  // Graph value of each parameter or buffer tensor: names sharing one tensor (tied
  // weights) share the value.
  std::map<const c10::TensorImpl*, int> state_by_tensor_;
  // Buffers the forward writes (AtenCall::writes_buffer): by activation, the buffer it
  // will be written to; by buffer, the node that writes it last.
  std::map<int, int> buffer_of_value_, buffer_writer_;
  std::set<const JitValue*> state_arguments_;
  std::unordered_map<const JitValue*, Entry> entries_;
  std::set<std::string> names_;
  std::string scope_;
  // Random calls whose results are several nodes (AtenCall::random_stream), counted.
  int shared_random_streams_ = 0;
};

}  // namespace monet::torchscript
