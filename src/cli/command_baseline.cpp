// `monet baseline`: peak memory and time of a training iteration under LibTorch autograd.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/cli_common.h"

namespace monet::cli {
namespace {

struct BaselineOptions {
  ModelOptions model;
  int iters = 3;
  int warmup = 1;
  uint64_t seed = 0;
  int threads = 0;        // 0 = LibTorch's default (one per physical core)
  std::string trace_csv;  // memory after every operator of the last iteration
  bool json = false;
};

int run_baseline(const BaselineOptions& o) {
  if (o.threads > 0) at::set_num_threads(o.threads);
  const Model model = with_usage_errors([&] { return Model::load(model_spec(o.model), o.seed); });
  const ModelDescription d = describe(model);
  MeasurementOptions mo;
  mo.warmup = o.warmup;
  mo.iters = o.iters;
  mo.record_last_trace = !o.trace_csv.empty();
  mo.batch_seed = o.seed + 1;
  mo.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const AutogradIterations r = measure_autograd_iterations(model, mo);
  if (mo.record_last_trace) write_trace_csv(r.trace, o.trace_csv);
  if (o.json) {
    print_json({{"model", o.model.model},
                {"batch", d.batch},
                {"image", d.image},
                {"width", d.width},
                {"fingerprint", d.fingerprint},
                {"iters", o.iters},
                {"warmup", o.warmup},
                {"peak_bytes", r.peak_bytes},
                {"start_bytes", r.start_bytes},
                {"median_seconds", r.median_seconds},
                {"seconds", r.seconds},
                {"loss", r.loss},
                {"threads", at::get_num_threads()}});
    return 0;
  }
  std::printf("model            %s (batch %lld, image %s)\n", o.model.model.c_str(),
              static_cast<long long>(d.batch), image_size_string(d.image).c_str());
  std::printf("peak memory      %s\n", format_bytes(r.peak_bytes, true).c_str());
  std::printf("  of which live at start (weights, batch) %s\n",
              format_bytes(r.start_bytes, false).c_str());
  std::printf("time/iteration   %.4f s (median of %d, %d threads)\n", r.median_seconds, o.iters,
              at::get_num_threads());
  std::printf("loss             %.6f\n", r.loss);
  return 0;
}

}  // namespace

void add_baseline_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand(
      "baseline", "measure one training iteration under LibTorch autograd (the PyTorch baseline)");
  auto o = std::make_shared<BaselineOptions>();
  add_model_options(cmd, o->model);
  cmd->add_option("--iters", o->iters, "measured iterations")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "unmeasured warm-up iterations")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed for weights and data")->capture_default_str();
  cmd->add_option("--threads", o->threads, "intra-op threads (default: LibTorch's choice)")
      ->check(kPositive);
  cmd->add_option("--trace-csv", o->trace_csv,
                  "write the memory trace of the last iteration (label,current,peak bytes)")
      ->check(kWritableFile);
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_baseline(*o); }});
}

}  // namespace monet::cli
