#include "planner/named_planner.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "cost/simulator.h"
#include "planner/baseline_plans.h"
#include "planner/chain_checkpointing.h"
#include "planner/checkmate_planner.h"
#include "planner/gist_planner.h"
#include "planner/lean_plans.h"

namespace monet {
namespace {

bool is_monet(const std::string& p) {
  try {
    monet_mode_from_name(p);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}
bool is_checkmate(const std::string& p) { return p == "checkmate" || p == "checkmate-o"; }

}  // namespace

std::vector<std::string> planner_names() {
  return {"monet",         "monet-noop", "monet-conv",  "monet-out", "monet-int",
          "monet-inplace", "checkmate",  "checkmate-o", "storeall",  "chen",
          "gist",          "gist-fp16",  "lean",        "chain",     "random"};
}

bool planner_requires_budget(const std::string& p) { return is_monet(p) || is_checkmate(p); }
bool planner_uses_budget(const std::string& p) {
  return planner_requires_budget(p) || p == "lean" || p == "chain";
}
bool planner_needs_costs(const std::string& p) { return planner_uses_budget(p); }

void check_planner_name(const std::string& p) {
  const auto names = planner_names();
  if (std::find(names.begin(), names.end(), p) != names.end()) return;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown planner '" + p + "' (known: " + known + ")");
}

PlannerOutcome make_plan(const Graph& g, const CostModel* costs, const PlannerRequest& r) {
  check_planner_name(r.planner);
  if (planner_needs_costs(r.planner) && !costs)
    throw std::invalid_argument("planner '" + r.planner + "' needs profiled costs");
  if (planner_requires_budget(r.planner) && r.budget_bytes <= 0)
    throw std::invalid_argument("planner '" + r.planner + "' needs a budget");
  const auto t0 = std::chrono::steady_clock::now();
  PlannerOutcome out;
  out.found = true;
  if (is_monet(r.planner)) {
    MonetOptions o;
    o.budget_bytes = r.budget_bytes;
    o.mode = monet_mode_from_name(r.planner);
    o.solver = r.solver;
    out.solve = plan_monet(g, *costs, o);
    out.solved = true;
    out.found = out.solve.found;
    out.plan = out.solve.plan;
    const bool chooses_convolutions = o.mode == MonetMode::kAll || o.mode == MonetMode::kConv;
    if (out.found && r.post_optimise_convolutions && !chooses_convolutions) {
      out.algorithm_switches = choose_fastest_convolutions(g, *costs, r.budget_bytes, &out.plan);
      out.plan.planner += "-o";
      out.solve.plan = out.plan;
      out.solve.predicted = simulate(g, out.plan, *costs);
    }
  } else if (is_checkmate(r.planner)) {
    CheckmateOptions o;
    o.budget_bytes = r.budget_bytes;
    o.post_optimise = r.planner == "checkmate-o";
    o.solver = r.solver;
    CheckmateResult c = plan_checkmate(g, *costs, o);
    out.solve = std::move(c.solve);
    out.solved = true;
    out.found = c.found;
    out.plan = std::move(c.plan);
    out.algorithm_switches = c.algorithm_switches;
    if (c.found) out.model_peak_bytes = c.checkmate_peak_bytes;
  } else if (r.planner == "storeall") {
    out.plan = store_all_plan(g);
  } else if (r.planner == "chen") {
    out.plan = chen_plan(g);
  } else if (r.planner == "gist" || r.planner == "gist-fp16") {
    GistOptions o;
    o.delayed_precision_reduction = r.planner == "gist-fp16";
    out.plan = gist_plan(g, o);
  } else if (r.planner == "lean") {
    out.plan = best_lean_plan(g, *costs, r.budget_bytes);
  } else if (r.planner == "chain") {
    ChainCheckpointingOptions o;
    o.budget_bytes = r.budget_bytes < 0 ? std::numeric_limits<int64_t>::max() : r.budget_bytes;
    o.time_limit_seconds = r.solver.time_limit_seconds;
    ChainCheckpointingPlans c = chain_checkpointing_plans(g, *costs, o);
    out.plan = std::move(c.within_budget.empty() ? c.smallest.plan : c.within_budget.front().plan);
  } else {
    out.plan = random_plan(g, r.seed);
  }
  // Whatever a planner's own model of memory says, its plan fits the budget by the
  // simulator (the executor's exact replay), or it is not a plan for that budget.
  if (out.found && costs && r.budget_bytes > 0 && planner_uses_budget(r.planner) &&
      simulate(g, out.plan, *costs).peak_bytes > r.budget_bytes)
    out.found = false;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace monet
