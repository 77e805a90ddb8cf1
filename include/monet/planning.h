// Planning one training iteration (forward and backward) of a model into a plan file, as
// `monet plan` and `monet sweep` do: any planner by name (MONeT's 0-1 program, Checkmate,
// Chen, Gist, store-all, ...), an iteration budget, the solver's figures, and the smallest
// budget with a plan. PlannedModel (monet.h) plans whole training steps instead.
// Units: bytes, seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "monet/monet.h"
#include "monet/operator_costs.h"
#include "monet/plan_file.h"

namespace monet {

/// One planner of planner_names().
struct PlannerInfo {
  std::string name;
  bool takes_budget = false;     // plans within a budget (or its smallest plan without)
  bool requires_budget = false;  // plans only within one (MONeT's modes, Checkmate)
  bool needs_costs = false;      // needs profiled OperatorCosts
};
/// The planner named `name`; throws std::invalid_argument naming the known ones.
PlannerInfo planner_info(const std::string& name);

/// How the planners that solve a 0-1 program search it.
struct SearchSettings {
  double time_limit_seconds = 60;  // wall-clock limit of one plan
  double relative_gap = 0.01;      // the solver stops within this gap to its bound
  /// CBC threads for a branch and cut over a whole program (programs of over 20,000
  /// columns and the neighbourhoods' sub-programs use one).
  int threads = 1;
  PlanningLimit limit = PlanningLimit::kWallClock;  // what ends the searches
  int max_nodes = 2000;         // CBC nodes per solve under PlanningLimit::kWork
  bool branch_and_cut = false;  // CBC's branch and cut over the whole program alone
  bool progress = true;         // progress lines on stderr
};

/// A plan of one iteration of a model.
struct PlanFileRequest {
  std::string planner = "monet";
  /// The iteration's peak allowed (absolute, weights and batch included); none for a
  /// planner that takes none.
  std::optional<int64_t> budget_bytes;
  OptimizerUpdate optimizer_update = OptimizerUpdate::kAfterBackward;  // the step it is for
  SearchSettings search;
  uint64_t seed = 0;  // the random planner's
  /// MONeT modes that do not choose convolution algorithms: afterwards switch each
  /// convolution greedily to its fastest algorithm that keeps the plan within the budget.
  bool post_optimise_convolutions = false;
};

/// The figures of a solved 0-1 program.
struct SolveReport {
  std::string status;  // "optimal", "feasible", "infeasible", "no solution"
  int columns = 0, rows = 0;
  int64_t nonzeros = 0;
  double solve_seconds = 0;                       // the last solve's wall time
  std::optional<double> first_incumbent_seconds;  // until its first plan; none: no plan
  double objective_seconds = 0;      // the plan's profiled seconds, as the program counts them
  double bound_seconds = 0;          // the proven lower bound on them
  double lp_relaxation_seconds = 0;  // the LP relaxation's wall time
  std::optional<double> gap;         // relative; none: no bound known
  std::string plan_source;           // "program", or the heuristic whose plan was faster
  std::string warm_start;            // what the last search started from ("": nothing)
  /// No plan can peak below this: what is alive before the iteration, the gradients of
  /// the parameters and the largest working set of one operator call.
  int64_t floor_bytes = 0;
  std::optional<double> first_fit_seconds;  // until a plan within the budget was known
  int neighbourhoods = 0;                   // sub-programs solved by neighbourhood search
  double planner_seconds = 0;               // the whole planner's wall time
  int solves = 0;                           // 1 + budget corrections
  int64_t program_budget_bytes = 0;         // the budget given to the last program
  /// Until the first plan within 5% of the final bound; none: none was.
  std::optional<double> seconds_to_within_5_percent;
};

struct PlanFileOutcome {
  /// The plan (its model and size are the model's). A planner that requires a budget
  /// returns none when no plan fits it or none was found in time (out_of_time); the
  /// others always return theirs (lean and chain: their smallest when none fits), to be
  /// checked against a budget with OperatorCosts::predict.
  std::optional<PlanFile> plan;
  std::optional<SolveReport> solve;  // a 0-1 program was solved
  bool out_of_time = false;          // the solver found no plan within its limit
  /// A budget proven to have no plan (the request's, where the program at that very
  /// budget is infeasible); smallest_iteration_budget() starts from it.
  std::optional<int64_t> proven_infeasible_bytes;
  std::optional<int64_t> checkmate_model_peak_bytes;  // Checkmate's own (workspace-free) peak
  double seconds = 0;                                 // the planner's wall time
  int algorithm_switches = 0;  // convolutions switched by post_optimise_convolutions
};

/// Plans `model` as `request` asks (`costs` may be null for planners that need none).
/// Throws std::invalid_argument for an unknown planner or a budget it cannot take.
PlanFileOutcome make_plan_file(const Model& model, const OperatorCosts* costs,
                               const PlanFileRequest& request);

/// The smallest iteration budget with a plan of request.planner (in its own memory model:
/// Checkmate's has no workspace), as PlannedModel's BudgetError and budget_range() find it.
struct SmallestBudget {
  std::optional<int64_t> bytes;        // none: no plan found within the time limit
  std::optional<int64_t> bound_bytes;  // a proven lower bound; none: none proven in time
  bool proven = false;                 // bytes == the bound
};
SmallestBudget smallest_iteration_budget(const Model& model, const OperatorCosts& costs,
                                         const PlanFileRequest& request,
                                         std::optional<int64_t> infeasible_bytes = std::nullopt);

}  // namespace monet
