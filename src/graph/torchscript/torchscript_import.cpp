#include "graph/torchscript/torchscript_import.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <algorithm>
#include <functional>
#include <numeric>

#include "graph/aten_call.h"
#include "graph/attention_fusion.h"
#include "graph/shape_inference.h"
#include "graph/torchscript/instance_norm_statistics.h"
#include "graph/torchscript/torchscript_importer.h"
#include "graph/torchscript/view_writes.h"

namespace monet {
namespace torchscript {

at::ScalarType Importer::floating_dtype() const {
  const std::pair<const std::string, std::pair<at::Tensor, bool>>* first = nullptr;
  for (const auto& entry : state_) {
    const at::Tensor& t = entry.second.first;
    if (!t.is_floating_point()) continue;
    if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble &&
        t.scalar_type() != at::kBFloat16)
      throw ImportError("'" + path_ + "': tensor '" + entry.first + "' is " +
                        c10::toString(t.scalar_type()) +
                        "; monet plans float32, float64 and bfloat16 models (convert it with "
                        ".float() or .bfloat16())");
    if (!first) first = &entry;
    if (t.scalar_type() != first->second.first.scalar_type())
      throw ImportError("'" + path_ + "': tensor '" + entry.first + "' is " +
                        c10::toString(t.scalar_type()) + " and '" + first->first + "' " +
                        c10::toString(first->second.first.scalar_type()) +
                        "; monet plans models of one floating type");
  }
  return first ? first->second.first.scalar_type() : at::kFloat;
}

Graph Importer::run() {
  graph_.set_floating_dtype(floating_dtype());
  std::shared_ptr<torch::jit::Graph> jit;
  try {
    jit = module_.get_method("forward").graph()->copy();
  } catch (const c10::Error& e) {
    throw ImportError("'" + path_ + "' has no forward method: " + e.what_without_backtrace());
  }
  torch::jit::Inline(*jit);
  // A tuple built and then unpacked (a submodule returning two results, one of them
  // unread) becomes its elements, so that what only the unread one needs is dropped.
  torch::jit::LowerSimpleTuples(jit);
  eliminate_dead_code(*jit);
  // A write into a view nothing reads afterwards (torchvision MViT's in-place dropout on
  // its class token, x[:, 0]) leaves scatters into a base no one reads: dropped.
  if (functionalize_view_writes(*jit) > 0) eliminate_dead_code(*jit);
  expose_instance_norm_statistics(*jit);
  keep_trained_output(*jit);
  const auto inputs = jit->inputs();
  if (inputs.size() != inputs_.size() + 1)
    throw ImportError("'" + path_ + "': forward takes " + std::to_string(inputs.size() - 1) +
                      " input" + (inputs.size() == 2 ? "" : "s") + ", " +
                      std::to_string(inputs_.size()) + " given (one input shape each)");
  entries_[inputs[0]] = module_entry("");
  state_arguments_ = state_arguments(*jit);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const JitValue* in = inputs[i + 1];
    Entry x;
    x.kind = Entry::kTensor;
    // One input keeps the name "input" (and its models their fingerprints); several are
    // named after forward's arguments.
    const std::string name = inputs_.size() == 1 ? "input" : "input." + in->debugNameBase();
    const at::ScalarType dtype =
        inputs_[i].dtype.value_or(input_is_token_ids(in) ? at::kLong : graph_.floating_dtype());
    x.value = graph_.add_input(name, inputs_[i].shape, dtype);
    entries_[in] = x;
  }
  for (JitNode* node : jit->nodes()) translate(node);
  const Entry& output = entry(jit->outputs()[0]);
  if (output.kind != Entry::kTensor)
    throw ImportError("'" + path_ + "': the model's output is not a tensor it computes");
  if (graph_.value(output.value).kind == ValueKind::kInput)
    throw ImportError("'" + path_ + "': the model's output is its input '" +
                      graph_.value(output.value).name +
                      "' as it is: nothing is computed to plan (choose another output)");
  add_loss(output.value);
  if (!generic_path()) graph_ = fuse_attention(graph_);
  copy_views_where_needed(graph_);
  graph_.validate();
  return std::move(graph_);
}

bool Importer::input_is_token_ids(const JitValue* input) {
  // Indices of an embedding or an embedding bag, or reshaped into them (EmbeddingBag
  // flattens [N, T] ids).
  static const std::set<std::string> reshapes = {"aten::reshape", "aten::view", "aten::flatten",
                                                 "aten::contiguous"};
  for (const auto& use : input->uses()) {
    const std::string kind = use.user->kind().toQualString();
    if ((kind == "aten::embedding" || kind == "aten::embedding_bag") && use.offset == 1)
      return true;
    if (reshapes.count(kind) && use.offset == 0 && input_is_token_ids(use.user->output()))
      return true;
  }
  return false;
}

std::set<const JitValue*> Importer::state_arguments(const torch::jit::Graph& jit) {
  static const std::set<std::string> norms = {"aten::batch_norm", "aten::instance_norm",
                                              "aten::_batch_norm_impl_index",
                                              "aten::native_batch_norm"};
  std::set<const JitValue*> args;
  for (const JitNode* node : jit.nodes()) {
    if (norms.count(node->kind().toQualString()))
      for (const JitValue* v : node->inputs()) args.insert(v);
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema || !schema->is_mutable()) continue;
    for (size_t i = 0; i < schema->arguments().size() && i < node->inputs().size(); ++i) {
      const auto& alias = schema->arguments()[i].alias_info();
      if (alias && alias->isWrite()) args.insert(node->inputs()[i]);  // written in place
    }
  }
  return args;
}

bool Importer::kept_in_evaluation(const JitNode* node, size_t training_arg) const {
  // The module's `training` attribute: the mode it was traced in.
  if (!module_.is_training() || node->inputs().size() <= training_arg) return false;
  const auto training = torch::jit::toIValue(node->inputs()[training_arg]);
  return training && training->isBool() && !training->toBool();
}

void Importer::keep_trained_output(torch::jit::Graph& jit) const {
  if (jit.outputs().size() != 1)
    throw ImportError("'" + path_ + "': the traced forward returns " +
                      std::to_string(jit.outputs().size()) + " values");
  JitNode* node = jit.outputs()[0]->node();
  const std::string kind = node->kind().toQualString();
  std::vector<std::pair<std::string, JitValue*>> named;  // the outputs, by name
  if (kind == "prim::TupleConstruct") {
    for (size_t i = 0; i < node->inputs().size(); ++i)
      named.emplace_back(std::to_string(i), node->inputs()[i]);
  } else if (kind == "prim::DictConstruct") {
    for (size_t i = 0; i + 1 < node->inputs().size(); i += 2) {
      const auto key = torch::jit::toIValue(node->inputs()[i]);
      if (!key || !key->isString()) fail(node, "a dict output needs string keys");
      named.emplace_back(key->toStringRef(), node->inputs()[i + 1]);
    }
  } else {
    if (!options_.output.empty())
      throw ImportError("'" + path_ + "': the model returns one tensor; output '" +
                        options_.output + "' names none");
    return;
  }
  std::string names;
  for (const auto& [name, value] : named) {
    names += (names.empty() ? "" : ", ") + name;
    if (!options_.output.empty() && name != options_.output) continue;
    if (!value->type()->cast<c10::TensorType>())
      throw ImportError("'" + path_ + "': the output '" + name + "' is not a tensor");
    // The other outputs, and what only they read, are not computed; a batch norm on the way
    // to one still updates its running statistics, as PyTorch's forward does.
    jit.eraseOutput(0);
    jit.registerOutput(value);
    eliminate_dead_code(jit);
    return;
  }
  throw ImportError("'" + path_ + "': no output '" + options_.output + "' (the model returns " +
                    names + ")");
}

void Importer::add_loss(int output) {
  if (options_.loss == OpKind::kCrossEntropyLoss && options_.classes == ClassDim::kLast) {
    const std::vector<int64_t>& logits = graph_.value(output).shape;
    if (logits.size() != 3)
      throw ImportError("'" + path_ + "': sequence cross-entropy needs logits [batch, " +
                        "positions, classes]; the output has shape " + shape_string(logits));
    output = classes_second(output);
  }
  const std::vector<int64_t> shape = graph_.value(output).shape;  // add_input may move values
  if (options_.loss == OpKind::kSumLoss) {
    graph_.add_node(OpKind::kSumLoss, unused_name("loss"), {output});
    return;
  }
  if (options_.loss == OpKind::kCrossEntropyLoss) {
    if (shape.size() < 2)
      throw ImportError("'" + path_ + "': cross-entropy needs logits [batch, classes, ...]; " +
                        "the output has shape " + shape_string(shape));
    const int t = graph_.add_input(unused_name("target"), cross_entropy_target_shape(shape),
                                   at::kLong, ValueKind::kTarget);
    graph_.add_node(OpKind::kCrossEntropyLoss, unused_name("loss"), {output, t});
    return;
  }
  if (options_.loss != OpKind::kMSELoss && options_.loss != OpKind::kBCEWithLogitsLoss)
    throw ImportError(std::string("'") + op_name(options_.loss) + "' is not a loss");
  // Float targets of the prediction's type (float32 logits of a bfloat16 model).
  const at::ScalarType type = graph_.value(output).dtype;
  const int t = graph_.add_input(unused_name("target"), shape, type, ValueKind::kTarget);
  graph_.add_node(options_.loss, unused_name("loss"), {output, t});
}

int Importer::classes_second(int logits) {
  const Value& v = graph_.value(logits);
  OpAttrs a;
  try {
    a.aten = make_aten_call("aten::transpose", "int", {c10::IValue(), int64_t{1}, int64_t{2}}, {0},
                            {v.shape}, {true}, {view_strides(graph_, logits)}, {v.dtype});
  } catch (const AtenCallError& e) {
    throw ImportError("'" + path_ + "': cannot transpose the logits: " + e.what());
  }
  return graph_.add_node(OpKind::kAten, "loss_logits_classes_second", {logits}, std::move(a));
}

// A node that computes no tensor: a constant, a module's attribute, a list, a tuple's or
// dict's construction or element, a size or arithmetic on sizes and constants. Returns
// whether `node` was one.
bool Importer::translate_structure(JitNode* node, const std::string& kind) {
  if (kind == "prim::Constant") {
    auto v = torch::jit::toIValue(node->output());
    if (!v) fail(node, "constant of an unsupported type");
    entries_[node->output()] = constant_entry(*v);
  } else if (kind == "prim::GetAttr") {
    translate_attribute(node);
  } else if (kind == "prim::If") {
    translate_branch(node);
  } else if (kind == "prim::Loop") {
    translate_loop(node);
  } else if (kind == "prim::ListConstruct") {
    translate_list(node);
  } else if (kind == "prim::TupleConstruct" || kind == "prim::DictConstruct") {
    return true;  // the model's outputs (trained_output), or unpacked and indexed (below)
  } else if (kind == "prim::TupleUnpack" || kind == "prim::TupleIndex" ||
             kind == "aten::__getitem__" || kind == "prim::DictIndex") {
    translate_element(node, kind);
  } else if (kind == "aten::size" || kind == "aten::numel" || kind == "aten::dim") {
    translate_size(node, kind);
  } else if (kind == "prim::NumToTensor" || kind == "aten::Int" || kind == "aten::ScalarImplicit" ||
             kind == "aten::Bool" || kind == "aten::Float") {
    translate_number(node, kind);
  } else {
    return fold_arithmetic(node, kind) || fold_constants(node, kind);
  }
  return true;
}

void Importer::translate_attribute(JitNode* node) {
  const Entry& owner = arg(node, 0);
  if (owner.kind != Entry::kModule) fail(node, "attribute of something that is not a module");
  const std::string path = join(owner.path, node->s(torch::jit::attr::name));
  if (node->output()->type()->cast<c10::ClassType>()) {
    entries_[node->output()] = module_entry(path);
  } else if (state_.count(path) && !ends_with(path, "num_batches_tracked") &&
             !state_.at(path).second && !state_arguments_.count(node->output())) {
    // A buffer other than a norm's running statistics or one the forward writes (Swin's
    // relative position index, a causal attention mask) is a constant of the trace; one
    // the forward writes (a float average, an integer count) is state, written when the
    // iteration ends.
    // A float one an operator takes as a tensor argument (through a Linear) is a buffer
    // value of the graph there (tensor()). Batch norm's num_batches_tracked is state: its
    // increment is skipped (skip_state_update), and a forward reading it (a cumulative
    // average's factor, monet.optimize's trace of momentum=None) reads the live count.
    Entry e = constant_entry(state_.at(path).first);
    e.path = path;
    entries_[node->output()] = e;
  } else if (state_.count(path)) {
    Entry e;
    e.kind = Entry::kState;
    e.path = path;
    entries_[node->output()] = e;
  } else {
    fail(node, "attribute '" + path + "' is neither a submodule, a parameter nor a buffer");
  }
}

void Importer::translate_list(JitNode* node) {
  bool tensors = false, constants = true;
  for (const JitValue* v : node->inputs()) {
    const Entry& e = entry(v);
    tensors = tensors || e.kind == Entry::kTensor || e.kind == Entry::kState;
    constants = constants && e.kind == Entry::kConstant;
  }
  if (constants) {
    // A list of the trace's element type (int[], float[], Tensor?[]), as schemas take it.
    c10::impl::GenericList list(
        node->output()->type()->expectRef<c10::ListType>().getElementType());
    for (const JitValue* v : node->inputs()) list.push_back(entry(v).constant);
    entries_[node->output()] = constant_entry(c10::IValue(list));
  } else if (tensors) {
    Entry e;
    e.kind = Entry::kTensorList;
    c10::List<at::Tensor> list;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Entry& x = entry(node->inputs()[i]);
      const bool baked = x.kind == Entry::kConstant && x.constant.isTensor() &&
                         (x.path.empty() || !x.constant.toTensor().is_floating_point());
      list.push_back(baked ? x.constant.toTensor() : at::Tensor());
      if (baked) continue;
      e.values.push_back(tensor(node, i));
      e.positions.push_back(static_cast<int>(i));
    }
    if (e.values.size() < list.size()) {
      e.constant = c10::IValue(list);
    } else {
      e.positions.clear();
    }
    entries_[node->output()] = e;
  } else {
    fail(node, "list mixing tensors and other values");
  }
}

// aten::size, aten::numel and aten::dim of a static shape: constants.
void Importer::translate_size(JitNode* node, const std::string& kind) {
  const auto& s = shape_of(tensor(node, 0));
  int64_t n = static_cast<int64_t>(s.size());
  if (kind == "aten::size") {
    int64_t d = int_arg(node, 1, "dim");
    if (d < 0) d += n;
    n = s.at(d);
  } else if (kind == "aten::numel") {
    n = std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  }
  entries_[node->output()] = constant_entry(c10::IValue(n));
}

void Importer::translate(JitNode* node) {
  const std::string kind = node->kind().toQualString();
  if (translate_structure(node, kind)) return;
  // A call writing into an argument (`out=`) or into a buffer: the generic path, which
  // computes it out of place and writes the buffer when the iteration ends.
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (schema && schema->is_mutable() && (kind.back() != '_' || buffer_written(node, 0)))
    return translate_aten(node, kind);
  // Specialised operators compute in the graph's floating type; what reads another (a
  // bfloat16 model's float32 upcast for a norm or a softmax) is a generic node.
  if (reads_another_floating_type(node)) return translate_aten(node, kind);
  try {
    translate_specialised(node, kind);
  } catch (const NotSpecialised&) {
    translate_aten(node, kind);  // takes constants as they are, any element type
  }
}

bool Importer::reads_another_floating_type(const JitNode* node) const {
  const auto other = [&](int v) {
    const at::ScalarType dtype = graph_.value(v).dtype;
    return at::isFloatingType(dtype) && dtype != graph_.floating_dtype();
  };
  for (const JitValue* input : node->inputs()) {
    const auto e = entries_.find(input);
    if (e == entries_.end()) continue;
    if (e->second.kind == Entry::kTensor && other(e->second.value)) return true;
    if (e->second.kind == Entry::kTensorList &&
        std::any_of(e->second.values.begin(), e->second.values.end(), other))
      return true;
  }
  return false;
}

}  // namespace torchscript
}  // namespace monet
