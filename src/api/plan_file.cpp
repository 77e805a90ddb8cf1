// PlanFile: reading a plan file and what it does with each operator of its model.
#include <monet/plan_file.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "api/impl_access.h"
#include "api/model_description_impl.h"
#include "api/model_impl.h"
#include "api/plan_file_impl.h"
#include "graph/torchscript/torchscript_import.h"
#include "plan/plan_validator.h"
#include "runtime/torchscript_weights.h"

namespace monet {

nlohmann::json read_plan_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("cannot read plan '" + path + "'");
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("plan '" + path + "' is not valid JSON (truncated?): " + e.what());
  }
}

Plan plan_for_graph(const Graph& g, const nlohmann::json& j, const std::string& path) {
  try {
    Plan plan = plan_from_json(g, j);
    validate_plan(g, plan);
    return plan;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("plan '" + path + "' is not valid JSON (truncated?): " + e.what());
  } catch (const PlanError& e) {
    throw std::invalid_argument("plan '" + path + "': " + e.what());
  }
}

Plan read_plan(const Graph& g, const std::string& path) {
  const nlohmann::json j = read_plan_json(path);
  if (j.is_object() && j.contains("fingerprint") && j["fingerprint"] != g.fingerprint())
    throw PlanMismatch("plan '" + path + "' was made for another model or shape (fingerprint " +
                       j["fingerprint"].dump() + "; this model and shape have \"" +
                       g.fingerprint() + "\")");
  return plan_for_graph(g, j, path);
}

PlanFile PlanFile::load(const std::string& path) {
  const nlohmann::json j = read_plan_json(path);
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  std::string model;
  ModelConfig config;
  try {
    read_plan_model(j, &model, &config);
    impl->graph = build_graph(model, config);
    impl->graph.set_update_mode(plan_update_mode(j));
  } catch (const PlanError& e) {
    throw std::invalid_argument("plan '" + path + "': " + e.what());
  }
  impl->plan = plan_for_graph(impl->graph, j, path);
  impl->plan.model = model;
  impl->plan.config = config;
  PlanFile p;
  ImplAccess::set(p, std::move(impl));
  return p;
}

const std::string& PlanFile::path() const { return impl_->path; }
const std::string& PlanFile::planner() const { return impl_->plan.planner; }
const std::string& PlanFile::model_name() const { return impl_->plan.model; }

OptimizerUpdate PlanFile::optimizer_update() const {
  return optimizer_update_of(impl_->graph.update_mode());
}

PlanSummary PlanFile::summary() const { return summarize(impl_->graph, impl_->plan); }

ModelDescription PlanFile::model_description() const {
  return describe_graph(impl_->graph, impl_->plan.model, impl_->plan.config);
}

std::vector<OperatorChoice> PlanFile::operator_choices() const {
  std::vector<OperatorChoice> c(impl_->graph.nodes().size());
  for (const Instruction& in : impl_->plan.program) {
    OperatorChoice& n = c[in.node];
    if (in.kind == InstrKind::kForward) {
      if (n.forward.empty())
        n.forward = in.impl;
      else
        ++n.recomputations;
    } else if (in.kind == InstrKind::kBackward) {
      n.backward += (n.backward.empty() ? "" : "+") + in.impl;
    }
  }
  return c;
}

ModelState initial_weights(const PlanFile::Impl& p) {
  ModelState state = ModelState::initialize(p.graph, 0);
  if (!is_torchscript_path(p.plan.model)) return state;
  try {
    load_torchscript_weights(p.graph, state, p.plan.model);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument("plan '" + p.path + "': " + e.what());
  }
  return state;
}

PlanSummary summarize(const Graph& graph, const Plan& plan) {
  PlanSummary s;
  s.instructions = static_cast<int>(plan.program.size());
  bool backward = false;
  for (const auto& in : plan.program) {
    backward = backward || in.kind == InstrKind::kBackward;
    s.recomputations += backward && in.kind == InstrKind::kForward;
    s.explicit_frees += in.kind == InstrKind::kFree;
  }
  s.lossy_forwards = lossy_forwards(graph, plan);
  return s;
}

}  // namespace monet
