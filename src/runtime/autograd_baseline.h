// AutogradBaseline: "PyTorch" in every comparison. Runs a graph's training iteration
// with LibTorch autograd (forward through reference_forward, loss, backward), freeing
// each forward value as soon as nothing but autograd refers to it, as Python does.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "base/memory_tracker.h"
#include "graph/graph.h"
#include "runtime/model_state.h"

namespace monet {

struct IterationOptions {
  bool training = true;   // batch statistics and active dropout
  bool sgd_step = false;  // apply p -= learning_rate * grad after backward
  double learning_rate = 0.01;
  /// Sample memory after every operator, and in backward as each gradient is ready.
  bool record_trace = false;
  uint64_t iteration_seed = 0;  // seeds dropout (see reference_forward)
};

struct IterationResult {
  double loss = 0;
  /// Gradient of every parameter, in graph.parameters() order.
  std::vector<at::Tensor> gradients;
  int64_t start_bytes = 0;          // bytes live when the iteration began (weights, batch)
  int64_t peak_bytes = 0;           // peak bytes during the iteration (absolute, incl. start)
  double seconds = 0;               // wall time of forward + loss + backward (+ step)
  std::vector<MemorySample> trace;  // when record_trace
};

class AutogradBaseline {
 public:
  /// `state` must outlive the baseline; its parameters are marked as requiring grad.
  AutogradBaseline(const Graph& graph, ModelState& state);

  /// One training iteration. Previous gradients are dropped first (zero_grad with
  /// set_to_none), so the measured peak covers exactly one iteration.
  IterationResult run_iteration(const Batch& batch, const IterationOptions& options = {});

  /// Drops the parameter gradients of the last iteration (zero_grad with set_to_none),
  /// so that they do not count against whatever runs next.
  void release_gradients();

  /// Forward in training mode with autograd, up to the value `value_id` (for example the
  /// logits, for a loss of the caller's own), seeding dropout with `iteration_seed`.
  at::Tensor forward_to(const Batch& batch, int value_id, uint64_t iteration_seed);

  /// Forward only, without autograd, returning the value `value_id` (for example the
  /// logits). In training mode batch norm updates its running statistics, as PyTorch does.
  at::Tensor evaluate(const Batch& batch, int value_id, bool training);

 private:
  at::Tensor run_forward(const Batch& batch, bool training, int stop_at_value, bool record_trace,
                         uint64_t iteration_seed);

  const Graph& graph_;
  ModelState& state_;
  std::vector<int> order_;
  std::vector<int> last_use_;  // per value: position in order_ of its last consumer
  /// (buffer value id, its next value) of the iteration's generic calls that write a buffer
  /// (AtenCall::writes_buffer), written after the backward.
  std::vector<std::pair<int, at::Tensor>> buffer_writes_;
};

}  // namespace monet
