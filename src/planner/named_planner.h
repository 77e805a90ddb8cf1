// Every planner behind one call, selected by the name the command line uses, so `monet
// plan` and `monet sweep` make plans the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "planner/minimum_budget.h"
#include "planner/monet_planner.h"
#include "planner/solver/milp.h"

namespace monet {

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

/// What a planner does with a budget.
enum class BudgetUse {
  kNone,      // plans without one (storeall, chen, gist, gist-fp16, random)
  kOptional,  // takes one, or plans its smallest plan without (lean, chain)
  kRequired,  // plans within one (monet modes, checkmate, checkmate-o)
};

/// One planner of the registry, by the name the command line, the API and Python use.
struct PlannerEntry {
  const char* name;
  BudgetUse budget;
  bool needs_costs;  // profiled costs (every planner that takes a budget)
  /// Makes the plan (`costs` null for planners that need none); make_plan() checks the
  /// request against the entry first and the plan against the budget after.
  PlannerOutcome (*run)(const Graph& graph, const CostModel* costs, const PlannerRequest& request);
  /// kRequired planners: the smallest budget with a plan, in the planner's own memory
  /// model (`infeasible_bytes`: a budget already proven to have none); null for the others.
  MinimumBudget (*smallest_budget)(const Graph& graph, const CostModel& costs,
                                   const SearchOptions& solver,
                                   std::optional<int64_t> infeasible_bytes);
};

/// Every planner, in the order `monet plan --help` lists them.
const std::vector<PlannerEntry>& planner_registry();
/// The planner named `name`; throws std::invalid_argument naming the known ones.
const PlannerEntry& find_planner(const std::string& name);

/// Every planner name: monet modes, checkmate, checkmate-o, storeall, chen, gist, gist-fp16
/// (lossy), lean, chain, random.
std::vector<std::string> planner_names();
/// Whether the planner takes a budget (BudgetUse kOptional or kRequired), and whether it
/// must have one (kRequired); throw std::invalid_argument for an unknown name.
bool planner_uses_budget(const std::string& planner);
bool planner_requires_budget(const std::string& planner);
/// Whether it needs profiled costs (every planner using a budget).
bool planner_needs_costs(const std::string& planner);
/// Throws std::invalid_argument naming the known planners when `planner` is not one.
void check_planner_name(const std::string& planner);

/// The smallest budget with a plan (bytes, MinimumBudget) as `planner` sees it: its
/// smallest_budget, the MONeT program's (minimum_budget, MonetMode::kAll) for a planner
/// without one. The one smallest-budget function of `monet plan`, budget_range() and the
/// API's BudgetError.
MinimumBudget smallest_budget(const std::string& planner, const Graph& graph,
                              const CostModel& costs, const SearchOptions& solver,
                              std::optional<int64_t> infeasible_bytes = std::nullopt);
/// The budget (bytes) `outcome` proves to have no plan: `budget_bytes` where the program
/// at that very budget was proven infeasible (its LP relaxation has no solution, or the
/// search proved none); none where the simulator made the planner lower the program's
/// budget first, or the search ran out of time.
std::optional<int64_t> proven_infeasible_budget(const PlannerOutcome& outcome,
                                                int64_t budget_bytes);

/// Makes the plan. `costs` may be null for planners that do not need costs.
PlannerOutcome make_plan(const Graph& graph, const CostModel* costs, const PlannerRequest& request);

}  // namespace monet
