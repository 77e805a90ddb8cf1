#include "planner/checkmate_planner.h"

namespace monet {

CostModel without_workspace(const CostModel& costs) {
  CostModel c = costs;
  for (auto& node : c.nodes) {
    for (auto& [name, cost] : node.forward) cost.workspace_bytes = 0;
    for (auto& [name, cost] : node.backward) cost.workspace_bytes = 0;
  }
  return c;
}

CheckmateResult plan_checkmate(const Graph& g, const CostModel& costs, const CheckmateOptions& o) {
  const CostModel blind = without_workspace(costs);
  MonetOptions mo;
  mo.budget_bytes = o.budget_bytes;
  mo.mode = MonetMode::kNoOp;
  mo.solver = o.solver;
  CheckmateResult r;
  r.solve = plan_monet(g, blind, mo);
  r.found = r.solve.found;
  if (!r.found) return r;
  r.plan = r.solve.plan;
  r.checkmate_peak_bytes = r.solve.predicted.peak_bytes;
  if (o.post_optimise)
    r.algorithm_switches = choose_fastest_convolutions(g, costs, o.budget_bytes, &r.plan);
  r.plan.planner = o.post_optimise ? "checkmate-o" : "checkmate";
  r.predicted = simulate(g, r.plan, costs);
  return r;
}

}  // namespace monet
