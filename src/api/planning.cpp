// make_plan_file, smallest_iteration_budget, planner_info: the planner registry
// (planner/named_planner.h) behind the public planning API.
#include <monet/planning.h>

#include <cmath>
#include <filesystem>

#include "api/atomic_file.h"
#include "api/impl_access.h"
#include "api/model_impl.h"
#include "api/operator_costs_impl.h"
#include "api/plan_file_impl.h"
#include "api/planning_limit.h"
#include "graph/torchscript/torchscript_import.h"
#include "planner/named_planner.h"

namespace monet {
namespace {

SearchOptions search_options_of(const SearchSettings& s) {
  SearchOptions so;
  so.time_limit_seconds = s.time_limit_seconds;
  so.search_limit = search_limit_of(s.limit);
  so.max_nodes = s.max_nodes;
  so.relative_gap = s.relative_gap;
  so.threads = s.threads;
  so.progress = s.progress;
  if (s.branch_and_cut) so.strategy = SearchStrategy::kBranchAndCut;
  return so;
}

SolveReport solve_report(const PlannerOutcome& out) {
  const MonetResult& r = out.solve;
  const MilpResult& s = r.solve;
  SolveReport j;
  j.status = milp_status_name(s.status);
  j.columns = r.size.columns;
  j.rows = r.size.rows;
  j.nonzeros = r.size.nonzeros;
  j.solve_seconds = s.seconds;
  if (s.first_incumbent_seconds >= 0) j.first_incumbent_seconds = s.first_incumbent_seconds;
  j.objective_seconds = r.objective_seconds;
  j.bound_seconds = s.bound;
  j.lp_relaxation_seconds = s.lp_seconds;
  if (std::isfinite(s.gap)) j.gap = s.gap;
  j.plan_source = plan_source_name(r.source);
  j.warm_start = r.warm_start;
  j.floor_bytes = r.floor_bytes;
  if (r.first_fit_seconds >= 0) j.first_fit_seconds = r.first_fit_seconds;
  j.neighbourhoods = s.neighbourhoods;
  j.planner_seconds = r.seconds;
  j.solves = r.solves;
  j.program_budget_bytes = r.program_budget;
  for (const auto& [seconds, objective] : s.incumbent_trace)
    if (objective - s.bound <= 0.05 * std::abs(objective)) {
      j.seconds_to_within_5_percent = seconds;
      break;
    }
  return j;
}

// The plan file of `plan` for `model`: a traced model's plan names its file absolutely,
// so that it can be run from any directory.
PlanFile plan_file_of(Graph graph, const ModelSpec& spec, Plan plan) {
  auto impl = std::make_shared<PlanFile::Impl>();
  impl->graph = std::move(graph);
  plan.model = is_torchscript_path(spec.model)
                   ? std::filesystem::absolute(spec.model).lexically_normal().string()
                   : spec.model;
  plan.config = model_config(spec);
  impl->plan = std::move(plan);
  PlanFile p;
  ImplAccess::set(p, std::move(impl));
  return p;
}

// `model`'s graph for the step `request` plans (its optimizer update mode).
Graph graph_for(const Model& model, const PlanFileRequest& request) {
  Graph graph = impl_of(model)->graph;
  graph.set_update_mode(update_mode_of(request.optimizer_update));
  return graph;
}

}  // namespace

PlannerInfo planner_info(const std::string& name) {
  const PlannerEntry& e = find_planner(name);
  return {e.name, e.budget != BudgetUse::kNone, e.budget == BudgetUse::kRequired, e.needs_costs};
}

PlanFileOutcome make_plan_file(const Model& model, const OperatorCosts* costs,
                               const PlanFileRequest& request) {
  const Model::Impl& m = *impl_of(model);
  if (costs && impl_of(*costs).graph.fingerprint() != m.graph.fingerprint())
    throw std::invalid_argument("the costs are for another model or shape");
  Graph graph = graph_for(model, request);
  PlannerRequest r;
  r.planner = request.planner;
  r.budget_bytes = request.budget_bytes.value_or(-1);
  r.solver = search_options_of(request.search);
  r.seed = request.seed;
  r.post_optimise_convolutions = request.post_optimise_convolutions;
  const PlannerOutcome out = make_plan(graph, costs ? &impl_of(*costs).costs : nullptr, r);
  PlanFileOutcome o;
  if (out.solved) {
    o.solve = solve_report(out);
    o.out_of_time = out.solve.solve.status == MilpStatus::kNoSolution;
    if (request.budget_bytes)
      o.proven_infeasible_bytes = proven_infeasible_budget(out, *request.budget_bytes);
  }
  if (out.model_peak_bytes >= 0) o.checkmate_model_peak_bytes = out.model_peak_bytes;
  o.seconds = out.seconds;
  o.algorithm_switches = out.algorithm_switches;
  // (The lean and chain planners return their smallest plan when none fits.)
  if (out.found || !planner_info(request.planner).requires_budget)
    o.plan = plan_file_of(std::move(graph), m.spec, out.plan);
  return o;
}

SmallestBudget smallest_iteration_budget(const Model& model, const OperatorCosts& costs,
                                         const PlanFileRequest& request,
                                         std::optional<int64_t> infeasible_bytes) {
  const MinimumBudget m =
      smallest_budget(request.planner, graph_for(model, request), impl_of(costs).costs,
                      search_options_of(request.search), infeasible_bytes);
  SmallestBudget s;
  if (m.bytes > 0) s.bytes = m.bytes;
  if (m.bound_bytes >= 0) s.bound_bytes = m.bound_bytes;
  s.proven = m.proven;
  return s;
}

void PlanFile::save(const std::string& path) const {
  try {
    write_text_atomically(path, plan_to_json(impl_->graph, impl_->plan).dump(1) + "\n");
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace monet
