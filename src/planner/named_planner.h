// Every planner behind one call, selected by the name the command line uses, so `monet
// plan` and `monet sweep` make plans the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "planner/milp.h"
#include "planner/monet_planner.h"

namespace monet {

/// Every planner name: monet modes, checkmate, checkmate-o, storeall, chen, gist, gist-fp16
/// (lossy), lean, chain, random.
std::vector<std::string> planner_names();
/// Whether the planner takes a budget (monet modes, checkmate, checkmate-o, lean, chain), and
/// whether it must have one.
bool planner_uses_budget(const std::string& planner);
bool planner_requires_budget(const std::string& planner);
/// Whether it needs profiled costs (every planner using a budget).
bool planner_needs_costs(const std::string& planner);
/// Throws std::invalid_argument naming the known planners when `planner` is not one.
void check_planner_name(const std::string& planner);

struct PlannerRequest {
  std::string planner;
  int64_t budget_bytes = -1;  // absolute peak allowed (bytes); -1: none
  SearchOptions solver;       // program-based planners (monet modes, checkmate)
  uint64_t seed = 0;          // random planner
  /// Monet modes that do not choose convolution algorithms (noop, out, int, inplace):
  /// afterwards switch each convolution greedily to its fastest algorithm that keeps
  /// the plan within the budget, as the paper's ablation runs them (Checkmate-O's step).
  bool post_optimise_convolutions = false;
};

struct PlannerOutcome {
  /// A plan exists; for a planner given a budget, its simulated peak is within it (the
  /// lean and chain planners then return their smallest plan with found false).
  bool found = false;
  Plan plan;
  bool solved = false;  // a 0-1 program was solved: `solve` is filled in
  MonetResult solve;
  /// Checkmate: the peak its own memory model (no workspace) predicts (bytes), else -1.
  int64_t model_peak_bytes = -1;
  double seconds = 0;  // wall time of the planner
  /// Convolutions switched by post_optimise_convolutions (or by checkmate-o).
  int algorithm_switches = 0;
};

/// Makes the plan. `costs` may be null for planners that do not need costs.
PlannerOutcome make_plan(const Graph& graph, const CostModel* costs, const PlannerRequest& request);

}  // namespace monet
