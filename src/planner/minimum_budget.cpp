#include "planner/minimum_budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "cost/simulator.h"
#include "planner/chain/chain_checkpointing.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/memory_floor.h"
#include "planner/program/monet_program.h"
#include "planner/search/program_warm_start.h"

namespace monet {
namespace {

// The program of minimum_budget: a small one (under `solver`) recomputing in place where
// possible, as plan_monet searches it where the out-of-place one has no plan
// (InfeasibleSmallProgram::kRecomputeInPlace); a larger one as built.
std::unique_ptr<MonetProgram> minimum_budget_program(const Graph& g, const CostModel& costs,
                                                     MonetProgramOptions po,
                                                     const SearchOptions& solver) {
  auto program = std::make_unique<MonetProgram>(g, costs, po);
  if (program_scale(program->milp().columns(), solver) == ProgramScale::kLarge) return program;
  po.recomputations = Recomputations::kInPlaceWherePossible;
  return std::make_unique<MonetProgram>(g, costs, po);
}

// The leanest plan the heuristics find within `seconds`: chain checkpointing's leanest
// schedule or the lean planner's smallest plan, whichever peaks lower (simulated).
SimulatedPlan leanest_heuristic_plan(const Graph& g, const CostModel& costs, double seconds,
                                     SearchLimit limit) {
  SimulatedPlan leanest = leanest_chain_schedule(g, costs, seconds, limit);
  Plan lean = best_lean_plan(g, costs, -1);
  const SimulationResult sim = simulate(g, lean, costs);
  if (leanest.plan.program.empty() || sim.peak_bytes < leanest.simulated.peak_bytes) {
    leanest.plan = std::move(lean);
    leanest.simulated = sim;
  }
  return leanest;
}

}  // namespace

MinimumBudget minimum_budget(const Graph& g, const CostModel& costs, MonetMode mode,
                             const SearchOptions& solver, std::optional<int64_t> infeasible_bytes) {
  MonetProgramOptions po;
  po.mode = mode;
  po.budget_rows = BudgetRows::kMinimised;
  po.span_max_columns = solver.neighbourhood_min_columns;
  // The heuristics' leanest plan (every implementation: MonetMode::kAll only): a warm start
  // where the program accepts it, and the answer where the search ends above it, or where it
  // peaks at the floor (no plan peaks lower: the program is not searched).
  const TimeBudget time(solver.search_limit, solver.time_limit_seconds);
  SimulatedPlan leanest;
  if (mode == MonetMode::kAll) {
    leanest = leanest_heuristic_plan(g, costs, time.of(kMinimumBudgetHeuristicsShare),
                                     solver.search_limit);
    const int64_t floor = memory_floor_bytes(g, costs);
    if (!leanest.plan.program.empty() && leanest.simulated.peak_bytes <= floor) {
      MinimumBudget m{leanest.simulated.peak_bytes, leanest.simulated.peak_bytes, true,
                      std::move(leanest.plan)};
      m.plan.planner = monet_mode_name(mode);
      return m;
    }
  }
  const std::unique_ptr<MonetProgram> built = minimum_budget_program(g, costs, po, solver);
  const MonetProgram& program = *built;
  // Decided on the whole limit, before the heuristics took their share.
  const SearchPolicy policy = search_policy(program.milp().columns(), solver);
  SearchOptions o = solver;
  o.neighbourhood.column_positions = program.column_positions();
  if (mode == MonetMode::kAll) o.time_limit_seconds = stage_seconds(time.left());
  std::vector<Plan> extra;
  if (!leanest.plan.program.empty()) extra.push_back(leanest.plan);
  warm_start(program, g, costs, &o, extra);
  const MilpResult r = search_program(program.milp(), o, policy);
  MinimumBudget m;
  m.bound_bytes =
      std::isfinite(r.bound) ? static_cast<int64_t>(std::floor(r.bound * 1048576.0)) : -1;
  if (infeasible_bytes) m.bound_bytes = std::max(m.bound_bytes, *infeasible_bytes + 1);
  if (!r.values.empty()) {
    m.bytes = program.budget_of(r.values);
    m.proven = r.status == MilpStatus::kOptimal;
    m.plan = program.decode(r.values);
  }
  if (!leanest.plan.program.empty() && (m.bytes == 0 || leanest.simulated.peak_bytes < m.bytes)) {
    m.bytes = leanest.simulated.peak_bytes;
    m.plan = std::move(leanest.plan);
    m.proven = false;
    // The program's bound holds for its own memory model, whose rows bound the simulated
    // peak from above: below it, it bounds nothing the simulator measured.
    if (m.bound_bytes > m.bytes) m.bound_bytes = -1;
  }
  if (m.bytes == 0) return MinimumBudget{};
  m.plan.planner = monet_mode_name(mode);
  return m;
}

}  // namespace monet
