#include "planner/named_planner.h"

#include <chrono>
#include <limits>
#include <stdexcept>
#include <utility>

#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/baselines/gist_planner.h"
#include "planner/chain/chain_checkpointing.h"
#include "planner/checkmate_planner.h"
#include "planner/heuristics/lean_plans.h"

namespace monet {
namespace {

// The outcome of a planner that solved a 0-1 program: `solve`, and `plan` when `found`.
PlannerOutcome solved(MonetResult solve, bool found, Plan plan) {
  PlannerOutcome out;
  out.solve = std::move(solve);
  out.solved = true;
  out.found = found;
  out.plan = std::move(plan);
  return out;
}

// A monet mode: the 0-1 program in `mode`, then (post_optimise_convolutions, modes that do
// not choose convolution algorithms) each convolution switched to its fastest algorithm
// that keeps the plan within the budget.
template <MonetMode mode>
PlannerOutcome run_monet(const Graph& g, const CostModel* costs, const PlannerRequest& r) {
  MonetOptions o;
  o.budget_bytes = r.budget_bytes;
  o.mode = mode;
  o.solver = r.solver;
  MonetResult solve = plan_monet(g, *costs, o);
  const bool found = solve.found;
  Plan plan = solve.plan;
  PlannerOutcome out = solved(std::move(solve), found, std::move(plan));
  const bool chooses_convolutions = mode == MonetMode::kAll || mode == MonetMode::kConv;
  if (out.found && r.post_optimise_convolutions && !chooses_convolutions) {
    out.algorithm_switches = choose_fastest_convolutions(g, *costs, r.budget_bytes, &out.plan);
    out.plan.planner += "-o";
    out.solve.plan = out.plan;
    out.solve.predicted = simulate(g, out.plan, *costs);
  }
  return out;
}

template <MonetMode mode>
MinimumBudget smallest_monet(const Graph& g, const CostModel& costs, const SearchOptions& solver,
                             std::optional<int64_t> infeasible) {
  return minimum_budget(g, costs, mode, solver, infeasible);
}

template <bool post_optimise>
PlannerOutcome run_checkmate(const Graph& g, const CostModel* costs, const PlannerRequest& r) {
  CheckmateOptions o;
  o.budget_bytes = r.budget_bytes;
  o.post_optimise = post_optimise;
  o.solver = r.solver;
  CheckmateResult c = plan_checkmate(g, *costs, o);
  PlannerOutcome out = solved(std::move(c.solve), c.found, std::move(c.plan));
  out.algorithm_switches = c.algorithm_switches;
  if (c.found) out.model_peak_bytes = c.checkmate_peak_bytes;
  return out;
}

// Checkmate's smallest budget is in its own memory model (no workspace).
MinimumBudget smallest_checkmate(const Graph& g, const CostModel& costs,
                                 const SearchOptions& solver, std::optional<int64_t> infeasible) {
  return minimum_budget(g, without_workspace(costs), MonetMode::kNoOp, solver, infeasible);
}

PlannerOutcome found(Plan plan) {
  PlannerOutcome out;
  out.found = true;
  out.plan = std::move(plan);
  return out;
}

template <bool fp16>
PlannerOutcome run_gist(const Graph& g, const CostModel*, const PlannerRequest&) {
  GistOptions o;
  o.delayed_precision_reduction = fp16;
  return found(gist_plan(g, o));
}

PlannerOutcome run_chain(const Graph& g, const CostModel* costs, const PlannerRequest& r) {
  ChainCheckpointingOptions o;
  o.budget_bytes = r.budget_bytes < 0 ? std::numeric_limits<int64_t>::max() : r.budget_bytes;
  o.time_limit_seconds = r.solver.time_limit_seconds;
  o.search_limit = r.solver.search_limit;
  ChainCheckpointingPlans c = chain_checkpointing_plans(g, *costs, o);
  return found(std::move(c.within_budget.empty() ? c.smallest.plan : c.within_budget.front().plan));
}

}  // namespace

const std::vector<PlannerEntry>& planner_registry() {
  using B = BudgetUse;
  static const std::vector<PlannerEntry> planners = {
      {"monet", B::kRequired, true, run_monet<MonetMode::kAll>, smallest_monet<MonetMode::kAll>},
      {"monet-noop", B::kRequired, true, run_monet<MonetMode::kNoOp>,
       smallest_monet<MonetMode::kNoOp>},
      {"monet-conv", B::kRequired, true, run_monet<MonetMode::kConv>,
       smallest_monet<MonetMode::kConv>},
      {"monet-out", B::kRequired, true, run_monet<MonetMode::kOutput>,
       smallest_monet<MonetMode::kOutput>},
      {"monet-int", B::kRequired, true, run_monet<MonetMode::kIntermediate>,
       smallest_monet<MonetMode::kIntermediate>},
      {"monet-inplace", B::kRequired, true, run_monet<MonetMode::kInplace>,
       smallest_monet<MonetMode::kInplace>},
      {"checkmate", B::kRequired, true, run_checkmate<false>, smallest_checkmate},
      {"checkmate-o", B::kRequired, true, run_checkmate<true>, smallest_checkmate},
      {"storeall", B::kNone, false,
       [](const Graph& g, const CostModel*, const PlannerRequest&) {
         return found(store_all_plan(g));
       },
       nullptr},
      {"chen", B::kNone, false,
       [](const Graph& g, const CostModel*, const PlannerRequest&) { return found(chen_plan(g)); },
       nullptr},
      {"gist", B::kNone, false, run_gist<false>, nullptr},
      {"gist-fp16", B::kNone, false, run_gist<true>, nullptr},
      {"lean", B::kOptional, true,
       [](const Graph& g, const CostModel* costs, const PlannerRequest& r) {
         return found(best_lean_plan(g, *costs, r.budget_bytes));
       },
       nullptr},
      {"chain", B::kOptional, true, run_chain, nullptr},
      {"random", B::kNone, false,
       [](const Graph& g, const CostModel*, const PlannerRequest& r) {
         return found(random_plan(g, r.seed));
       },
       nullptr},
  };
  return planners;
}

const PlannerEntry& find_planner(const std::string& name) {
  std::string known;
  for (const PlannerEntry& e : planner_registry()) {
    if (name == e.name) return e;
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  throw std::invalid_argument("unknown planner '" + name + "' (known: " + known + ")");
}

std::vector<std::string> planner_names() {
  std::vector<std::string> names;
  for (const PlannerEntry& e : planner_registry()) names.push_back(e.name);
  return names;
}

bool planner_requires_budget(const std::string& p) {
  return find_planner(p).budget == BudgetUse::kRequired;
}
bool planner_uses_budget(const std::string& p) {
  return find_planner(p).budget != BudgetUse::kNone;
}
bool planner_needs_costs(const std::string& p) { return find_planner(p).needs_costs; }
void check_planner_name(const std::string& p) { find_planner(p); }

MinimumBudget smallest_budget(const std::string& planner, const Graph& g, const CostModel& costs,
                              const SearchOptions& solver, std::optional<int64_t> infeasible) {
  const PlannerEntry& entry = find_planner(planner);
  const PlannerEntry& answering = entry.smallest_budget ? entry : find_planner("monet");
  return answering.smallest_budget(g, costs, solver, infeasible);
}

std::optional<int64_t> proven_infeasible_budget(const PlannerOutcome& outcome,
                                                int64_t budget_bytes) {
  if (!outcome.solved || outcome.found) return std::nullopt;
  const MonetResult& r = outcome.solve;
  if (r.solve.status == MilpStatus::kInfeasible && r.program_budget == budget_bytes)
    return budget_bytes;
  return std::nullopt;
}

PlannerOutcome make_plan(const Graph& g, const CostModel* costs, const PlannerRequest& r) {
  const PlannerEntry& planner = find_planner(r.planner);
  if (planner.needs_costs && !costs)
    throw std::invalid_argument("planner '" + r.planner + "' needs profiled costs");
  if (planner.budget == BudgetUse::kRequired && r.budget_bytes <= 0)
    throw std::invalid_argument("planner '" + r.planner + "' needs a budget");
  const auto t0 = std::chrono::steady_clock::now();
  PlannerOutcome out = planner.run(g, costs, r);
  // Whatever a planner's own model of memory says, its plan fits the budget by the
  // simulator (the executor's exact replay), or it is not a plan for that budget.
  if (out.found && costs && r.budget_bytes > 0 && planner.budget != BudgetUse::kNone &&
      simulate(g, out.plan, *costs).peak_bytes > r.budget_bytes)
    out.found = false;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace monet
