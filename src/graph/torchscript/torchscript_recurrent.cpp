// A stacked recurrent layer (nn.LSTM, nn.GRU, nn.RNN with num_layers > 1) as one generic
// node per layer, each layer's output the next one's input: a backward then re-runs, or
// keeps the autograd graph of, one layer and not the whole stack, and the planner chooses
// for each layer. Only where the stack is a plain chain of its layers: initial states
// constant (the zeros nn.LSTM makes when none is given), no dropout between the layers in
// training (its noise is inside the operator), and the final states unused.
#include <set>

#include "graph/aten_call.h"
#include "graph/torchscript/torchscript_importer.h"

namespace monet::torchscript {
namespace {

// `states` (a tensor [layers * directions, N, H], or a list of them: LSTM's h0 and c0)
// narrowed to one layer's `directions` rows.
c10::IValue layer_states(const c10::IValue& states, int64_t layer, int64_t directions) {
  const auto rows = [&](const at::Tensor& t) {
    return t.narrow(0, layer * directions, directions).contiguous();
  };
  if (states.isTensor()) return rows(states.toTensor());
  const c10::List<c10::IValue> list = states.toList();
  c10::impl::GenericList out(list.elementType());
  for (const c10::IValue& t : list) out.push_back(rows(t.toTensor()));
  return out;
}

}  // namespace

bool Importer::translate_recurrent_layers(JitNode* node, const std::string& kind) {
  static const std::set<std::string> recurrent = {"aten::lstm", "aten::gru", "aten::rnn_tanh",
                                                  "aten::rnn_relu"};
  // The .input overloads: (input, hx, params, has_biases, num_layers, dropout, train,
  // bidirectional, batch_first).
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!recurrent.count(kind) || !schema || node->inputs().size() != 9) return false;
  const Entry& params = arg(node, 2);
  const Entry& states = arg(node, 1);
  const int64_t layers = int_arg(node, 4, "num_layers");
  const bool noise = double_arg(node, 5, "dropout") > 0 && bool_arg(node, 6, "train");
  const int64_t directions = bool_arg(node, 7, "bidirectional") ? 2 : 1;
  if (layers < 2 || noise || states.kind != Entry::kConstant || params.kind != Entry::kTensorList ||
      params.values.size() % layers != 0)
    return false;
  for (size_t i = 1; i < node->outputs().size(); ++i)
    if (node->outputs()[i]->hasUses()) return false;
  const size_t per_layer = params.values.size() / static_cast<size_t>(layers);
  const std::string module = parent(graph_.value(params.values[0]).name);
  int x = tensor(node, 0);
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<c10::IValue> arguments;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Entry& e = arg(node, i);
      arguments.push_back(e.kind == Entry::kConstant ? e.constant : c10::IValue());
    }
    arguments[1] = layer_states(states.constant, l, directions);
    arguments[4] = c10::IValue(int64_t{1});
    std::vector<int> inputs = {x}, slots = {0}, list_indices = {-1};
    for (size_t j = 0; j < per_layer; ++j) {
      inputs.push_back(params.values[l * per_layer + j]);
      slots.push_back(2);
      list_indices.push_back(static_cast<int>(j));
    }
    const AtenInputs in = aten_inputs_of(graph_, inputs);
    OpAttrs a;
    try {
      a.aten = make_aten_call(schema->name(), schema->overload_name(), arguments, slots, in.shapes,
                              in.differentiable, in.strides, in.dtypes, 0, list_indices);
      x = graph_.add_node(OpKind::kAten, node_name(join(module, "layer" + std::to_string(l)), ""),
                          inputs, std::move(a));
    } catch (const std::exception& err) {  // AtenCallError, GraphError
      fail(node, std::string("unsupported operator '") + kind + "': " + err.what());
    }
  }
  Entry out;
  out.kind = Entry::kTensor;
  out.value = x;
  entries_[node->outputs()[0]] = out;
  return true;
}

}  // namespace monet::torchscript
