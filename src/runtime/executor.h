// Executor: runs any valid Plan for one training iteration with real tensors and no
// autograd, freeing every tensor right after the last instruction that reads it (the
// plan's liveness), and measures what it did.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

#include "base/memory_tracker.h"
#include "graph/graph.h"
#include "plan/liveness.h"
#include "plan/plan.h"
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
  /// Called with a parameter's value id as soon as its gradient for this iteration is
  /// complete (right after the last backward instruction that adds to it), e.g. to start
  /// communicating it while the rest of the backward runs. Parameters the plan gives no
  /// gradient are not reported.
  std::function<void(int parameter)> on_parameter_gradient;
  /// For a graph with UpdateMode::kFused: called with a parameter's value id and its
  /// complete gradient where the plan updates it (ParameterEvents::update_after), after
  /// on_parameter_gradient; the executor then frees the gradient (.grad() is left
  /// undefined). Unset: the gradients are kept as in UpdateMode::kAfterBackward (the
  /// plan's memory model then does not hold).
  std::function<void(int parameter, const at::Tensor& gradient)> update_parameter;
};

struct ExecutionResult {
  double loss = 0;
  /// Per parameter, in graph.parameters() order (empty with GradientDestination::kParameters).
  std::vector<at::Tensor> gradients;
  int64_t start_bytes = 0;  // bytes live when the iteration began
  int64_t peak_bytes = 0;   // absolute peak during the iteration
  double seconds = 0;
  std::vector<MemorySample> trace;  // one sample per instruction (label = instruction)
};

class Executor;

/// An iteration whose loss is computed outside the plan, between its two halves: made by
/// Executor::start (the plan has run up to the loss node), ended by finish() with the
/// gradient of the loss node's input. Holds the iteration's tensors meanwhile; the
/// executor must outlive it.
class PendingIteration {
 public:
  ~PendingIteration();
  /// The loss node's input (the model's output, e.g. logits), as the plan computed it,
  /// handed to the caller: the iteration keeps it only where the plan reads it after the
  /// loss node's forward (else the caller's loss frees it when done with it, as the plan's
  /// memory model frees it after that forward). Call once, before finish().
  at::Tensor take_output();
  /// Runs the rest of the plan (the planned backward) from `grad_output`, d loss / d
  /// output(), in place of the built-in loss's backward. Call once, after take_output(). Pass the
  /// caller's last reference (std::move): the plan then frees the gradient where its
  /// memory model does, not when the caller drops it.
  ExecutionResult finish(at::Tensor grad_output);

 private:
  friend class Executor;
  struct State;
  PendingIteration(const Executor& executor, std::unique_ptr<State> state);
  const Executor& executor_;
  std::unique_ptr<State> state_;
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

  /// The first half of an iteration for a loss of the caller's own: runs the plan up to
  /// the forward of the graph's loss node (which is not run). The plan's memory model
  /// holds: the loss node's input stays alive until its backward, and the gradient the
  /// caller passes to finish() takes the place of the loss backward's output.
  std::unique_ptr<PendingIteration> start(const Batch& batch,
                                          const ExecutionOptions& options = {}) const;

  const Plan& plan() const { return plan_; }
  /// The parameters (value ids) in the order the plan completes their gradients; those
  /// it gives no gradient are left out.
  std::vector<int> gradient_order() const;

 private:
  friend class PendingIteration;
  /// Runs instructions [begin, end) of the program on `state`; the loss node's forward and
  /// backward are skipped when the state's loss is external.
  void execute(PendingIteration::State& state, size_t begin, size_t end) const;
  ExecutionResult finish(PendingIteration::State& state) const;
  /// Hands `parameter`'s gradient to ExecutionOptions::update_parameter and frees it.
  void update_parameter(PendingIteration::State& state, int parameter) const;
  /// The tensor of value `v` that instruction `in` reads: the activation alive in `state`,
  /// or a parameter's, buffer's or the batch's. Throws PlanError when it is not alive.
  at::Tensor read(const PendingIteration::State& state, int v, const Instruction& in) const;
  /// Runs forward instruction i (a first forward or a recomputation) on `state`.
  void run_forward_instruction(PendingIteration::State& state, size_t i) const;
  /// Runs backward instruction i on `state` and accumulates the gradients it returns.
  void run_backward_instruction(PendingIteration::State& state, size_t i) const;

  const Graph& graph_;
  ModelState& state_;
  Plan plan_;
  TensorIds ids_;  // of the program's tensors (PendingIteration::State::tensors)
  std::vector<bool> needs_grad_;
  std::vector<std::vector<int>> free_after_;
  std::vector<std::vector<int>> state_free_after_;  // Liveness::state_free_after
  // Per instruction: the parameters whose gradient is complete after it, and those the
  // optimizer updates after it (UpdateMode::kFused).
  std::vector<std::vector<int>> gradients_final_after_, updates_after_;
  // Per instruction: its resolved implementation (forward or backward instructions).
  std::vector<ForwardImplInfo> forward_;
  std::vector<BackwardImplInfo> backward_;
  size_t loss_forward_ = 0;  // program index of the loss node's forward instruction
  int output_ = -1;          // value id of the loss node's input (the model's output)
};

}  // namespace monet
