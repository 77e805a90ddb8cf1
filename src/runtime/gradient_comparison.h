// compare_gradients: one training iteration under a plan against LibTorch autograd's,
// from the same weights and batch, in a chosen precision: the losses and every
// parameter's gradient error. `monet verify` and the tests use it.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/model_state.h"

namespace monet {

struct GradientComparison {
  double loss = 0;           // the plan's
  double autograd_loss = 0;  // autograd's
  /// Per parameter, in graph.parameters() order: max |plan - autograd| / max(max
  /// |autograd|, 1e-3 * the model's largest gradient entry). The floor keeps gradients
  /// that are zero mathematically (a batch-norm shift that a later batch norm cancels,
  /// holding rounding noise only) from dominating. -1 where the plan gave no gradient.
  std::vector<double> relative_errors;
  double max_abs_error = 0;       // over all parameters and entries
  double max_relative_error = 0;  // over relative_errors (infinite when one is missing)
  std::string worst_parameter;    // the parameter with the largest relative error
};

/// Runs one iteration of `plan` and of autograd, each from a
/// copy of `state` converted to `dtype`, on `batch` (floating tensors converted to
/// `dtype`), dropout seeded with `iteration_seed`, and compares them. Convolution
/// forwards with no kernel in `dtype` run as "default" (oneDNN has none in float64).
GradientComparison compare_gradients(const Graph& graph, const Plan& plan, const ModelState& state,
                                     const Batch& batch, at::ScalarType dtype,
                                     uint64_t iteration_seed = 0);

}  // namespace monet
