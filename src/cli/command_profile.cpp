// `monet profile`: measure every operator implementation of a model on this machine.
#include <cstdio>
#include <iostream>

#include "cli/cli_common.h"

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
  if (!o.costs.costs_file.empty()) throw UsageError("--costs makes no sense for `monet profile`");
  const Model model = load_model(o.model);
  CostSource source = cost_source(o.costs);
  source.warmup = o.warmup;
  const OperatorCosts costs = OperatorCosts::obtain(model, source);
  if (!o.output.empty()) with_usage_errors([&] { costs.save(o.output); });
  const int impls = costs.implementations();
  const int64_t workspace = costs.largest_workspace_bytes();
  // What the costs predict for autograd's own schedule (store-all, default operators).
  const Prediction sim = costs.predict_store_all();
  const bool from_cache = costs.from_cache();
  const std::string where = costs.cache_file();
  if (o.json) {
    print_json({{"model", o.model.model},
                {"fingerprint", model.fingerprint()},
                {"implementations", impls},
                {"from_cache", from_cache},
                {"cache_file", where},
                {"output", o.output},
                {"threads", costs.threads()},
                {"storeall_predicted_peak_bytes", sim.peak_bytes},
                {"storeall_predicted_seconds", sim.seconds},
                {"largest_workspace_bytes", workspace}});
    return 0;
  }
  std::printf("%s: %lld nodes, %d (node, implementation) costs %s\n", o.model.model.c_str(),
              static_cast<long long>(model.node_count()), impls,
              from_cache ? "from the cache" : "measured");
  if (!where.empty()) std::printf("cache    %s\n", where.c_str());
  if (!o.output.empty()) std::printf("written  %s\n", o.output.c_str());
  std::printf(
      "store-all with default operators, predicted: peak %s, %.4f s per iteration "
      "(%d threads)\n",
      format_bytes(sim.peak_bytes, true).c_str(), sim.seconds, costs.threads());
  std::printf("largest workspace of any implementation: %s\n",
              format_bytes(workspace, false).c_str());
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
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "also write the costs to this file")
      ->check(kWritableFile);
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_profile(*o); }});
}

}  // namespace monet::cli
