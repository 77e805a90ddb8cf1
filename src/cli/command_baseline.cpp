// `monet baseline`: peak memory and time of a training iteration under LibTorch autograd.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/cli_common.h"
#include "runtime/autograd_baseline.h"
#include "runtime/interleaved_measurement.h"

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
  const Graph g = build_graph(o.model);
  const ModelConfig c = model_config(o.model);
  if (o.threads > 0) at::set_num_threads(o.threads);
  ModelState state = initial_state(g, o.model.model, o.seed);
  const Batch batch = make_batch(g, o.seed + 1);
  AutogradBaseline baseline(g, state);

  std::vector<double> seconds;
  int64_t peak = 0, start = 0;
  double loss = 0;
  const int total = o.warmup + o.iters;
  for (int i = 0; i < total; ++i) {
    const bool measured = i >= o.warmup;
    std::cerr << (measured ? "iteration " : "warm-up ") << (measured ? i - o.warmup + 1 : i + 1)
              << "/" << (measured ? o.iters : o.warmup) << " ..." << std::flush;
    IterationOptions options;
    options.record_trace = !o.trace_csv.empty() && i + 1 == total;
    const IterationResult r = baseline.run_iteration(batch, options);
    if (options.record_trace) write_trace_csv(r.trace, o.trace_csv);
    std::cerr << " " << r.seconds << " s, peak " << format_bytes(r.peak_bytes) << "\n";
    if (!measured) continue;
    seconds.push_back(r.seconds);
    peak = std::max(peak, r.peak_bytes);
    start = r.start_bytes;
    loss = r.loss;
  }
  const double med = median(seconds);
  if (o.json) {
    print_json({{"model", o.model.model},
                {"batch", c.batch},
                {"image", c.image},
                {"width", c.width},
                {"fingerprint", g.fingerprint()},
                {"iters", o.iters},
                {"warmup", o.warmup},
                {"peak_bytes", peak},
                {"start_bytes", start},
                {"median_seconds", med},
                {"seconds", seconds},
                {"loss", loss},
                {"threads", at::get_num_threads()}});
    return 0;
  }
  std::printf("model            %s (batch %lld, image %s)\n", o.model.model.c_str(),
              static_cast<long long>(c.batch), image_size_string(c.image).c_str());
  std::printf("peak memory      %s\n", format_bytes(peak, true).c_str());
  std::printf("  of which live at start (weights, batch) %s\n", format_bytes(start).c_str());
  std::printf("time/iteration   %.4f s (median of %d, %d threads)\n", med, o.iters,
              at::get_num_threads());
  std::printf("loss             %.6f\n", loss);
  return 0;
}

}  // namespace

void add_baseline_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand(
      "baseline", "measure one training iteration under LibTorch autograd (the PyTorch baseline)");
  auto o = std::make_shared<BaselineOptions>();
  add_model_options(cmd, o->model);
  cmd->add_option("--iters", o->iters, "measured iterations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "unmeasured warm-up iterations")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed for weights and data")->capture_default_str();
  cmd->add_option("--threads", o->threads, "intra-op threads (default: LibTorch's choice)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--trace-csv", o->trace_csv,
                  "write the memory trace of the last iteration (label,current,peak bytes)");
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_baseline(*o); }});
}

}  // namespace monet::cli
