// The measurements of monet/measurement.h over the runtime's autograd baseline,
// interleaved measurement and gradient comparison.
#include <monet/measurement.h>

#include <algorithm>
#include <sstream>

#include "api/impl_access.h"
#include "api/model_impl.h"
#include "api/plan_file_impl.h"
#include "api/planned_model_impl.h"
#include "base/byte_format.h"
#include "runtime/autograd_baseline.h"
#include "runtime/gradient_comparison.h"
#include "runtime/interleaved_measurement.h"

namespace monet {
namespace {

std::vector<MemoryTracePoint> trace_points(const std::vector<MemorySample>& trace) {
  std::vector<MemoryTracePoint> out;
  out.reserve(trace.size());
  for (const MemorySample& s : trace) out.push_back({s.label, s.current_bytes, s.peak_bytes});
  return out;
}

AutogradComparison comparison_of(const InterleavedMeasurement& r) {
  AutogradComparison c;
  c.peak_bytes = r.peak_bytes;
  c.autograd_peak_bytes = r.baseline_peak_bytes;
  c.seconds = r.median_seconds;
  c.autograd_seconds = r.baseline_median_seconds;
  c.overhead = r.overhead;
  c.memory_ratio = r.memory_ratio;
  c.iteration_seconds = r.seconds;
  c.autograd_iteration_seconds = r.baseline_seconds;
  c.trace = trace_points(r.trace);
  return c;
}

}  // namespace

AutogradIterations measure_autograd_iterations(const Model& model,
                                               const MeasurementOptions& options) {
  MemoryTracker::install();
  Model::Impl& m = *impl_of(model);
  const Batch batch = make_batch(m.graph, options.batch_seed);
  AutogradBaseline baseline(m.graph, m.state);
  AutogradIterations out;
  const int total = options.warmup + options.iters;
  for (int i = 0; i < total; ++i) {
    const bool measured = i >= options.warmup;
    IterationOptions io;
    io.record_trace = options.record_last_trace && i + 1 == total;
    const IterationResult r = baseline.run_iteration(batch, io);
    if (options.progress) {
      std::ostringstream line;
      line << (measured ? "iteration " : "warm-up ") << (measured ? i - options.warmup + 1 : i + 1)
           << "/" << (measured ? options.iters : options.warmup) << ": " << r.seconds << " s, peak "
           << format_bytes(r.peak_bytes);
      options.progress(line.str());
    }
    if (io.record_trace) out.trace = trace_points(r.trace);
    if (!measured) continue;
    out.seconds.push_back(r.seconds);
    out.peak_bytes = std::max(out.peak_bytes, r.peak_bytes);
    out.start_bytes = r.start_bytes;
    out.loss = r.loss;
  }
  baseline.release_gradients();
  if (!out.seconds.empty()) out.median_seconds = median(out.seconds);
  return out;
}

AutogradComparison compare_with_autograd(PlannedModel& planned, int iters) {
  Model::Impl& m = *impl_of(planned.model());
  MemoryTracker::install();
  ModelState copy = m.state.clone();
  // The batch in the state's floating type (a state converted after the model was built).
  const auto params = m.graph.parameters();
  const at::ScalarType dtype =
      params.empty() ? m.graph.floating_dtype() : copy.tensor(params[0]).scalar_type();
  Batch batch = make_batch(m.graph, 1);
  for (auto& [id, t] : batch)
    if (t.is_floating_point()) t = t.to(dtype);
  InterleavedOptions io;
  io.iters = std::max(1, iters);
  return comparison_of(measure_interleaved(m.graph, copy, impl_of(planned).plan, batch, io));
}

AutogradComparison compare_with_autograd(const PlanFile& plan, const MeasurementOptions& options) {
  MemoryTracker::install();
  const PlanFile::Impl& p = impl_of(plan);
  ModelState state = initial_weights(p);
  const Batch batch = make_batch(p.graph, options.batch_seed);
  InterleavedOptions io;
  io.warmup = options.warmup;
  io.iters = options.iters;
  io.record_last_trace = options.record_last_trace;
  io.progress = options.progress;
  return comparison_of(measure_interleaved(p.graph, state, p.plan, batch, io));
}

GradientCheck verify_gradients(const PlanFile& plan, torch::Dtype dtype) {
  if (dtype != torch::kFloat32 && dtype != torch::kFloat64)
    throw std::invalid_argument("verify_gradients runs in float32 or float64");
  const PlanFile::Impl& p = impl_of(plan);
  const GradientComparison c =
      compare_gradients(p.graph, p.plan, initial_weights(p), make_batch(p.graph, 1), dtype);
  GradientCheck out;
  out.loss = c.loss;
  out.autograd_loss = c.autograd_loss;
  out.parameters = static_cast<int>(c.relative_errors.size());
  out.max_abs_error = c.max_abs_error;
  out.max_relative_error = c.max_relative_error;
  out.worst_parameter = c.worst_parameter;
  return out;
}

}  // namespace monet
