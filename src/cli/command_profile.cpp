// `monet profile`: measure every operator implementation of a model on this machine.
#include <cstdio>
#include <iostream>

#include "cli/cli_common.h"
#include "cost/profiler.h"
#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"

namespace monet::cli {
namespace {

struct ProfileCommandOptions {
  ModelOptions model;
  CostOptions costs;
  int warmup = 1;
  std::string output;
  bool json = false;
};

int run_profile(const ProfileCommandOptions& o) {
  const Graph g = build_graph(o.model);
  if (!o.costs.costs_file.empty()) throw UsageError("--costs makes no sense for `monet profile`");
  const std::string dir = cost_cache_dir(o.costs);
  ProfileOptions po;
  po.repeats = o.costs.repeats;
  po.warmup = o.warmup;
  po.progress = true;
  bool from_cache = false;
  const CostModel costs =
      cached_profile_costs(g, ModelState::initialize(g, 0), make_batch(g, 1), po, dir, &from_cache);
  if (!o.output.empty())
    write_file_atomically(o.output, cost_model_to_json(g, costs).dump(1) + "\n");
  int impls = 0;
  int64_t workspace = 0;
  for (const auto& nc : costs.nodes) {
    impls += static_cast<int>(nc.forward.size() + nc.backward.size());
    for (const auto& [k, c] : nc.forward) workspace = std::max(workspace, c.workspace_bytes);
    for (const auto& [k, c] : nc.backward) workspace = std::max(workspace, c.workspace_bytes);
  }
  // What the costs predict for autograd's own schedule (store-all, default operators).
  const SimulationResult sim = simulate(g, store_all_plan(g), costs);
  const std::string where = dir.empty() ? "" : cost_cache_path(g, dir);
  if (o.json) {
    print_json({{"model", o.model.model},
                {"fingerprint", g.fingerprint()},
                {"implementations", impls},
                {"from_cache", from_cache},
                {"cache_file", where},
                {"output", o.output},
                {"threads", costs.threads},
                {"storeall_predicted_peak_bytes", sim.peak_bytes},
                {"storeall_predicted_seconds", sim.seconds},
                {"largest_workspace_bytes", workspace}});
    return 0;
  }
  std::printf("%s: %zu nodes, %d (node, implementation) costs %s\n", o.model.model.c_str(),
              g.nodes().size(), impls, from_cache ? "from the cache" : "measured");
  if (!where.empty()) std::printf("cache    %s\n", where.c_str());
  if (!o.output.empty()) std::printf("written  %s\n", o.output.c_str());
  std::printf(
      "store-all with default operators, predicted: peak %s, %.4f s per iteration "
      "(%d threads)\n",
      format_bytes(sim.peak_bytes, true).c_str(), sim.seconds, costs.threads);
  std::printf("largest workspace of any implementation: %s\n", format_bytes(workspace).c_str());
  return 0;
}

}  // namespace

void add_profile_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand(
      "profile", "measure time and workspace of every operator implementation (cached)");
  auto o = std::make_shared<ProfileCommandOptions>();
  add_model_options(cmd, o->model);
  add_cost_options(cmd, o->costs);
  cmd->add_option("--warmup", o->warmup, "untimed calls per implementation")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "also write the costs to this file");
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_profile(*o); }});
}

}  // namespace monet::cli
