// Executor: runs any valid Plan for one training iteration with real tensors and no
// autograd, freeing every tensor right after the last instruction that reads it (the
// plan's liveness), and measures what it did.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/memory_tracker.h"
#include "runtime/model_state.h"

namespace monet {

/// Where the executor puts parameter gradients.
enum class GradientDestination {
  kResult,      // ExecutionResult::gradients (the parameters are left untouched)
  kParameters,  // each parameter tensor's .grad(), accumulated in place as autograd does
};

struct ExecutionOptions {
  bool record_trace = false;    // sample memory after every instruction
  uint64_t iteration_seed = 0;  // seeds dropout (same meaning as IterationOptions)
  GradientDestination gradients = GradientDestination::kResult;
};

struct ExecutionResult {
  double loss = 0;
  /// Per parameter, in graph.parameters() order (empty with GradientDestination::kParameters).
  std::vector<at::Tensor> gradients;
  int64_t start_bytes = 0;            // bytes live when the iteration began
  int64_t peak_bytes = 0;             // absolute peak during the iteration
  double seconds = 0;
  std::vector<MemorySample> trace;  // one sample per instruction (label = instruction)
};

class Executor {
 public:
  /// `state` must outlive the executor. The plan is checked against the graph's
  /// fingerprint and analysed once.
  Executor(const Graph& graph, ModelState& state, Plan plan);

  /// One training iteration (forward, loss, backward) as the plan says. Gradients of the
  /// previous iteration are released first. Throws PlanError if the plan reads a tensor
  /// that is not alive.
  ExecutionResult run(const Batch& batch, const ExecutionOptions& options = {});

  const Plan& plan() const { return plan_; }

 private:
  const Graph& graph_;
  ModelState& state_;
  Plan plan_;
  std::vector<bool> needs_grad_;
  std::vector<std::vector<int>> free_after_;
  // Per instruction: its resolved implementation (forward or backward instructions).
  std::vector<ForwardImplInfo> forward_;
  std::vector<BackwardImplInfo> backward_;
};

}  // namespace monet
