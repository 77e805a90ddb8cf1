// `monet plan`: make a plan for a model with any planner (named_planner.h: MONeT, Checkmate,
// Gist, Chen, store-all, ...) and write it as JSON, with its predicted peak and time.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cost/simulator.h"
#include "graph/torchscript/torchscript_import.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/minimum_budget.h"
#include "planner/monet_planner.h"
#include "planner/named_planner.h"

namespace monet::cli {
namespace {

struct PlanOptions {
  ModelOptions model;
  CostOptions costs;
  std::string planner;  // default: monet with --budget, else storeall
  std::string budget;
  SolverCliOptions solver;
  uint64_t seed = 0;
  std::string output;
  bool json = false;
  bool exact = false;
  std::string optimizer_update = "after-backward";  // --optimizer-update (UpdateMode's name)
};

// The search options `monet plan` asks for: --exact forces CBC's branch and cut; otherwise
// the search policy chooses (search_policy.h).
SearchOptions plan_search_options(const PlanOptions& o) {
  SearchOptions so = search_options(o.solver);
  if (o.exact) so.strategy = SearchStrategy::kBranchAndCut;
  return so;
}

// Throws the error for a budget no plan of a program-based planner fits: the solver ran
// out of time, or the smallest budget with a plan (smallest_budget, as the API finds it).
[[noreturn]] void explain_infeasible(const Graph& g, const CostModel& costs, const PlanOptions& o,
                                     int64_t budget, const PlannerOutcome& outcome,
                                     int64_t baseline_peak) {
  const MonetResult& r = outcome.solve;
  if (r.solve.status == MilpStatus::kNoSolution) {
    std::ostringstream why;
    why << "the solver found no plan within " << o.solver.time_limit << " s for a budget of "
        << format_bytes(budget, true) << "; raise --time-limit or the budget";
    throw std::runtime_error(why.str());
  }
  std::cerr << "planner: no plan fits " << format_bytes(budget, true)
            << "; computing the smallest budget that has one ...\n";
  const std::optional<int64_t> infeasible = proven_infeasible_budget(outcome, budget);
  // In the planner's own memory model (Checkmate's has no workspace).
  const MinimumBudget m = smallest_budget(o.planner, g, costs, plan_search_options(o), infeasible);
  std::string smallest =
      m.bytes > 0 ? format_bytes(m.bytes, true) : "unknown (no solution in time)";
  if (m.bytes > 0 && !m.proven) {
    if (infeasible && m.bound_bytes == *infeasible + 1)
      smallest +=
          " (best found; proven lower bound: more than the budget, where the program's LP "
          "relaxation has no solution)";
    else if (m.bound_bytes >= 0)
      smallest += " (best found; proven lower bound " + format_bytes(m.bound_bytes, true) + ")";
    else
      smallest += " (best found; no lower bound proven within the time limit)";
  }
  if (baseline_peak > 0 && m.bytes > 0) {
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, " = %.3fx the baseline peak",
                  double(m.bytes) / double(baseline_peak));
    smallest += ratio;
  }
  std::string floor;
  if (r.floor_bytes > 0)
    floor = "; no plan can peak below the floor of " + format_bytes(r.floor_bytes, true) +
            " (parameters, gradients and the largest operator call)";
  throw UsageError("no " + o.planner + " plan fits a budget of " + format_bytes(budget, true) +
                   "; the smallest budget with a plan is " + smallest + floor);
}

// The counts `monet plan` reports of the plan it wrote.
PlanSummary summarize(const Graph& g, const Plan& plan) {
  PlanSummary s;
  s.instructions = static_cast<int>(plan.program.size());
  bool backward = false;
  for (const auto& in : plan.program) {
    backward = backward || in.kind == InstrKind::kBackward;
    s.recomputations += backward && in.kind == InstrKind::kForward;
    s.explicit_frees += in.kind == InstrKind::kFree;
  }
  s.lossy_forwards = lossy_forwards(g, plan);
  return s;
}

// What `monet plan` reports of the plan it wrote.
struct PlanReport {
  const PlanOptions& options;
  const Graph& graph;
  const Plan& plan;
  const PlannerOutcome& outcome;
  int64_t budget = -1;         // bytes; -1: none
  int64_t baseline_peak = -1;  // measured autograd peak (bytes); -1: not measured
  bool solved = false;         // the planner solved a program (it takes a budget)
  bool have_costs = false;     // sim and storeall are predictions
  SimulationResult sim, storeall;
};

void print_json_report(const PlanReport& p) {
  const PlanSummary s = summarize(p.graph, p.plan);
  nlohmann::json j = {{"planner", p.plan.planner},
                      {"output", p.options.output},
                      {"fingerprint", p.plan.graph_fingerprint},
                      {"instructions", p.plan.program.size()},
                      {"recomputations", s.recomputations},
                      {"explicit_frees", s.explicit_frees},
                      {"lossy_forwards", s.lossy_forwards},
                      {"optimizer_update", update_mode_name(p.graph.update_mode())}};
  if (p.budget > 0) j["budget_bytes"] = p.budget;
  if (p.baseline_peak > 0) j["baseline_peak_bytes"] = p.baseline_peak;
  if (p.have_costs) {
    j["predicted_peak_bytes"] = p.sim.peak_bytes;
    j["predicted_seconds"] = p.sim.seconds;
    j["storeall_predicted_peak_bytes"] = p.storeall.peak_bytes;
    j["storeall_predicted_seconds"] = p.storeall.seconds;
  }
  if (p.solved) j["solve"] = solve_json(p.outcome.solve);
  if (p.outcome.model_peak_bytes >= 0) j["checkmate_model_peak_bytes"] = p.outcome.model_peak_bytes;
  print_json(j);
}

// The solve's lines: its status, size and gap, where the plan comes from, the floor.
void print_solve(const MonetResult& r) {
  std::printf("solve         %s in %.1f s, %d columns, %d rows, %lld non-zeros, ",
              milp_status_name(r.solve.status), r.solve.seconds, r.size.columns, r.size.rows,
              static_cast<long long>(r.size.nonzeros));
  if (std::isfinite(r.solve.gap))
    std::printf("gap %.2f%%\n", 100 * r.solve.gap);
  else
    std::printf("no bound (the LP relaxation was not solved in time)\n");
  if (r.source != PlanSource::kProgram)
    std::printf(
        "              the plan is %s's: faster than the program's best, within the budget by "
        "the simulator (the program's memory rows may reject it)\n",
        plan_source_name(r.source));
  if (r.floor_bytes > 0)
    std::printf("floor         %s: parameters, gradients and the largest operator call\n",
                format_bytes(r.floor_bytes, true).c_str());
}

void print_text_report(const PlanReport& p) {
  const PlanSummary s = summarize(p.graph, p.plan);
  std::printf("wrote %s: %s plan for %s, %zu instructions (%d recomputations, %d explicit frees)\n",
              p.options.output.c_str(), p.plan.planner.c_str(), p.options.model.model.c_str(),
              p.plan.program.size(), s.recomputations, s.explicit_frees);
  if (s.lossy_forwards > 0)
    std::printf(
        "LOSSY         %d forwards use a lossy implementation: gradients differ slightly "
        "from autograd's (--lossy)\n",
        s.lossy_forwards);
  if (p.solved) print_solve(p.outcome.solve);
  if (p.outcome.model_peak_bytes >= 0)
    std::printf("checkmate     peak %s in Checkmate's memory model (no workspace)\n",
                format_bytes(p.outcome.model_peak_bytes, true).c_str());
  if (!p.have_costs) {
    std::printf("(no cached costs for this model: `monet profile` first to see predictions)\n");
    return;
  }
  std::printf("predicted     peak %s", format_bytes(p.sim.peak_bytes, true).c_str());
  if (p.budget > 0) std::printf("   budget %s", format_bytes(p.budget, true).c_str());
  std::printf("\n              time %.4f s/iter, store-all %.4f s/iter: overhead %+.1f%%\n",
              p.sim.seconds, p.storeall.seconds, 100 * (p.sim.seconds / p.storeall.seconds - 1));
  if (p.baseline_peak > 0)
    std::printf("              memory ratio %.3f of the measured baseline peak %s\n",
                double(p.sim.peak_bytes) / double(p.baseline_peak),
                format_bytes(p.baseline_peak, true).c_str());
}

int run_plan(PlanOptions o) {
  if (o.planner.empty()) o.planner = o.budget.empty() ? "storeall" : "monet";
  Graph g = build_graph(o.model);
  g.set_update_mode(update_mode_from_name(o.optimizer_update));
  try {
    check_planner_name(o.planner);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const bool solved = planner_requires_budget(o.planner);
  if (solved && o.budget.empty()) throw UsageError("--planner " + o.planner + " needs --budget");
  int64_t baseline_peak = -1;
  auto baseline = [&] {
    if (baseline_peak < 0) baseline_peak = measure_baseline_peak(g);
    return baseline_peak;
  };
  const int64_t budget = o.budget.empty() ? -1 : parse_budget(o.budget, baseline);
  CostModel costs;
  const bool have_costs =
      obtain_costs(g, o.costs, planner_needs_costs(o.planner) || budget > 0, &costs);

  PlannerRequest request;
  request.planner = o.planner;
  request.budget_bytes = budget;
  request.seed = o.seed;
  request.solver = plan_search_options(o);
  request.solver.progress = true;
  const PlannerOutcome outcome = make_plan(g, have_costs ? &costs : nullptr, request);
  // (The lean and chain planners return their smallest plan instead, refused below.)
  if (!outcome.found && planner_requires_budget(o.planner))
    explain_infeasible(g, costs, o, budget, outcome, baseline_peak);
  Plan plan = outcome.plan;
  // A traced model's plan names its file absolutely, so `monet run --plan` works from
  // any directory.
  plan.model = is_torchscript_path(o.model.model)
                   ? std::filesystem::absolute(o.model.model).lexically_normal().string()
                   : o.model.model;
  plan.config = model_config(o.model);
  PlanReport report{o, g, plan, outcome, budget, baseline_peak, solved, have_costs, {}, {}};
  if (have_costs) {
    report.sim = simulate(g, plan, costs);
    report.storeall = simulate(g, store_all_plan(g), costs);
    // A planner that does not take the budget (store-all, Chen, Gist, random) is refused
    // when its plan does not fit it.
    if (budget > 0 && report.sim.peak_bytes > budget)
      throw UsageError("the " + o.planner + " plan's predicted peak " +
                       format_bytes(report.sim.peak_bytes, true) + " exceeds the budget " +
                       format_bytes(budget, true) + "; use --planner monet to plan within it");
  }
  write_file_atomically(o.output, plan_to_json(g, plan).dump(1) + "\n");
  if (o.json)
    print_json_report(report);
  else
    print_text_report(report);
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("plan", "make an execution plan and write it as JSON");
  auto o = std::make_shared<PlanOptions>();
  add_model_options(cmd, o->model);
  add_cost_options(cmd, o->costs);
  std::string names;
  for (const auto& n : planner_names()) names += (names.empty() ? "" : " | ") + n;
  cmd->add_option("--planner", o->planner,
                  names + " (default: monet with --budget, else storeall)");
  cmd->add_option(
      "--budget", o->budget,
      "peak memory allowed: bytes, KiB/MiB/GiB, or a ratio of the baseline peak (0.4x)");
  add_solver_options(cmd, o->solver);
  cmd->add_flag("--exact", o->exact,
                "CBC's branch and cut over the whole program alone (the default with a time "
                "limit of 20 s or more, and on programs over 20,000 columns: neighbourhood "
                "search from the best heuristic plan around the LP relaxation)");
  cmd->add_option("--seed", o->seed, "seed of the random planner")->capture_default_str();
  cmd->add_option("--optimizer-update", o->optimizer_update,
                  "the step the plan is for: after-backward (every gradient kept to the end) "
                  "or fused (each parameter updated, and its gradient freed, inside the "
                  "backward once the plan is done with it)")
      ->check(CLI::IsMember({"after-backward", "fused"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "plan file to write")->required();
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_plan(*o); }});
}

}  // namespace monet::cli
