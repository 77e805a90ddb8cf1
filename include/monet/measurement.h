// Measurements of a model's training iteration (forward, loss and backward) on this
// machine, with monet's tracking allocator: LibTorch autograd alone (`monet baseline`), a
// plan file interleaved with autograd (`monet run`) and a plan's gradients against
// autograd's (`monet verify`).
// Units: bytes (absolute: weights and batch included), seconds (wall time).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "monet/monet.h"
#include "monet/plan_file.h"

namespace monet {

struct MeasurementOptions {
  int warmup = 1;  // unmeasured iterations first
  int iters = 3;   // measured iterations
  /// Record the memory after every operator (autograd) or instruction (a plan) of the
  /// last iteration.
  bool record_last_trace = false;
  uint64_t batch_seed = 1;  // seeds the synthetic batch
  /// Called with one line after every iteration (progress), when set.
  std::function<void(const std::string&)> progress;
};

/// Iterations of a model under LibTorch autograd.
struct AutogradIterations {
  std::vector<double> seconds;  // each measured iteration's
  double median_seconds = 0;
  int64_t peak_bytes = 0;               // the highest over the measured iterations
  int64_t start_bytes = 0;              // live when an iteration began (weights, batch)
  double loss = 0;                      // the last iteration's
  std::vector<MemoryTracePoint> trace;  // record_last_trace
};
/// Runs options.warmup + options.iters iterations of `model` (its own weights, which keep
/// their values: no optimizer step) on one synthetic batch.
AutogradIterations measure_autograd_iterations(const Model& model,
                                               const MeasurementOptions& options);

/// `plan` against autograd, interleaved (autograd, plan, autograd, plan, ...) from the
/// plan's model's weights on one synthetic batch.
AutogradComparison compare_with_autograd(const PlanFile& plan, const MeasurementOptions& options);

/// One iteration of a plan against autograd's in `dtype`, from the same weights and batch.
struct GradientCheck {
  double loss = 0, autograd_loss = 0;
  int parameters = 0;        // gradients compared
  double max_abs_error = 0;  // over every entry of every parameter's gradient
  /// Over the parameters: max |plan - autograd| / max(max |autograd|, 1e-3 * the largest
  /// gradient entry of the model); infinite when the plan gave a parameter no gradient.
  double max_relative_error = 0;
  std::string worst_parameter;  // the one with the largest relative error
};
/// float64 by default: in float32 a different convolution algorithm or a recomputed batch
/// norm rounds differently, which can flip a max pooling's argmax between near-equal
/// values and move single gradient entries by O(1); in float64 a remaining difference is
/// an error of the plan.
GradientCheck verify_gradients(const PlanFile& plan, torch::Dtype dtype = torch::kFloat64);

}  // namespace monet
