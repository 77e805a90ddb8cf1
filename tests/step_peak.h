// Whole-step peaks for the tests that hold the store-all plan to autograd's memory: one
// training step (forward, loss, backward, then torch::optim::Adam's step) under the
// store-all plan and under LibTorch autograd, from the same weights and batch.
#pragma once

#include <torch/optim/adam.h>

#include <functional>
#include <vector>

#include "base/memory_tracker.h"
#include "planner/baselines/baseline_plans.h"
#include "runtime/autograd_baseline.h"
#include "runtime/executor.h"

namespace monet::testing {

/// Bytes above those alive when the step began (the weights, the batch, Adam's state).
struct StepPeaks {
  int64_t store_all = 0;
  int64_t autograd = 0;
};

/// The peak of the second of two steps (the first makes Adam's state) of `iteration`,
/// which leaves the gradients in the parameters' .grad(), followed by Adam's step.
inline int64_t adam_step_peak(const Graph& g, ModelState& state,
                              const std::function<void()>& iteration) {
  std::vector<at::Tensor> params;
  for (int id : g.parameters()) params.push_back(state.tensor(id));
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-3));
  int64_t peak = 0;
  for (int step = 0; step < 2; ++step) {
    for (auto& p : params) p.mutable_grad() = at::Tensor();
    const int64_t before = MemoryTracker::current();
    MemoryTracker::reset_peak();
    iteration();
    adam.step();
    peak = MemoryTracker::peak() - before;
  }
  for (auto& p : params) p.mutable_grad() = at::Tensor();
  return peak;
}

/// Store-all's and autograd's whole-step peaks; the memory tracker must be installed.
inline StepPeaks store_all_and_autograd_step_peaks(const Graph& g, const ModelState& state,
                                                   const Batch& batch) {
  StepPeaks peaks;
  {
    ModelState s = state.clone();
    Executor executor(g, s, store_all_plan(g));
    ExecutionOptions o;
    o.gradients = GradientDestination::kParameters;
    peaks.store_all = adam_step_peak(g, s, [&] { executor.run(batch, o); });
  }
  {
    ModelState s = state.clone();
    AutogradBaseline autograd(g, s);
    peaks.autograd = adam_step_peak(g, s, [&] { autograd.run_iteration(batch); });
  }
  return peaks;
}

}  // namespace monet::testing
