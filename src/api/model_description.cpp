// describe(), model_zoo(): a model's operators and sizes, and the zoo, for `monet show`
// and `monet models`.
#include <monet/model_description.h>

#include "api/impl_access.h"
#include "api/model_description_impl.h"
#include "api/model_impl.h"
#include "graph/torchscript/torchscript_import.h"
#include "graph/zoo/model_zoo.h"

namespace monet {

std::vector<ZooModel> model_zoo() {
  std::vector<ZooModel> out;
  for (const ModelInfo& m : zoo_models())
    out.push_back({m.name, m.description, m.spatial_dims, m.default_image, m.default_classes});
  return out;
}

ModelDescription describe_graph(const Graph& g, const std::string& model, const ModelConfig& c) {
  ModelDescription d;
  d.model = model;
  d.batch = c.batch;
  d.image = c.image;
  d.width = c.width;
  d.classes = c.classes;
  d.fingerprint = g.fingerprint();
  d.parameters = g.parameter_count();
  d.parameter_bytes = g.parameter_bytes();
  d.activation_bytes = g.activation_bytes();
  d.generic_operators = g.generic_node_count();
  for (const Node& n : g.nodes()) {
    OperatorDescription op;
    op.id = n.id;
    op.name = n.name;
    op.kind = op_name(n.op);
    for (int id : n.inputs) op.inputs.push_back(g.value(id).name);
    op.attributes = describe_attrs(n.op, n.attrs);
    op.output_shape = g.value(n.output).shape;
    op.output_bytes = g.value(n.output).bytes();
    d.operators.push_back(std::move(op));
  }
  return d;
}

ModelDescription describe(const ModelSpec& spec) {
  return describe_graph(build_graph(spec), spec.model, model_config(spec));
}

bool is_traced_model_file(const std::string& model) { return is_torchscript_path(model); }

ModelInput model_input_from_string(const std::string& text) {
  const InputSpec in = parse_input_spec(text);
  return {in.shape, in.dtype};
}

ModelDescription describe(const Model& model) {
  const Model::Impl& m = *impl_of(model);
  return describe_graph(m.graph, m.spec.model, model_config(m.spec));
}

}  // namespace monet
