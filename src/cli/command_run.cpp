// `monet run` (measure a plan against the autograd baseline, interleaved) and
// `monet verify` (its gradients against autograd's).
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/cli_common.h"

namespace monet::cli {
namespace {

struct RunOptions {
  std::string plan;
  int iters = 3;
  int warmup = 1;
  int threads = 0;
  double tolerance = 1e-4;
  std::string precision = "float64";
  std::string trace_csv;
  bool json = false;
};

int run_run(const RunOptions& o) {
  if (o.threads > 0) at::set_num_threads(o.threads);
  const PlanFile plan = with_usage_errors([&] { return PlanFile::load(o.plan); });
  MeasurementOptions mo;
  mo.warmup = o.warmup;
  mo.iters = o.iters;
  mo.record_last_trace = !o.trace_csv.empty();
  mo.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const AutogradComparison m = with_usage_errors([&] { return compare_with_autograd(plan, mo); });
  if (mo.record_last_trace) write_trace_csv(m.trace, o.trace_csv);
  if (o.json) {
    print_json({{"plan", o.plan},
                {"planner", plan.planner()},
                {"model", plan.model_name()},
                {"iters", o.iters},
                {"peak_bytes", m.peak_bytes},
                {"baseline_peak_bytes", m.autograd_peak_bytes},
                {"memory_ratio", m.memory_ratio},
                {"median_seconds", m.seconds},
                {"baseline_median_seconds", m.autograd_seconds},
                {"overhead", m.overhead},
                {"seconds", m.iteration_seconds},
                {"baseline_seconds", m.autograd_iteration_seconds}});
    return 0;
  }
  std::printf("%s plan for %s, %d interleaved iterations\n", plan.planner().c_str(),
              plan.model_name().c_str(), o.iters);
  std::printf("peak memory   plan %s   baseline %s   ratio %.3f\n",
              format_bytes(m.peak_bytes, true).c_str(),
              format_bytes(m.autograd_peak_bytes, true).c_str(), m.memory_ratio);
  std::printf("time/iter     plan %.4f s   baseline %.4f s   overhead %+.1f%%\n", m.seconds,
              m.autograd_seconds, 100 * m.overhead);
  return 0;
}

// Verification runs in float64 by default (verify_gradients, monet/measurement.h).
int run_verify(const RunOptions& o) {
  if (o.precision != "float32" && o.precision != "float64")
    throw UsageError("--precision must be float32 or float64");
  const torch::Dtype dtype = o.precision == "float32" ? torch::kFloat32 : torch::kFloat64;
  const PlanFile plan = with_usage_errors([&] { return PlanFile::load(o.plan); });
  const GradientCheck c = with_usage_errors([&] { return verify_gradients(plan, dtype); });
  const bool ok = c.max_relative_error <= o.tolerance;
  if (o.json) {
    print_json({{"plan", o.plan},
                {"precision", o.precision},
                {"max_abs_error", c.max_abs_error},
                {"max_rel_error", c.max_relative_error},
                {"worst_parameter", c.worst_parameter},
                {"loss", c.loss},
                {"baseline_loss", c.autograd_loss},
                {"tolerance", o.tolerance},
                {"ok", ok}});
  } else {
    std::printf("gradients of %d parameters: max abs error %.3g, max rel error %.3g (%s)\n",
                c.parameters, c.max_abs_error, c.max_relative_error, c.worst_parameter.c_str());
    std::printf("loss %.6f (baseline %.6f): %s\n", c.loss, c.autograd_loss,
                ok ? "OK" : "ABOVE TOLERANCE");
  }
  return ok ? 0 : 1;
}

}  // namespace

void add_run_commands(CLI::App& root, std::vector<Command>& commands) {
  auto* run = root.add_subcommand("run", "run a plan, interleaved with the autograd baseline");
  auto o = std::make_shared<RunOptions>();
  run->add_option("--plan,-p", o->plan, "plan file (monet plan -o ...)")->required();
  run->add_option("--iters", o->iters, "measured iterations")
      ->check(kPositive)
      ->capture_default_str();
  run->add_option("--warmup", o->warmup, "unmeasured iterations")
      ->check(kNonNegative)
      ->capture_default_str();
  run->add_option("--threads", o->threads, "intra-op threads")->check(kPositive);
  run->add_option("--trace-csv", o->trace_csv, "memory after every instruction of the last run")
      ->check(kWritableFile);
  run->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({run, [o] { return run_run(*o); }});

  auto* verify = root.add_subcommand("verify", "compare a plan's gradients with autograd's");
  auto v = std::make_shared<RunOptions>();
  verify->add_option("--plan,-p", v->plan, "plan file")->required();
  verify->add_option("--tolerance", v->tolerance, "largest relative error accepted")
      ->capture_default_str();
  verify->add_option("--precision", v->precision, "float64 (default) or float32")
      ->capture_default_str();
  verify->add_flag("--json", v->json, "machine-readable output");
  commands.push_back({verify, [v] { return run_verify(*v); }});
}

}  // namespace monet::cli
