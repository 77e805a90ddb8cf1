#include "plan/plan.h"

#include "graph/aten_call.h"

namespace monet {
namespace {

const char* kind_name(InstrKind k) {
  switch (k) {
    case InstrKind::kForward:
      return "forward";
    case InstrKind::kBackward:
      return "backward";
    case InstrKind::kFree:
      return "free";
  }
  return "?";
}

}  // namespace

std::string describe(const Graph& g, const Instruction& in) {
  std::string s = std::string(kind_name(in.kind)) + " " + g.node(in.node).name;
  if (in.kind == InstrKind::kBackward) s += std::string(" ") + backward_part_name(in.part);
  if (in.kind == InstrKind::kFree)
    s += in.slot == Slot::kOutput ? " output" : " intermediate";
  else
    s += " [" + in.impl + "]";
  return s;
}

nlohmann::json plan_to_json(const Graph& g, const Plan& plan) {
  nlohmann::json program = nlohmann::json::array();
  for (const auto& in : plan.program) {
    nlohmann::json j = {{"op", kind_name(in.kind)}, {"node", g.node(in.node).name}};
    if (in.kind == InstrKind::kFree)
      j["slot"] = in.slot == Slot::kOutput ? "output" : "intermediate";
    else
      j["impl"] = in.impl;
    if (in.kind == InstrKind::kBackward) j["part"] = backward_part_name(in.part);
    program.push_back(j);
  }
  nlohmann::json model = {{"name", plan.model},
                          {"batch", plan.config.batch},
                          {"image", plan.config.image},
                          {"width", plan.config.width},
                          {"classes", plan.config.classes}};
  const std::vector<InputSpec>& inputs = plan.config.inputs;
  if (inputs.size() == 1 && !inputs[0].dtype) model["input_shape"] = inputs[0].shape;
  if (inputs.size() > 1 || (inputs.size() == 1 && inputs[0].dtype))
    for (const InputSpec& in : inputs) model["inputs"].push_back(input_spec_string(in));
  if (!plan.config.import.output.empty()) model["output"] = plan.config.import.output;
  if (plan.config.import.loss != OpKind::kCrossEntropyLoss)
    model["loss"] = op_name(plan.config.import.loss);
  if (plan.config.import.classes == ClassDim::kLast) model["class_dim"] = "last";
  if (plan.config.import.lossy == LossyOffer::kOffered)
    model["lossy"] = lossy_offer_name(plan.config.import.lossy);
  if (plan.config.import.activations_and_norms != OperatorPath::kSpecialised)
    model["operator_path"] = operator_path_name(plan.config.import.activations_and_norms);
  nlohmann::json j = {{"format", "monet-plan-1"}, {"graph", g.name()},
                      {"model", model},           {"fingerprint", plan.graph_fingerprint},
                      {"planner", plan.planner},  {"program", program}};
  if (g.update_mode() != UpdateMode::kAfterBackward)
    j["optimizer_update"] = update_mode_name(g.update_mode());
  return j;
}

void read_plan_model(const nlohmann::json& j, std::string* model, ModelConfig* config) {
  try {
    if (!j.is_object() || j.value("format", "") != "monet-plan-1")
      throw PlanError("not a monet plan (no \"format\": \"monet-plan-1\")");
    const auto& m = j.at("model");
    *model = m.at("name").get<std::string>();
    config->batch = m.at("batch").get<int64_t>();
    config->image = m.at("image").get<std::vector<int64_t>>();
    config->width = m.at("width").get<double>();
    config->classes = m.at("classes").get<int64_t>();
    if (m.contains("input_shape"))
      config->inputs = {{m.at("input_shape").get<std::vector<int64_t>>(), std::nullopt}};
    if (m.contains("inputs")) {
      config->inputs.clear();
      for (const auto& text : m.at("inputs"))
        config->inputs.push_back(parse_input_spec(text.get<std::string>()));
    }
    config->import.output = m.value("output", "");
    const std::string loss = m.value("loss", op_name(OpKind::kCrossEntropyLoss));
    config->import.loss = op_from_name(loss);
    if (!is_loss(config->import.loss))
      throw PlanError("not a monet plan: '" + loss + "' is no loss");
    const std::string class_dim = m.value("class_dim", "second");
    if (class_dim != "second" && class_dim != "last")
      throw PlanError("not a monet plan: class_dim '" + class_dim + "' is neither second nor last");
    config->import.classes = class_dim == "last" ? ClassDim::kLast : ClassDim::kSecond;
    config->import.lossy =
        lossy_offer_from_name(m.value("lossy", lossy_offer_name(LossyOffer::kExcluded)));
    config->import.activations_and_norms = operator_path_from_name(
        m.value("operator_path", operator_path_name(OperatorPath::kSpecialised)));
  } catch (const nlohmann::json::exception& e) {
    throw PlanError(std::string("not a monet plan: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw PlanError(std::string("not a monet plan: ") + e.what());
  }
}

UpdateMode plan_update_mode(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("optimizer_update")) return UpdateMode::kAfterBackward;
  try {
    return update_mode_from_name(j["optimizer_update"].get<std::string>());
  } catch (const std::exception& e) {
    throw PlanError(std::string("not a monet plan: \"optimizer_update\": ") + e.what());
  }
}

Plan plan_from_json(const Graph& g, const nlohmann::json& j) {
  Plan plan;
  read_plan_model(j, &plan.model, &plan.config);
  const UpdateMode update = plan_update_mode(j);
  if (update != g.update_mode())
    throw PlanError(std::string("the plan was made for ") + update_mode_name(update) +
                    " optimizer updates, this step's are " + update_mode_name(g.update_mode()));
  try {
    plan.graph_fingerprint = j.at("fingerprint").get<std::string>();
    plan.planner = j.value("planner", "");
  } catch (const nlohmann::json::exception& e) {
    throw PlanError(std::string("not a monet plan: ") + e.what());
  }
  if (plan.graph_fingerprint != g.fingerprint())
    throw PlanError("the plan was made for another graph (fingerprint " + plan.graph_fingerprint +
                    ", this model and shape have " + g.fingerprint() + ")");
  std::map<std::string, int> by_name;
  for (const auto& n : g.nodes()) by_name[n.name] = n.id;
  if (!j.contains("program") || !j["program"].is_array())
    throw PlanError("not a monet plan: no \"program\" list");
  const auto& program = j["program"];
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& e = program[i];
    const std::string where = "plan instruction " + std::to_string(i) + ": ";
    try {
      Instruction in;
      const std::string op = e.at("op");
      const std::string node = e.at("node");
      auto it = by_name.find(node);
      if (it == by_name.end()) throw PlanError(where + "no node named '" + node + "'");
      in.node = it->second;
      const Node& n = g.node(in.node);
      if (op == "forward") {
        in.kind = InstrKind::kForward;
        in.impl = e.at("impl");
        find_forward_impl(forward_impls(g, n), n, in.impl);
      } else if (op == "backward") {
        in.kind = InstrKind::kBackward;
        in.impl = e.at("impl");
        in.part = backward_part_from_name(e.at("part"));
        find_backward_impl(backward_impls(g, n), n, in.part, in.impl);
      } else if (op == "free") {
        in.kind = InstrKind::kFree;
        const std::string slot = e.at("slot");
        if (slot != "output" && slot != "intermediate")
          throw PlanError(where + "unknown slot '" + slot + "'");
        in.slot = slot == "output" ? Slot::kOutput : Slot::kIntermediate;
      } else {
        throw PlanError(where + "unknown instruction '" + op + "'");
      }
      plan.program.push_back(in);
    } catch (const PlanError&) {
      throw;
    } catch (const std::exception& ex) {
      throw PlanError(where + ex.what());
    }
  }
  return plan;
}

std::vector<bool> values_needing_grad(const Graph& g) {
  std::vector<bool> needs(g.values().size(), false);
  for (const auto& v : g.values()) needs[v.id] = v.kind == ValueKind::kParameter;
  const auto order = g.topological_order();
  for (int id : order) {
    const Node& n = g.node(id);
    // Integer and boolean results (indices, masks) and detached ones have no gradient.
    if (!takes_gradient(g, n.output)) continue;
    for (int in : n.inputs) needs[n.output] = needs[n.output] || needs[in];
  }
  // As autograd: only what the loss is computed from, through results that take a
  // gradient, gets one (a batch norm's result that nothing reads, kept for its running
  // statistics, gets none; nor what only a detached or no_grad result is computed from).
  std::vector<bool> reaches_loss(g.values().size(), false);
  reaches_loss[g.loss_value()] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.node(*it);
    if (!reaches_loss[n.output] || !takes_gradient(g, n.output)) continue;
    for (int in : n.inputs) reaches_loss[in] = true;
  }
  for (size_t v = 0; v < needs.size(); ++v) needs[v] = needs[v] && reaches_loss[v];
  return needs;
}

std::vector<bool> nodes_needing_backward(const Graph& g) {
  const auto needs = values_needing_grad(g);
  std::vector<bool> out(g.nodes().size(), false);
  for (const auto& n : g.nodes()) out[n.id] = needs[n.output];
  return out;
}

int lossy_forwards(const Graph& g, const Plan& plan) {
  int count = 0;
  for (const Instruction& in : plan.program) {
    if (in.kind != InstrKind::kForward) continue;
    const Node& n = g.node(in.node);
    count += find_forward_impl(forward_impls(g, n), n, in.impl).lossy;
  }
  return count;
}

}  // namespace monet
