// `monet plan`: make a plan for a model and write it as JSON.
#include <cstdio>

#include "cli/cli_common.h"
#include "planner/baseline_plans.h"

namespace monet::cli {
namespace {

struct PlanOptions {
  ModelOptions model;
  std::string planner = "storeall";
  uint64_t seed = 0;
  std::string output;
  bool json = false;
};

int run_plan(const PlanOptions& o) {
  const Graph g = build_graph(o.model);
  Plan plan;
  if (o.planner == "storeall")
    plan = store_all_plan(g);
  else if (o.planner == "chen")
    plan = chen_plan(g);
  else if (o.planner == "random")
    plan = random_plan(g, o.seed);
  else
    throw UsageError("unknown planner '" + o.planner + "' (known: storeall, chen, random)");
  plan.model = o.model.model;
  plan.config = model_config(o.model);
  write_file_atomically(o.output, plan_to_json(g, plan).dump(1) + "\n");
  const PlanSummary s = summarize(g, plan);
  if (o.json) {
    print_json({{"planner", plan.planner},
                {"output", o.output},
                {"fingerprint", plan.graph_fingerprint},
                {"instructions", plan.program.size()},
                {"recomputations", s.recomputations},
                {"explicit_frees", s.frees}});
    return 0;
  }
  std::printf("wrote %s: %s plan for %s, %zu instructions (%d recomputations, %d explicit frees)\n",
              o.output.c_str(), plan.planner.c_str(), o.model.model.c_str(), plan.program.size(),
              s.recomputations, s.frees);
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("plan", "make an execution plan and write it as JSON");
  auto o = std::make_shared<PlanOptions>();
  add_model_options(cmd, o->model);
  cmd->add_option("--planner", o->planner, "storeall | chen | random")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the random planner")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "plan file to write")->required();
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_plan(*o); }});
}

}  // namespace monet::cli
