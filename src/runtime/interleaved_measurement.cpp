#include "runtime/interleaved_measurement.h"

#include <algorithm>
#include <sstream>

#include "runtime/autograd_baseline.h"
#include "runtime/executor.h"

namespace monet {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

InterleavedMeasurement measure_interleaved(const Graph& g, ModelState& state, const Plan& plan,
                                           const Batch& batch, const InterleavedOptions& o) {
  AutogradBaseline baseline(g, state);
  Executor executor(g, state, plan);
  InterleavedMeasurement m;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    const bool measured = i >= o.warmup;
    const bool last = i + 1 == o.warmup + o.iters;
    // Each side's gradients are released before the other runs, so neither is charged
    // for the other's results.
    IterationResult b = baseline.run_iteration(batch);
    b.gradients.clear();
    baseline.release_gradients();
    ExecutionOptions eo;
    eo.record_trace = last && o.record_last_trace;
    // Fused updates: each gradient freed where the plan updates its parameter; the
    // optimizer's arithmetic is left out here as it is on autograd's side.
    if (g.update_mode() == UpdateMode::kFused) eo.update_parameter = [](int, const at::Tensor&) {};
    ExecutionResult p = executor.run(batch, eo);
    p.gradients.clear();
    if (o.progress) {
      std::ostringstream line;
      line << (measured ? "iteration " : "warm-up ") << (measured ? i - o.warmup + 1 : i + 1)
           << ": baseline " << b.seconds << " s " << b.peak_bytes / 1048576.0 << " MiB, plan "
           << p.seconds << " s " << p.peak_bytes / 1048576.0 << " MiB";
      o.progress(line.str());
    }
    if (eo.record_trace) m.trace = std::move(p.trace);
    if (!measured) continue;
    m.baseline_seconds.push_back(b.seconds);
    m.seconds.push_back(p.seconds);
    m.baseline_peak_bytes = std::max(m.baseline_peak_bytes, b.peak_bytes);
    m.peak_bytes = std::max(m.peak_bytes, p.peak_bytes);
  }
  m.median_seconds = median(m.seconds);
  m.baseline_median_seconds = median(m.baseline_seconds);
  m.memory_ratio = double(m.peak_bytes) / double(m.baseline_peak_bytes);
  m.overhead = m.median_seconds / m.baseline_median_seconds - 1.0;
  return m;
}

}  // namespace monet
