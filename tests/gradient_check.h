// max_gradient_error: the executor's gradients under a plan against the autograd
// baseline's, from the same weights and batch (the library's compare_gradients);
// expect_runs_as_simulated: that, and the measured peak against the simulator's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cost/simulator.h"
#include "runtime/autograd_baseline.h"
#include "runtime/executor.h"
#include "runtime/gradient_comparison.h"

namespace monet::testing {

// max |a - b| / max |b|, where max |b| is floored at `floor`: some gradients are zero
// mathematically (a batch-norm shift that a later batch norm cancels) and hold only
// rounding noise, which no relative measure of their own can compare.
inline double relative_error(const at::Tensor& a, const at::Tensor& b, double floor) {
  const double scale = std::max(b.abs().max().item<double>(), floor);
  return (a - b).abs().max().item<double>() / scale;
}

inline void convert(ModelState& state, const Graph& g, at::ScalarType dtype) {
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      state.tensor(v.id) = state.tensor(v.id).to(dtype);
}

// `plan` with convolution forwards that cannot be compared in `dtype` at "default": in
// float64, oneDNN has no convolution ("mkldnn" falls back to "default"); in float32,
// convolution forward algorithms differ from autograd's by rounding, which can flip a
// max-pooling argmax between two near-equal values and move a gradient entry by O(1): a
// discontinuity of max, not an error. The algorithms are checked in float64 here and
// against the reference forward in OpKernels tests.
inline Plan comparable_plan(const Graph& g, Plan plan, at::ScalarType dtype) {
  for (auto& in : plan.program) {
    const Node& n = g.node(in.node);
    if (in.kind != InstrKind::kForward || n.op != OpKind::kConv) continue;
    // Gist encodings stay: their backward reads what they keep (their output is default's).
    if (find_forward_impl(forward_impls(g, n), n, in.impl).emits_intermediate) continue;
    if (dtype == at::kFloat || in.impl == "mkldnn") in.impl = "default";
  }
  return plan;
}

constexpr uint64_t kComparisonSeed = 7;  // dropout's seed in gradient comparisons

// Per parameter, how far LibTorch autograd's own gradients move (measured as
// compare_gradients measures an error) when its input moves by one unit in the last place
// of `dtype`: rounding alone, PyTorch against itself. A gradient that is zero
// mathematically (a batch-norm shift that a later batch norm cancels) holds only rounding,
// and moves by as much as it is.
inline std::vector<double> autograd_rounding(const Graph& g, at::ScalarType dtype) {
  const Batch batch = make_batch(g, 1);
  std::vector<std::vector<at::Tensor>> runs;
  for (double nudge : {0.0, 1.0}) {
    ModelState state = ModelState::initialize(g, 0);
    convert(state, g, dtype);
    Batch b = batch;
    for (auto& [id, t] : b)
      if (t.is_floating_point()) t = t.to(dtype);
    const int input = g.values_of_kind(ValueKind::kInput).at(0);
    if (b.at(input).is_floating_point())
      b[input] = b.at(input) *
                 (1 + nudge * (dtype == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon()));
    IterationOptions io;
    io.iteration_seed = kComparisonSeed;
    runs.push_back(AutogradBaseline(g, state).run_iteration(b, io).gradients);
  }
  double largest = 0;
  for (const at::Tensor& t : runs[0])
    if (t.defined()) largest = std::max(largest, t.abs().max().item<double>());
  std::vector<double> out;
  for (size_t i = 0; i < runs[0].size(); ++i) {
    const at::Tensor &a = runs[0][i], &b = runs[1][i];
    out.push_back(!a.defined()
                      ? 0
                      : (a - b).abs().max().item<double>() /
                            std::max({a.abs().max().item<double>(), 1e-3 * largest, 1e-300}));
  }
  return out;
}

// Largest relative error over all parameters between the executor under `plan` and the
// autograd baseline (compare_gradients), both from the same weights and batch, computed
// in `dtype`; expects each parameter's within `tolerance`, or in float32 within ten times
// what rounding alone moves autograd's gradient by (autograd_rounding) where that is more.
inline double max_gradient_error(const Graph& g, const Plan& plan,
                                 at::ScalarType dtype = at::kDouble, double tolerance = 1e-9) {
  const GradientComparison c =
      compare_gradients(g, comparable_plan(g, plan, dtype), ModelState::initialize(g, 0),
                        make_batch(g, 1), dtype, kComparisonSeed);
  EXPECT_NEAR(c.loss, c.autograd_loss, tolerance * std::abs(c.autograd_loss));
  const auto params = g.parameters();
  std::vector<double> rounding(params.size(), 0);
  if (dtype == at::kFloat) rounding = autograd_rounding(g, dtype);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_GE(c.relative_errors[i], 0) << "no gradient for " << g.value(params[i]).name;
    EXPECT_LE(c.relative_errors[i], std::max(tolerance, 10 * rounding[i]))
        << g.value(params[i]).name << " (autograd against itself: " << rounding[i] << ")";
  }
  return c.max_relative_error;
}

/// Runs `plan` once from `state` on `batch` and expects its measured peak above the
/// iteration start to be `simulated`'s (bytes), and its gradients to match autograd's.
inline void expect_runs_as_simulated(const Graph& g, const ModelState& state, const Batch& batch,
                                     const Plan& plan, const SimulationResult& simulated) {
  ModelState s = state.clone();
  Executor executor(g, s, plan);
  const ExecutionResult run = executor.run(batch);
  EXPECT_EQ(run.peak_bytes - run.start_bytes, simulated.peak_above_start()) << plan.planner;
  EXPECT_LT(max_gradient_error(g, plan), 1e-9) << plan.planner;
}

}  // namespace monet::testing
