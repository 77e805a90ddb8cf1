#include "planner/monet_planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>

#include "planner/baseline_plans.h"
#include "planner/lean_plans.h"
#include "planner/monet_program.h"
#include "planner/segment_keeping.h"

namespace monet {
namespace {

struct ModeName {
  MonetMode mode;
  const char* name;
};
constexpr ModeName kModes[] = {{MonetMode::kAll, "monet"},
                               {MonetMode::kNoOp, "monet-noop"},
                               {MonetMode::kConv, "monet-conv"},
                               {MonetMode::kOutput, "monet-out"},
                               {MonetMode::kIntermediate, "monet-int"},
                               {MonetMode::kInplace, "monet-inplace"}};

// Sets the fastest of the heuristic plans the program accepts as the solver's warm
// start: Chen, and store-all and checkpointing at 1 to all articulation points with
// default, memory-lean and fastest implementations, and the `extra` plans. Returns the
// winner's description, or an empty string when none fits.
std::string warm_start(const MonetProgram& program, const Graph& g, const CostModel& costs,
                       MilpOptions* solver, const std::vector<Plan>& extra = {}) {
  std::string name;
  double best = 0;
  auto consider = [&](std::string what, std::vector<double> x) {
    if (x.empty() || !program.milp().satisfies(x)) return;
    const double objective = program.milp().objective_of(x);
    if (!name.empty() && objective >= best) return;
    name = std::move(what), best = objective, solver->warm_start = std::move(x);
  };
  consider("Chen", program.assignment_of(chen_plan(g), /*nearest=*/true));
  const struct {
    const char* name;
    ScheduleChoices choices;
  } families[] = {{"default implementations", default_choices(g)},
                  {"memory-lean implementations", lean_choices(g, costs)},
                  {"fastest implementations",
                   implementation_choices(g, costs, ImplementationPreference::kFastest)}};
  for (const auto& f : families) {
    const std::vector<Plan> plans = checkpoint_family(g, f.choices, "");
    for (size_t i = 0; i < plans.size(); ++i)
      consider(std::string(i == 0 ? "store-all" : "checkpointing") + " with " + f.name,
               program.assignment_of(plans[i], /*nearest=*/true));
  }
  for (const Plan& p : extra)
    consider(p.planner.empty() ? "a given plan" : "the " + p.planner + " plan",
             program.assignment_of(p, /*nearest=*/true));
  return name;
}

// When no heuristic plan fits a large program: a plan that does, found by neighbourhood
// search on the elastic program (every plan feasible; objective: the memory rows' total
// excess over `budget`) from the heuristic plan of least excess, until the excess is 0, in
// at most half the time limit. Empty when none was found. (Lowering the largest row of the
// minimum-budget program instead stalled: the peak is reached in many stages, and a
// window that lowers some of them leaves the objective unchanged.)
std::vector<Plan> plan_within(const Graph& g, const CostModel& costs, MonetMode mode,
                              int64_t budget, const MilpOptions& solver,
                              const std::vector<Plan>& starts) {
  MonetProgram program(g, costs, mode, budget, /*elastic=*/true);
  MilpOptions o = solver;
  o.search = MilpSearch::kNeighbourhood;
  o.time_limit_seconds = solver.time_limit_seconds / 2;
  o.column_positions = program.column_positions();
  // No bound wanted (the search stops at excess 0): no LP relaxation beside it.
  std::promise<RelaxationBound> none;
  none.set_value({});
  o.relaxation = none.get_future().share();
  const std::string warm = warm_start(program, g, costs, &o, starts);
  if (warm.empty()) return {};
  // Stop at excess 0 (the objective is then the time term alone), allowing for a plan up to
  // 10 times slower than the warm start.
  o.stop_objective = MonetProgram::kTimeWeight * 10 * program.seconds_of(o.warm_start);
  if (o.progress)
    std::fprintf(stderr,
                 "planner: no heuristic plan fits; lowering the excess of %s (%.1f MiB over the "
                 "budget in all) with the elastic program (%.0f s at most)\n",
                 warm.c_str(), program.excess_of(o.warm_start), o.time_limit_seconds);
  const MilpResult r = solve_milp(program.milp(), o);
  if (r.values.empty() || program.excess_of(r.values) > 1e-6) return {};
  return {program.decode(r.values)};
}

bool intermediate_family(const Node& n) {
  return n.op == OpKind::kMaxPool || n.op == OpKind::kDropout;
}

}  // namespace

bool mode_allows_forward(MonetMode mode, const Node& n, const ForwardImplInfo& f, bool is_default) {
  if (f.gist_encoding) return false;  // data-dependent size or lossy: not MONeT's
  if (is_default || mode == MonetMode::kAll) return true;
  if (is_convolution(n.op)) return mode == MonetMode::kConv;
  if (f.emits_intermediate || intermediate_family(n)) return mode == MonetMode::kIntermediate;
  return mode == MonetMode::kInplace;  // the in-place / out-of-place alternative
}

bool mode_allows_backward(MonetMode mode, const Node& n, const BackwardImplInfo& b,
                          bool is_default) {
  if (b.gist_encoding) return false;
  if (is_default || mode == MonetMode::kAll) return true;
  if (is_convolution(n.op)) return mode == MonetMode::kConv;
  if (b.reads_output) return mode == MonetMode::kOutput;
  if (b.reads_intermediate || intermediate_family(n)) return mode == MonetMode::kIntermediate;
  return mode == MonetMode::kInplace;  // input-activated instead of an in-place default
}

MonetMode monet_mode_from_name(const std::string& name) {
  for (const auto& m : kModes)
    if (name == m.name) return m.mode;
  throw std::invalid_argument("unknown MONeT mode '" + name +
                              "' (known: monet, monet-noop, monet-conv, monet-out, monet-int, "
                              "monet-inplace)");
}

const char* monet_mode_name(MonetMode mode) {
  for (const auto& m : kModes)
    if (mode == m.mode) return m.name;
  return "?";
}

MonetResult plan_monet(const Graph& g, const CostModel& costs, const MonetOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  MonetResult result;
  const auto finish = [&] {
    result.seconds = seconds_since(t0);
    return result;
  };
  // The fastest segment-keeping plan within the budget (by the simulator), returned when
  // the program finds none faster: the program's memory rows bound the simulated peak from
  // above, so they may reject it. Only in the mode that allows every implementation (its
  // plans use any). Segment keeping's budget never exceeds options.budget_bytes.
  SimulatedPlan heuristic;
  int64_t budget = o.budget_bytes;
  for (int attempt = 0; attempt <= o.max_corrections; ++attempt) {
    MonetProgram program(g, costs, o.mode, budget);
    result.size = {program.milp().columns(), program.milp().rows(), program.milp().nonzeros()};
    result.program_budget = budget;
    MilpOptions solver = o.solver;
    solver.column_positions = program.column_positions();
    // The LP relaxation (the certified bound; 17 to 50 s on the largest programs) on a
    // thread of its own from now, beside the heuristics below, when the solve will be a
    // neighbourhood search (which only needs its bound).
    if (neighbourhood_search_applies(program.milp(), o.solver)) {
      const double limit = std::max(1.0, o.solver.time_limit_seconds - seconds_since(t0) - 1.0);
      solver.relaxation = std::async(std::launch::async, [&program, limit] {
                            return solve_relaxation(program.milp(), limit, nullptr);
                          }).share();
    }
    // Heuristic plans that keep whole segments where the budget leaves room, in at most a
    // sixth of the time limit.
    std::vector<Plan> warm_plans = o.warm_plans;
    const auto tk = std::chrono::steady_clock::now();
    SegmentKeepingPlans keeping =
        segment_keeping_plans(g, costs, {budget, o.solver.time_limit_seconds / 6});
    for (SimulatedPlan& k : keeping.within_budget) {
      if (o.mode == MonetMode::kAll &&
          (heuristic.plan.program.empty() || k.simulated.seconds < heuristic.simulated.seconds))
        heuristic = k;
      warm_plans.push_back(std::move(k.plan));
    }
    const double keeping_seconds = seconds_since(tk);
    if (o.solver.progress)
      std::fprintf(stderr, "planner: segment keeping took %.1f s\n", keeping_seconds);
    std::string warm_name = warm_start(program, g, costs, &solver, warm_plans);
    if (warm_name.empty() && neighbourhood_search_applies(program.milp(), o.solver)) {
      // Starting points of the elastic program: the plans above (the program's memory rows
      // may reject what the simulator accepts) and those over the budget.
      std::vector<Plan> elastic_starts = std::move(warm_plans);
      for (Plan& p : keeping.over_budget) elastic_starts.push_back(std::move(p));
      for (const Plan& p : plan_within(g, costs, o.mode, budget, o.solver, elastic_starts)) {
        std::vector<double> x = program.assignment_of(p, /*nearest=*/true);
        if (x.empty() || !program.milp().satisfies(x)) continue;
        solver.warm_start = std::move(x);
        warm_name = "the elastic search's plan";
      }
    }
    // What is left of the time limit after building the program, segment keeping and the
    // elastic search, less two seconds: CbcMain1 takes up to a second to return after its
    // deadline on ResNet-50 (--exact at 0.7x: 60.0-60.15 s in all with one second kept), and
    // decoding and simulating the solution take the rest.
    solver.time_limit_seconds =
        std::max(1.0, o.solver.time_limit_seconds - seconds_since(t0) - 2.0);
    if (o.solver.progress)
      std::fprintf(
          stderr, "planner: %s program, budget %.1f MiB: %d columns, %d rows, %lld non-zeros%s%s\n",
          monet_mode_name(o.mode), budget / 1048576.0, result.size.columns, result.size.rows,
          static_cast<long long>(result.size.nonzeros),
          warm_name.empty() ? "" : ", warm start from ", warm_name.c_str());
    result.solve = solve_milp(program.milp(), solver);
    ++result.solves;
    if (result.solve.values.empty()) break;
    result.plan = program.decode(result.solve.values);
    result.plan.planner = monet_mode_name(o.mode);
    result.objective_seconds = program.seconds_of(result.solve.values);
    result.predicted = simulate(g, result.plan, costs);
    if (result.predicted.peak_bytes <= o.budget_bytes) {
      result.found = true;
      break;
    }
    // The program's memory rows are upper bounds except where the simulator knows
    // better; lower the program's budget by the excess and solve again.
    const int64_t excess = result.predicted.peak_bytes - o.budget_bytes;
    if (o.solver.progress)
      std::fprintf(stderr, "planner: simulated peak exceeds the budget by %lld B; re-solving\n",
                   static_cast<long long>(excess));
    budget -= excess + 4096;
  }
  if (!heuristic.plan.program.empty() &&
      (!result.found || heuristic.simulated.seconds < result.predicted.seconds)) {
    result.found = true;
    result.from_segment_keeping = true;
    result.plan = std::move(heuristic.plan);
    result.plan.planner = monet_mode_name(o.mode);
    result.predicted = std::move(heuristic.simulated);
    result.objective_seconds = result.predicted.seconds;
    if (std::isfinite(result.solve.bound))
      result.solve.gap = (result.objective_seconds - result.solve.bound) / result.objective_seconds;
  }
  return finish();
}

MinimumBudget minimum_budget(const Graph& g, const CostModel& costs, MonetMode mode,
                             const MilpOptions& solver, int64_t infeasible_bytes) {
  MonetProgram program(g, costs, mode, -1);
  MilpOptions o = solver;
  o.column_positions = program.column_positions();
  warm_start(program, g, costs, &o);
  const MilpResult r = solve_milp(program.milp(), o);
  MinimumBudget m;
  if (r.values.empty()) return m;
  m.bytes = program.budget_of(r.values);
  m.bound_bytes =
      std::isfinite(r.bound) ? static_cast<int64_t>(std::floor(r.bound * 1048576.0)) : -1;
  if (infeasible_bytes >= 0) m.bound_bytes = std::max(m.bound_bytes, infeasible_bytes + 1);
  m.proven = r.status == MilpStatus::kOptimal;
  m.plan = program.decode(r.values);
  m.plan.planner = monet_mode_name(mode);
  return m;
}

}  // namespace monet
