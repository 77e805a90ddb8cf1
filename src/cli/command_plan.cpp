// `monet plan`: make a plan for a model with any planner (named_planner.h: MONeT, Checkmate,
// Gist, Chen, store-all, ...) and write it as JSON, with its predicted peak and time.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"

namespace monet::cli {
namespace {

struct PlanCommandOptions {
  ModelOptions model;
  CostOptions costs;
  std::string planner;  // default: monet with --budget, else storeall
  std::string budget;
  SolverCliOptions solver;
  uint64_t seed = 0;
  std::string output;
  bool json = false;
  bool exact = false;
  std::string optimizer_update = "after-backward";  // --optimizer-update (OptimizerUpdate's name)
};

// Throws the error for a budget no plan of a program-based planner fits: the solver ran
// out of time, or the smallest budget with a plan (smallest_iteration_budget, as the API
// finds it).
[[noreturn]] void explain_infeasible(const Model& model, const OperatorCosts& costs,
                                     const PlanCommandOptions& o, PlanFileRequest request,
                                     const PlanFileOutcome& outcome, int64_t baseline_peak) {
  const int64_t budget = *request.budget_bytes;
  if (outcome.out_of_time) {
    std::ostringstream why;
    why << "the solver found no plan within " << o.solver.time_limit << " s for a budget of "
        << format_bytes(budget, true) << "; raise --time-limit or the budget";
    throw std::runtime_error(why.str());
  }
  std::cerr << "planner: no plan fits " << format_bytes(budget, true)
            << "; computing the smallest budget that has one ...\n";
  request.search.progress = false;
  // In the planner's own memory model (Checkmate's has no workspace).
  const SmallestBudget m =
      smallest_iteration_budget(model, costs, request, outcome.proven_infeasible_bytes);
  std::string smallest = m.bytes ? format_bytes(*m.bytes, true) : "unknown (no solution in time)";
  if (m.bytes && !m.proven) {
    const auto& infeasible = outcome.proven_infeasible_bytes;
    if (infeasible && m.bound_bytes == *infeasible + 1)
      smallest +=
          " (best found; proven lower bound: more than the budget, where the program's LP "
          "relaxation has no solution)";
    else if (m.bound_bytes)
      smallest += " (best found; proven lower bound " + format_bytes(*m.bound_bytes, true) + ")";
    else
      smallest += " (best found; no lower bound proven within the time limit)";
  }
  if (baseline_peak > 0 && m.bytes) {
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, " = %.3fx the baseline peak",
                  double(*m.bytes) / double(baseline_peak));
    smallest += ratio;
  }
  std::string floor;
  if (outcome.solve && outcome.solve->floor_bytes > 0)
    floor = "; no plan can peak below the floor of " +
            format_bytes(outcome.solve->floor_bytes, true) +
            " (parameters, gradients and the largest operator call)";
  throw UsageError("no " + o.planner + " plan fits a budget of " + format_bytes(budget, true) +
                   "; the smallest budget with a plan is " + smallest + floor);
}

// What `monet plan` reports of the plan it wrote.
struct PlanReport {
  const PlanCommandOptions& options;
  const PlanFile& plan;
  const PlanFileOutcome& outcome;
  int64_t budget = -1;         // bytes; -1: none
  int64_t baseline_peak = -1;  // measured autograd peak (bytes); -1: not measured
  bool have_costs = false;     // sim and storeall are predictions
  Prediction sim, storeall;
};

void print_json_report(const PlanReport& p) {
  const PlanSummary s = p.plan.summary();
  nlohmann::json j = {{"planner", p.plan.planner()},
                      {"output", p.options.output},
                      {"fingerprint", p.plan.model_description().fingerprint},
                      {"instructions", s.instructions},
                      {"recomputations", s.recomputations},
                      {"explicit_frees", s.explicit_frees},
                      {"lossy_forwards", s.lossy_forwards},
                      {"optimizer_update", optimizer_update_name(p.plan.optimizer_update())}};
  if (p.budget > 0) j["budget_bytes"] = p.budget;
  if (p.baseline_peak > 0) j["baseline_peak_bytes"] = p.baseline_peak;
  if (p.have_costs) {
    j["predicted_peak_bytes"] = p.sim.peak_bytes;
    j["predicted_seconds"] = p.sim.seconds;
    j["storeall_predicted_peak_bytes"] = p.storeall.peak_bytes;
    j["storeall_predicted_seconds"] = p.storeall.seconds;
  }
  if (p.outcome.solve) j["solve"] = solve_json(*p.outcome.solve);
  if (p.outcome.checkmate_model_peak_bytes)
    j["checkmate_model_peak_bytes"] = *p.outcome.checkmate_model_peak_bytes;
  print_json(j);
}

// The solve's lines: its status, size and gap, where the plan comes from, the floor.
void print_solve(const SolveReport& r) {
  std::printf("solve         %s in %.1f s, %d columns, %d rows, %lld non-zeros, ", r.status.c_str(),
              r.solve_seconds, r.columns, r.rows, static_cast<long long>(r.nonzeros));
  if (r.gap)
    std::printf("gap %.2f%%\n", 100 * *r.gap);
  else
    std::printf("no bound (the LP relaxation was not solved in time)\n");
  if (r.plan_source != "program")
    std::printf(
        "              the plan is %s's: faster than the program's best, within the budget by "
        "the simulator (the program's memory rows may reject it)\n",
        r.plan_source.c_str());
  if (r.floor_bytes > 0)
    std::printf("floor         %s: parameters, gradients and the largest operator call\n",
                format_bytes(r.floor_bytes, true).c_str());
}

void print_text_report(const PlanReport& p) {
  const PlanSummary s = p.plan.summary();
  std::printf("wrote %s: %s plan for %s, %d instructions (%d recomputations, %d explicit frees)\n",
              p.options.output.c_str(), p.plan.planner().c_str(), p.options.model.model.c_str(),
              s.instructions, s.recomputations, s.explicit_frees);
  if (s.lossy_forwards > 0)
    std::printf(
        "LOSSY         %d forwards use a lossy implementation: gradients differ slightly "
        "from autograd's (--lossy)\n",
        s.lossy_forwards);
  if (p.outcome.solve) print_solve(*p.outcome.solve);
  if (p.outcome.checkmate_model_peak_bytes)
    std::printf("checkmate     peak %s in Checkmate's memory model (no workspace)\n",
                format_bytes(*p.outcome.checkmate_model_peak_bytes, true).c_str());
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

int run_plan(PlanCommandOptions o) {
  if (o.planner.empty()) o.planner = o.budget.empty() ? "storeall" : "monet";
  const PlannerInfo planner = with_usage_errors([&] { return planner_info(o.planner); });
  const Model model = load_model(o.model);
  if (planner.requires_budget && o.budget.empty())
    throw UsageError("--planner " + o.planner + " needs --budget");
  int64_t baseline_peak = -1;
  auto baseline = [&] {
    if (baseline_peak < 0) baseline_peak = measure_baseline_peak(model);
    return baseline_peak;
  };
  const int64_t budget = o.budget.empty() ? -1 : parse_budget(o.budget, baseline);
  const std::optional<OperatorCosts> costs =
      obtain_costs(model, o.costs, planner.needs_costs || budget > 0);

  PlanFileRequest request;
  request.planner = o.planner;
  if (budget > 0) request.budget_bytes = budget;
  request.optimizer_update = optimizer_update_from_name(o.optimizer_update);
  request.seed = o.seed;
  request.search = search_settings(o.solver);
  request.search.branch_and_cut = o.exact;
  request.search.progress = true;
  const PlanFileOutcome outcome = make_plan_file(model, costs ? &*costs : nullptr, request);
  if (!outcome.plan) explain_infeasible(model, *costs, o, request, outcome, baseline_peak);
  const PlanFile& plan = *outcome.plan;
  PlanReport report{o, plan, outcome, budget, baseline_peak, costs.has_value(), {}, {}};
  if (costs) {
    report.sim = costs->predict(plan);
    report.storeall = costs->predict_store_all();
    // A planner that does not take the budget (store-all, Chen, Gist, random) is refused
    // when its plan does not fit it.
    if (budget > 0 && report.sim.peak_bytes > budget)
      throw UsageError("the " + o.planner + " plan's predicted peak " +
                       format_bytes(report.sim.peak_bytes, true) + " exceeds the budget " +
                       format_bytes(budget, true) + "; use --planner monet to plan within it");
  }
  with_usage_errors([&] { plan.save(o.output); });
  if (o.json)
    print_json_report(report);
  else
    print_text_report(report);
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("plan", "make an execution plan and write it as JSON");
  auto o = std::make_shared<PlanCommandOptions>();
  add_model_options(cmd, o->model);
  add_cost_options(cmd, o->costs);
  std::string names;
  for (const std::string& n : planner_names()) names += (names.empty() ? "" : " | ") + n;
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
  cmd->add_option("-o,--output", o->output, "plan file to write")->required()->check(kWritableFile);
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_plan(*o); }});
}

}  // namespace monet::cli
