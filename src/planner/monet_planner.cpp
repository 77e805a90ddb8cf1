#include "planner/monet_planner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/progress.h"
#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/chain/chain_checkpointing.h"
#include "planner/heuristics/fastest_convolutions.h"
#include "planner/heuristics/segment_keeping.h"
#include "planner/memory_floor.h"
#include "planner/program/monet_program.h"
#include "planner/search/program_warm_start.h"
#include "planner/solver/search_clock.h"

namespace monet {
namespace {

// The heuristic plans for one program budget: those within it by the simulator (warm-start
// candidates; the fastest is also the planner's answer when the program finds none faster)
// and those over it (the elastic search's starting points).
struct HeuristicPlans {
  std::vector<Plan> within_budget;
  std::vector<Plan> over_budget;
  SimulatedPlan fastest;  // of those within the budget (empty program: none)
  PlanSource fastest_source = PlanSource::kProgram;
};

// `time`: the planner's; a first fit may take all that is left of it (less the return
// reserve) when no heuristic plan fits otherwise. Under HeuristicPlansSource::kWarmPlansOnly:
// the warm plans alone, none of them `fastest`.
HeuristicPlans heuristic_plans(const Graph& g, const CostModel& costs, int64_t budget,
                               const MonetOptions& o, const TimeBudget& time) {
  HeuristicPlans h;
  h.within_budget = o.warm_plans;
  if (o.heuristics == HeuristicPlansSource::kWarmPlansOnly) return h;
  const auto take = [&](SimulatedPlan p, PlanSource source) {
    if (h.fastest.plan.program.empty() || p.simulated.seconds < h.fastest.simulated.seconds)
      h.fastest = p, h.fastest_source = source;
    h.within_budget.push_back(std::move(p.plan));
  };
  // Warm plans are the answer where nothing faster is found (in MonetMode::kAll, whose
  // space holds any plan's implementations) when the simulator fits them to the budget.
  if (o.mode == MonetMode::kAll)
    for (const Plan& p : o.warm_plans) {
      SimulatedPlan given{p, simulate(g, p, costs)};
      if (given.simulated.peak_bytes > budget) continue;
      if (h.fastest.plan.program.empty() || given.simulated.seconds < h.fastest.simulated.seconds)
        h.fastest = std::move(given), h.fastest_source = PlanSource::kWarmPlan;
    }
  // So is store-all where it fits: it runs a node's input gradient before its weight
  // gradient, as autograd does, which the program's schedules do not.
  if (o.mode == MonetMode::kAll) {
    SimulatedPlan all{store_all_plan(g), {}};
    all.simulated = simulate(g, all.plan, costs);
    if (all.simulated.peak_bytes <= budget &&
        (h.fastest.plan.program.empty() || all.simulated.seconds < h.fastest.simulated.seconds))
      h.fastest = std::move(all), h.fastest_source = PlanSource::kStoreAll;
  }
  const SearchClock clock(o.solver.search_limit);  // for the report
  SegmentKeepingOptions keeping_options;
  keeping_options.budget_bytes = budget;
  keeping_options.search_limit = o.solver.search_limit;
  keeping_options.time_limit_seconds = time.of(o.segment_keeping_share);
  SegmentKeepingPlans keeping = segment_keeping_plans(g, costs, keeping_options);
  for (SimulatedPlan& p : keeping.within_budget) take(std::move(p), PlanSource::kSegmentKeeping);
  h.over_budget = std::move(keeping.over_budget);
  ChainCheckpointingOptions chain_options;
  chain_options.budget_bytes = budget;
  chain_options.search_limit = o.solver.search_limit;
  chain_options.time_limit_seconds =
      time.of(keeping.within_budget.empty() ? o.tight_chain_checkpointing_share
                                            : o.chain_checkpointing_share);
  chain_options.first_fit_time_limit_seconds = stage_seconds(time.left(o.return_reserve_seconds));
  ChainCheckpointingPlans chain = chain_checkpointing_plans(g, costs, chain_options);
  // The fastest chain schedule within the budget, and the leanest (its smallest peak).
  if (!chain.within_budget.empty())
    take(std::move(chain.within_budget.front()), PlanSource::kChainCheckpointing);
  else if (!chain.smallest.plan.program.empty())
    h.over_budget.push_back(std::move(chain.smallest.plan));
  if (o.solver.progress)
    report_progress(
        "planner: heuristics took %.1f s: segment keeping, chain checkpointing "
        "(%d segments, %d schedules, %zu within the budget)\n",
        clock.wall_seconds(), chain.segments, chain.schedules, chain.within_budget.size());
  return h;
}

// When no heuristic plan fits a large program: a plan that does, found by neighbourhood
// search on the elastic program (every plan feasible; objective: the memory rows' total
// excess over `budget`) from the heuristic plan of least excess, until the excess is 0, in
// its elastic_share of `time` less the return reserve. Empty when none was found. (Lowering the
// largest row of the minimum-budget program instead stalled: the peak is reached in many stages,
// and a window that lowers some of them leaves the objective unchanged.)
std::vector<Plan> plan_within(const Graph& g, const CostModel& costs, const MonetOptions& mo,
                              int64_t budget, const std::vector<Plan>& starts,
                              const TimeBudget& time) {
  MonetProgramOptions po;
  po.mode = mo.mode;
  po.budget_rows = BudgetRows::kElastic;
  po.budget_bytes = budget;
  const MonetProgram program(g, costs, po);
  SearchOptions o = mo.solver;
  o.time_limit_seconds = stage_seconds(time.within(mo.elastic_share, mo.return_reserve_seconds));
  o.neighbourhood.column_positions = program.column_positions();
  // No bound wanted (the search stops at excess 0): no LP relaxation beside it.
  std::promise<RelaxationBound> none;
  none.set_value({});
  o.relaxation = none.get_future().share();
  const std::string warm = warm_start(program, g, costs, &o, starts);
  if (warm.empty()) return {};
  // Stop at excess 0 (the objective is then the time term alone).
  o.neighbourhood.stop_objective =
      MonetProgram::kTimeWeight * mo.elastic_slowdown * program.seconds_of(o.warm_start);
  if (o.progress)
    report_progress(
        "planner: no heuristic plan fits; lowering the excess of %s (%.1f MiB over the "
        "budget in all) with the elastic program (%.0f s at most)\n",
        warm.c_str(), program.excess_of(o.warm_start), o.time_limit_seconds);
  // The elastic search is a neighbourhood search whatever the program's size: it stops at
  // an objective, which CBC's branch and cut cannot.
  const SearchPolicy policy{program_scale(program.milp().columns(), o),
                            SearchStrategy::kNeighbourhood};
  const MilpResult r = search_program(program.milp(), o, policy);
  if (r.values.empty() || program.excess_of(r.values) > 1e-6) return {};
  return {program.decode(r.values)};
}

// Adds the recomputation-first plan for `budget` (MonetOptions::recomputation_first_share)
// to `h`'s plans within the budget, and makes it `h`'s fastest when it is faster, where the
// planner's program (searched by `policy`) is small and searched by neighbourhoods: the program in
// MonetMode::kNoOp searched in its share of `time` less the return reserve, then
// each convolution switched to the fastest algorithm that keeps the plan within the budget. Returns
// its predicted seconds; -1 when there is none.
double add_recomputation_first_plan(const Graph& g, const CostModel& costs, const MonetOptions& o,
                                    int64_t budget, const SearchPolicy& policy,
                                    const TimeBudget& time, HeuristicPlans* h) {
  if (o.mode != MonetMode::kAll || o.recomputation_first_share.fraction <= 0 ||
      policy.scale != ProgramScale::kSmall || policy.strategy != SearchStrategy::kNeighbourhood)
    return -1;
  MonetOptions noop = o;
  noop.mode = MonetMode::kNoOp;
  noop.budget_bytes = budget;
  // The heuristic plans found for this budget (segment keeping and chain checkpointing,
  // which are not run again), as warm starts where the noop program accepts them.
  noop.warm_plans = h->within_budget;
  noop.heuristics = HeuristicPlansSource::kWarmPlansOnly;
  noop.recomputation_first_share.fraction = 0;
  noop.solver.progress = false;
  noop.solver.time_limit_seconds =
      time.within(o.recomputation_first_share, o.return_reserve_seconds);
  if (noop.solver.time_limit_seconds < kMinimumStageSeconds) return -1;
  const SearchClock clock(o.solver.search_limit);
  MonetResult r = plan_monet(g, costs, noop);
  if (!r.found) {
    if (o.solver.progress)
      report_progress("planner: recomputation first: no plan in %.1f s\n", clock.wall_seconds());
    return -1;
  }
  const int switches = choose_fastest_convolutions(g, costs, budget, &r.plan);
  r.plan.planner = "recomputation-first";  // the warm start's name; returned as the mode's
  SimulatedPlan first;
  first.simulated = simulate(g, r.plan, costs);
  first.plan = std::move(r.plan);
  if (o.solver.progress)
    report_progress(
        "planner: recomputation first (default implementations): a plan of %.4g s in %.1f s, "
        "%.4g s with %d convolution instructions switched to faster algorithms\n",
        r.predicted.seconds, clock.wall_seconds(), first.simulated.seconds, switches);
  if (first.simulated.peak_bytes > budget) return -1;
  const double seconds = first.simulated.seconds;
  if (h->fastest.plan.program.empty() || seconds < h->fastest.simulated.seconds)
    h->fastest = first, h->fastest_source = PlanSource::kRecomputationFirst;
  h->within_budget.push_back(std::move(first.plan));
  return seconds;
}

}  // namespace

const char* plan_source_name(PlanSource source) {
  switch (source) {
    case PlanSource::kProgram:
      return "program";
    case PlanSource::kSegmentKeeping:
      return "segment keeping";
    case PlanSource::kChainCheckpointing:
      return "chain checkpointing";
    case PlanSource::kRecomputationFirst:
      return "recomputation first";
    case PlanSource::kWarmPlan:
      return "warm plan";
    case PlanSource::kStoreAll:
      return "store-all";
  }
  return "?";
}

namespace {

// A program under search: the program, its search policy, the solver's options for it (its
// warm start, its LP relaxation under way) and the flag that stops that relaxation, set
// (and the relaxation awaited) before the program goes.
struct ProgramSearch {
  std::unique_ptr<std::atomic<bool>> stop = std::make_unique<std::atomic<bool>>(false);
  std::unique_ptr<MonetProgram> program;
  SearchPolicy policy;
  SearchOptions solver;
  ~ProgramSearch() { *stop = true; }
  void swap(ProgramSearch& other) {
    std::swap(stop, other.stop);
    std::swap(program, other.program);
    std::swap(policy, other.policy);
    std::swap(solver, other.solver);
  }
};

// Whether a neighbourhood search has a bound: the LP relaxation beside it, or none (both
// cores search).
enum class Bound {
  kRelaxation,
  /// The LP relaxation where the program has at most SearchOptions::neighbourhood_min_columns
  /// columns; none for larger ones, whose relaxation is not solved within a minute at tight
  /// budgets (the second core searches from the start instead).
  kRelaxationOfSmallProgram,
  kNone,
};

// The program for `budget` in the planner's mode, with intermediates of at least
// `exact_fraction` of their node's output modelled exactly, and, when its search is a
// neighbourhood search (which only needs the bound) and `bound` asks for it, the LP
// relaxation on a thread of its own from now, until what is left of `time` less the
// relaxation reserve, or until stopped.
void start_program(const Graph& g, const CostModel& costs, const MonetOptions& o, int64_t budget,
                   double exact_fraction, Recomputations recomputations, Bound bound,
                   const TimeBudget& time, ProgramSearch* search) {
  MonetProgramOptions po;
  po.mode = o.mode;
  po.budget_bytes = budget;
  po.exact_intermediate_min_fraction = exact_fraction;
  po.recomputations = recomputations;
  // Span rows only where a branch and cut searches the program whole.
  po.span_max_columns = o.solver.neighbourhood_min_columns;
  search->program = std::make_unique<MonetProgram>(g, costs, po);
  const MonetProgram& program = *search->program;
  search->solver = o.solver;
  search->policy = search_policy(program.milp().columns(), o.solver);
  search->solver.neighbourhood.column_positions = program.column_positions();
  if (search->policy.strategy != SearchStrategy::kNeighbourhood) return;
  if (bound == Bound::kNone ||
      (bound == Bound::kRelaxationOfSmallProgram && search->policy.scale == ProgramScale::kLarge)) {
    std::promise<RelaxationBound> none;
    none.set_value({});
    search->solver.relaxation = none.get_future().share();
    return;
  }
  const RelaxationLimit lp_limit = relaxation_limit(
      program.milp(), o.solver, stage_seconds(time.left(o.relaxation_reserve_seconds)));
  const std::atomic<bool>* stop = search->stop.get();
  search->solver.relaxation = std::async(std::launch::async, [&program, lp_limit, stop] {
                                return solve_relaxation(program.milp(), lp_limit, stop);
                              }).share();
}

// The warm start of `search`'s program: the fastest heuristic plan it accepts; else, with
// kExactProgramThenElastic, the fastest the program modelling every intermediate exactly
// and recomputing in place accepts (it expresses chain checkpointing's schedules, whose
// recomputations emit the ReLUs' masks again), which then replaces it, searched without a
// bound (`spare` receives the program replaced); else none for a small program under
// SmallProgramFirstFit::kBranchAndCut (CBC's branch and cut then searches it from no
// plan); else the elastic search's plan (a neighbourhood search needs one; a branch and
// cut over a large program may find none within the time limit). Returns its description
// (empty: none).
std::string choose_warm_start(const Graph& g, const CostModel& costs, const MonetOptions& o,
                              int64_t budget, const HeuristicPlans& h, const TimeBudget& time,
                              ProgramSearch* search, ProgramSearch* spare) {
  std::string name = warm_start(*search->program, g, costs, &search->solver, h.within_budget);
  if (!name.empty()) return name;
  if (o.no_fitting_heuristic == NoFittingHeuristic::kExactProgramThenElastic &&
      (o.exact_intermediate_min_fraction > 0 ||
       o.recomputations != Recomputations::kInPlaceWherePossible)) {
    start_program(g, costs, o, budget, 0, Recomputations::kInPlaceWherePossible,
                  Bound::kRelaxationOfSmallProgram, time, spare);
    name = warm_start(*spare->program, g, costs, &spare->solver, h.within_budget);
    if (o.solver.progress)
      report_progress(
          "planner: no heuristic plan fits the program; the program with every intermediate "
          "modelled exactly and recomputations in place (%d columns) %s\n",
          spare->program->milp().columns(),
          name.empty() ? "accepts none either" : ("starts from " + name).c_str());
    if (!name.empty()) {
      *search->stop = true;
      search->swap(*spare);
      return name + " (the program with every intermediate modelled exactly, recomputing in place)";
    }
    *spare->stop = true;  // its LP relaxation would take a core from the search
  }
  if (o.small_program_first_fit == SmallProgramFirstFit::kBranchAndCut &&
      search->policy.scale == ProgramScale::kSmall) {
    *search->stop = true;  // CBC solves the root LP itself
    if (o.solver.progress)
      report_progress(
          "planner: no heuristic plan fits; CBC's branch and cut searches the program from "
          "no plan\n");
    return "";
  }
  // Starting points of the elastic program: the plans within the budget (the program's
  // memory rows may reject what the simulator accepts) and those over it.
  std::vector<Plan> starts = h.within_budget;
  starts.insert(starts.end(), h.over_budget.begin(), h.over_budget.end());
  for (const Plan& p : plan_within(g, costs, o, budget, starts, time)) {
    std::vector<double> x = search->program->assignment_of(p, /*nearest=*/true);
    if (x.empty() || !search->program->milp().satisfies(x)) continue;
    search->solver.warm_start = std::move(x);
    name = "the elastic search's plan";
  }
  return name;
}

// Returns the heuristic's plan in `result` when it is faster than the program's or the
// program found none; the gap is then the heuristic's to the program's bound.
void prefer_heuristic(SimulatedPlan heuristic, PlanSource source, MonetMode mode,
                      MonetResult* result) {
  if (heuristic.plan.program.empty() ||
      (result->found && heuristic.simulated.seconds >= result->predicted.seconds))
    return;
  result->found = true;
  result->source = source;
  result->plan = std::move(heuristic.plan);
  result->plan.planner = monet_mode_name(mode);
  result->predicted = std::move(heuristic.simulated);
  result->objective_seconds = result->predicted.seconds;
  if (std::isfinite(result->solve.bound))
    result->solve.gap =
        (result->objective_seconds - result->solve.bound) / result->objective_seconds;
}

// Whether plan_monet searches the program again with recomputations in place where
// possible: the program just searched (`result`, by `policy`), out of place, is proven to
// have no plan, it is small, and `time` leaves the search time.
bool recompute_in_place_next(const MonetOptions& o, const MonetResult& result,
                             const SearchPolicy& policy, Recomputations searched,
                             const TimeBudget& time) {
  return o.infeasible_small_program == InfeasibleSmallProgram::kRecomputeInPlace &&
         searched == Recomputations::kOutOfPlace &&
         result.solve.status == MilpStatus::kInfeasible && policy.scale == ProgramScale::kSmall &&
         time.left(o.return_reserve_seconds) >= kMinimumStageSeconds;
}

void report_program(const MonetOptions& o, int64_t budget, const ProgramSize& size,
                    const std::string& warm_name) {
  report_progress("planner: %s program, budget %.1f MiB: %d columns, %d rows, %lld non-zeros%s%s\n",
                  monet_mode_name(o.mode), budget / 1048576.0, size.columns, size.rows,
                  static_cast<long long>(size.nonzeros),
                  warm_name.empty() ? "" : ", warm start from ", warm_name.c_str());
}

// Decodes `result`'s solve of `program` into its plan and checks it with the simulator:
// found when its simulated peak is within the budget. Returns the peak's excess over the
// budget (bytes; 0 when within).
int64_t decode_and_check(const Graph& g, const CostModel& costs, const MonetOptions& o,
                         const MonetProgram& program, MonetResult* result) {
  result->plan = program.decode(result->solve.values);
  result->plan.planner = monet_mode_name(o.mode);
  result->objective_seconds = program.seconds_of(result->solve.values);
  result->predicted = simulate(g, result->plan, costs);
  result->found = result->predicted.peak_bytes <= o.budget_bytes;
  return result->found ? 0 : result->predicted.peak_bytes - o.budget_bytes;
}

// Sets `result`'s floor (memory_floor.h) and reports it. Returns whether the budget lies
// below it: no plan can fit, which the floor proves (status kInfeasible).
bool below_the_floor(const Graph& g, const CostModel& costs, const MonetOptions& o,
                     MonetResult* result) {
  const MemoryFloor floor = memory_floor(g, costs);
  result->floor_bytes = floor.bytes;
  if (o.solver.progress)
    report_progress(
        "planner: budget %.1f MiB, floor %.1f MiB (the parameters, the batch and "
        "%s)\n",
        o.budget_bytes / 1048576.0, floor.bytes / 1048576.0, floor.cause.c_str());
  if (o.budget_bytes >= result->floor_bytes) return false;
  if (o.solver.progress) report_progress("planner: the budget is below the floor: no plan\n");
  result->solve.status = MilpStatus::kInfeasible;
  result->program_budget = o.budget_bytes;
  return true;
}

}  // namespace

MonetResult plan_monet(const Graph& g, const CostModel& costs, const MonetOptions& o) {
  const TimeBudget time(o.solver.search_limit, o.solver.time_limit_seconds);
  const SearchClock& clock = time.clock();
  MonetResult result;
  if (below_the_floor(g, costs, o, &result)) {  // no plan can fit: nothing to search
    result.seconds = clock.wall_seconds();
    return result;
  }
  // The fastest heuristic plan within the budget (by the simulator), returned when the
  // program finds none faster.
  SimulatedPlan heuristic;
  PlanSource heuristic_source = PlanSource::kProgram;
  int64_t budget = o.budget_bytes;
  Recomputations recomputations = o.recomputations;
  for (int attempt = 0; attempt <= o.max_corrections; ++attempt) {
    // The program, and its bound beside the heuristics (the LP relaxation, which takes tens
    // of seconds on the largest programs).
    ProgramSearch search, spare;
    start_program(g, costs, o, budget, o.exact_intermediate_min_fraction, recomputations,
                  Bound::kRelaxation, time, &search);
    // Heuristic plans, and the warm start.
    HeuristicPlans h = heuristic_plans(g, costs, budget, o, time);
    const double first = add_recomputation_first_plan(g, costs, o, budget, search.policy, time, &h);
    if (first >= 0) result.recomputation_first_seconds = first;
    if (o.mode == MonetMode::kAll && !h.fastest.plan.program.empty() &&
        result.first_fit_seconds < 0)
      result.first_fit_seconds = clock.wall_seconds();
    if (o.mode == MonetMode::kAll && !h.fastest.plan.program.empty() &&
        (heuristic.plan.program.empty() ||
         h.fastest.simulated.seconds < heuristic.simulated.seconds))
      heuristic = h.fastest, heuristic_source = h.fastest_source;
    const std::string warm_name = choose_warm_start(g, costs, o, budget, h, time, &search, &spare);
    result.warm_start = warm_name;
    const MonetProgram& program = *search.program;
    SearchOptions& solver = search.solver;
    result.size = {program.milp().columns(), program.milp().rows(), program.milp().nonzeros()};
    result.program_budget = budget;
    // A warm start the program accepts fits the budget (its rows bound the simulated peak).
    if (!warm_name.empty() && result.first_fit_seconds < 0)
      result.first_fit_seconds = clock.wall_seconds();
    // The search, in what is left of the time limit.
    solver.time_limit_seconds = stage_seconds(time.left(o.return_reserve_seconds));
    if (o.solver.progress) report_program(o, budget, result.size, warm_name);
    result.solve = search_program(program.milp(), solver, search.policy);
    ++result.solves;
    if (result.solve.values.empty()) {
      if (!recompute_in_place_next(o, result, search.policy, recomputations, time)) break;
      recomputations = Recomputations::kInPlaceWherePossible;
      if (o.solver.progress)
        report_progress(
            "planner: the program has no plan within the budget; searching the program that "
            "also recomputes in place\n");
      continue;
    }
    const int64_t excess = decode_and_check(g, costs, o, program, &result);
    if (excess == 0) {
      if (result.first_fit_seconds < 0) result.first_fit_seconds = clock.wall_seconds();
      break;
    }
    // The program's memory rows are upper bounds except where the simulator knows
    // better; lower the program's budget by the excess and solve again.
    if (o.solver.progress)
      report_progress("planner: simulated peak exceeds the budget by %lld B; re-solving\n",
                      static_cast<long long>(excess));
    budget -= excess + o.correction_margin_bytes;
  }
  prefer_heuristic(std::move(heuristic), heuristic_source, o.mode, &result);
  result.seconds = clock.wall_seconds();
  return result;
}

}  // namespace monet
