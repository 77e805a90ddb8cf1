// InterleavedMeasurement: the measurement protocol for a plan against the autograd
// baseline — every iteration runs the baseline and then the plan, from the same weights
// and batch, so drifts of the machine (frequency, other load) hit both alike. Peaks are
// absolute bytes (weights and batch included); times are wall seconds per iteration.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/memory_tracker.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/model_state.h"

namespace monet {

struct InterleavedOptions {
  int warmup = 1;                  // unmeasured iterations (each: baseline, then plan)
  int iters = 3;                   // measured iterations
  bool record_last_trace = false;  // the plan's memory after every instruction, last iteration
  /// Called after every iteration with a one-line description (progress), when set.
  std::function<void(const std::string&)> progress;
};

struct InterleavedMeasurement {
  int64_t peak_bytes = 0;           // the plan's highest peak over the measured iterations
  int64_t baseline_peak_bytes = 0;  // the baseline's
  std::vector<double> seconds, baseline_seconds;  // per measured iteration
  double median_seconds = 0, baseline_median_seconds = 0;
  double memory_ratio = 0;          // peak_bytes / baseline_peak_bytes
  double overhead = 0;              // median_seconds / baseline_median_seconds - 1
  std::vector<MemorySample> trace;  // when record_last_trace
};

/// Median of a non-empty list of seconds.
double median(std::vector<double> values);

/// Runs `plan` and the autograd baseline interleaved. `state` holds the initial weights;
/// the memory tracker must be installed.
InterleavedMeasurement measure_interleaved(const Graph& graph, ModelState& state, const Plan& plan,
                                           const Batch& batch, const InterleavedOptions& options);

}  // namespace monet
