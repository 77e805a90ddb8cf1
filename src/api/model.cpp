#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "api/model_impl.h"
#include "graph/torchscript/torchscript_import.h"
#include "graph/zoo/model_zoo.h"
#include "runtime/torchscript_weights.h"

namespace monet {

namespace {
struct Loss {
  LossKind kind;
  const char* name;
  OpKind op;  // the graph's loss operator
};
constexpr Loss kLosses[] = {
    {LossKind::kCrossEntropy, "cross_entropy", OpKind::kCrossEntropyLoss},
    {LossKind::kMSE, "mse", OpKind::kMSELoss},
    {LossKind::kBCEWithLogits, "bce_with_logits", OpKind::kBCEWithLogitsLoss},
    {LossKind::kSum, "sum", OpKind::kSumLoss},
    {LossKind::kSequenceCrossEntropy, "sequence_cross_entropy", OpKind::kCrossEntropyLoss}};

const Loss& loss_of(LossKind kind) {
  for (const Loss& l : kLosses)
    if (l.kind == kind) return l;
  throw std::invalid_argument("unknown loss kind");
}
}  // namespace

const char* loss_kind_name(LossKind kind) { return loss_of(kind).name; }

LossKind loss_kind_from_name(const std::string& name) {
  std::string known;
  for (const Loss& l : kLosses) {
    if (name == l.name) return l.kind;
    known += known.empty() ? l.name : std::string(", ") + l.name;
  }
  throw std::invalid_argument("unknown loss '" + name + "' (known: " + known + ")");
}

OpKind loss_op(LossKind kind) { return loss_of(kind).op; }

ImportOptions import_options(const std::string& output, LossKind loss) {
  ImportOptions o;
  o.output = output;
  o.loss = loss_op(loss);
  if (loss == LossKind::kSequenceCrossEntropy) o.classes = ClassDim::kLast;
  return o;
}

ModelConfig model_config(const ModelSpec& s) {
  if (is_traced_model(s)) {
    if (!s.input_shape.empty() && !s.inputs.empty())
      throw std::invalid_argument(
          "give a traced model's input as input_shape or as inputs, "
          "not both");
    ModelConfig c;
    if (!s.input_shape.empty()) c.inputs.push_back({s.input_shape, std::nullopt});
    for (const ModelInput& in : s.inputs) c.inputs.push_back({in.shape, in.dtype});
    c.import = import_options(s.output, s.loss);
    c.import.lossy =
        s.lossy == LossyImplementations::kOffered ? LossyOffer::kOffered : LossyOffer::kExcluded;
    c.import.activations_and_norms = s.operator_path == TracedOperatorPath::kGeneric
                                         ? OperatorPath::kGeneric
                                         : OperatorPath::kSpecialised;
    const std::vector<int64_t> first = c.inputs.empty() ? s.input_shape : c.inputs[0].shape;
    c.batch = first.empty() ? 0 : first[0];
    if (first.size() > 2) c.image.assign(first.begin() + 2, first.end());
    return c;
  }
  if (!s.input_shape.empty() || !s.inputs.empty())
    throw std::invalid_argument(
        "input_shape and inputs apply to traced models (a .pt file); "
        "zoo model '" +
        s.model + "' takes batch and image");
  if (!s.output.empty() || s.loss != LossKind::kCrossEntropy)
    throw std::invalid_argument("output and loss apply to traced models (a .pt file); zoo model '" +
                                s.model + "' has its own loss");
  if (s.operator_path != TracedOperatorPath::kSpecialised)
    throw std::invalid_argument(
        "the generic operator path applies to traced models (a .pt file); zoo model '" + s.model +
        "' is built from its own operators");
  if (s.lossy == LossyImplementations::kOffered)
    throw std::invalid_argument(
        "lossy implementations apply to traced models (a .pt file); zoo "
        "model '" +
        s.model + "' has no operator with one");
  const ModelInfo& info = zoo_model_info(s.model);
  ModelConfig c;
  c.batch = s.batch;
  c.width = s.width;
  c.classes = s.classes > 0 ? s.classes : info.default_classes;
  c.image = s.image.empty() ? info.default_image : s.image;
  return c;
}

Graph build_graph(const std::string& model, const ModelConfig& c) {
  if (!is_torchscript_path(model)) {
    try {
      return build_zoo_model(model, c);
    } catch (const GraphError& e) {
      throw std::invalid_argument("cannot build " + model + " at image size " +
                                  image_size_string(c.image) + ": " + e.what());
    }
  }
  if (c.inputs.empty())
    throw std::invalid_argument("traced model '" + model +
                                "' needs its input shape, batch first (e.g. 8,3,224,224)");
  if (!std::ifstream(model))
    throw std::invalid_argument("cannot read traced model '" + model + "'");
  try {
    return import_torchscript(model, c.inputs, c.import);
  } catch (const ImportError& e) {
    if (!e.op.empty()) throw UnsupportedOperator(e.what(), e.op, e.source);
    throw std::invalid_argument(e.what());
  }
}

Graph build_graph(const ModelSpec& s) { return build_graph(s.model, model_config(s)); }

namespace {

// The graph's one value of `kind`; -1 when it has none and `optional`.
int only_value(const Graph& g, ValueKind kind, bool optional = false) {
  const auto ids = g.values_of_kind(kind);
  if (ids.empty() && optional) return -1;
  if (ids.size() != 1)
    throw std::invalid_argument(g.name() + " has " + std::to_string(ids.size()) + " " +
                                value_kind_name(kind) + " values; the API takes models with one");
  return ids[0];
}

at::Tensor checked(const Value& v, const torch::Tensor& t, const char* what) {
  if (!t.defined()) throw std::invalid_argument(std::string(what) + " is undefined");
  const std::vector<int64_t> shape = t.sizes().vec();
  if (shape != v.shape && !shape.empty() && shape.size() == v.shape.size() &&
      shape[0] < v.shape[0] && std::equal(shape.begin() + 1, shape.end(), v.shape.begin() + 1))
    throw PlanMismatch(std::string(what) + ": a batch of " + std::to_string(shape[0]) +
                       " samples, the plan is for batches of " + std::to_string(v.shape[0]) +
                       ": drop the smaller last batch (DataLoader(..., drop_last=True)) or "
                       "train it through the module itself, outside the plan");
  if (shape != v.shape)
    throw PlanMismatch(std::string(what) + " has shape " + shape_string(shape) +
                       ", the model was planned for " + shape_string(v.shape));
  if (t.is_floating_point() != at::isFloatingType(v.dtype) ||
      (t.scalar_type() == at::kBool) != (v.dtype == at::kBool))
    throw std::invalid_argument(std::string(what) + " has dtype " +
                                std::string(c10::toString(t.scalar_type())) + ", expected " +
                                c10::toString(v.dtype));
  // Floating point stays as given (follow_parameters then converts it to the parameters'
  // dtype, without a detour through the graph's float32); integers become the graph's.
  if (t.is_floating_point() || t.scalar_type() == v.dtype) return t;
  return t.to(v.dtype);
}

}  // namespace

bool is_traced_model(const ModelSpec& spec) { return is_torchscript_path(spec.model); }

Batch Model::Impl::batch(const std::vector<torch::Tensor>& inputs,
                         const torch::Tensor& target) const {
  Batch b = input_batch(inputs);
  if (target_value < 0) {
    if (target.defined())
      throw std::invalid_argument("the model's loss (the output summed) takes no target");
    return b;
  }
  b[target_value] = follow_parameters(checked(graph.value(target_value), target, "the target"));
  return b;
}

at::Tensor Model::Impl::follow_parameters(at::Tensor t) const {
  const auto params = graph.parameters();
  if (!params.empty() && t.is_floating_point()) t = t.to(state.tensor(params[0]).scalar_type());
  return t;
}

Batch Model::Impl::input_batch(const std::vector<torch::Tensor>& inputs) const {
  if (inputs.size() != input_values.size())
    throw std::invalid_argument(std::to_string(inputs.size()) + " input" +
                                (inputs.size() == 1 ? "" : "s") + " given; the model takes " +
                                std::to_string(input_values.size()));
  Batch b;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph.value(input_values[i]);
    // Several inputs are named "input." + forward's argument: the argument and position.
    const std::string argument = v.name.rfind("input.", 0) == 0 ? v.name.substr(6) : v.name;
    const std::string what = inputs.size() == 1
                                 ? "the input"
                                 : "input " + std::to_string(i + 1) + " of " +
                                       std::to_string(inputs.size()) + " ('" + argument + "')";
    b[v.id] = follow_parameters(checked(v, inputs[i], what.c_str()));
  }
  return b;
}

Model Model::load(const ModelSpec& spec, uint64_t seed) {
  auto impl = std::make_shared<Impl>();
  impl->spec = spec;
  impl->graph = build_graph(spec);
  impl->state = ModelState::initialize(impl->graph, seed);
  if (is_traced_model(spec)) load_torchscript_weights(impl->graph, impl->state, spec.model);
  impl->input_values = impl->graph.values_of_kind(ValueKind::kInput);
  if (impl->input_values.empty())
    throw std::invalid_argument(impl->graph.name() + " has no input value");
  impl->target_value = only_value(impl->graph, ValueKind::kTarget, /*optional=*/true);
  for (int id : impl->graph.parameters()) impl->state.tensor(id).requires_grad_(true);
  Model m;
  m.impl_ = std::move(impl);
  return m;
}

const ModelSpec& Model::spec() const { return impl_->spec; }

std::vector<torch::Tensor> Model::parameters() const {
  std::vector<torch::Tensor> out;
  for (int id : impl_->graph.parameters()) out.push_back(impl_->state.tensor(id));
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> Model::named_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (int id : impl_->graph.parameters())
    out.emplace_back(impl_->graph.value(id).name, impl_->state.tensor(id));
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> Model::named_buffers() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (int id : impl_->graph.values_of_kind(ValueKind::kBuffer))
    out.emplace_back(impl_->graph.value(id).name, impl_->state.tensor(id));
  return out;
}

std::vector<int64_t> Model::input_shape() const {
  return impl_->graph.value(impl_->input_values[0]).shape;
}
std::vector<std::vector<int64_t>> Model::input_shapes() const {
  std::vector<std::vector<int64_t>> shapes;
  for (int id : impl_->input_values) shapes.push_back(impl_->graph.value(id).shape);
  return shapes;
}
std::vector<torch::ScalarType> Model::input_dtypes() const {
  std::vector<torch::ScalarType> types;
  for (int id : impl_->input_values) types.push_back(impl_->graph.value(id).dtype);
  return types;
}
std::vector<int64_t> Model::target_shape() const {
  return impl_->target_value < 0 ? std::vector<int64_t>{}
                                 : impl_->graph.value(impl_->target_value).shape;
}
std::vector<int64_t> Model::output_shape() const {
  const Graph& g = impl_->graph;
  return g.value(g.node(g.value(g.loss_value()).producer).inputs[0]).shape;
}
torch::ScalarType Model::target_dtype() const {
  return impl_->target_value < 0 ? torch::kFloat : impl_->graph.value(impl_->target_value).dtype;
}
std::string Model::fingerprint() const { return impl_->graph.fingerprint(); }
int64_t Model::steps() const { return impl_->steps; }
int64_t Model::node_count() const { return static_cast<int64_t>(impl_->graph.nodes().size()); }
int64_t Model::generic_node_count() const { return impl_->graph.generic_node_count(); }

std::pair<std::vector<torch::Tensor>, torch::Tensor> Model::synthetic_batch(uint64_t seed) const {
  const Batch b = make_batch(impl_->graph, seed);
  std::vector<torch::Tensor> inputs;
  for (int id : impl_->input_values) inputs.push_back(b.at(id));
  return {inputs, impl_->target_value >= 0 ? b.at(impl_->target_value) : torch::Tensor()};
}

void Model::share_tensors(const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  const Graph& g = impl_->graph;
  std::map<std::string, int> ids;  // name -> the graph's parameter or buffer value
  for (int id : g.parameters()) ids[g.value(id).name] = id;
  for (int id : g.values_of_kind(ValueKind::kBuffer)) ids[g.value(id).name] = id;
  std::map<int, torch::Tensor> chosen;
  for (const auto& [name, t] : tensors) {
    auto it = ids.find(name);
    if (it == ids.end()) continue;  // e.g. num_batches_tracked: not part of the computation
    const Value& v = g.value(it->second);
    const torch::Tensor& mine = impl_->state.tensor(it->second);
    if (!t.defined() || t.sizes() != mine.sizes())
      throw std::invalid_argument("tensor '" + name + "' has shape " +
                                  (t.defined() ? shape_string(t.sizes().vec()) : "undefined") +
                                  ", the model's is " + shape_string(mine.sizes().vec()));
    if (v.kind == ValueKind::kParameter && (!t.is_floating_point() || !t.is_leaf()))
      throw std::invalid_argument("parameter '" + name +
                                  "' must be a floating-point leaf tensor to be trained");
    chosen[it->second] = t;
  }
  for (const auto& [name, id] : ids)
    if (!chosen.count(id)) throw std::invalid_argument("no tensor given for '" + name + "'");
  for (auto& [id, t] : chosen) {
    if (g.value(id).kind == ValueKind::kParameter) t.requires_grad_(true);
    impl_->state.tensor(id) = t;
  }
}

}  // namespace monet
