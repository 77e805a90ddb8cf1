#include "runtime/autograd_baseline.h"

#include <torch/torch.h>

#include "graph/aten_call.h"
#include "ops/reference_forward.h"
#include "runtime/iteration_meter.h"

namespace monet {

AutogradBaseline::AutogradBaseline(const Graph& graph, ModelState& state)
    : graph_(graph), state_(state), order_(graph.topological_order()) {
  last_use_.assign(graph.values().size(), -1);
  for (size_t pos = 0; pos < order_.size(); ++pos)
    for (int id : graph.node(order_[pos]).inputs) last_use_[id] = static_cast<int>(pos);
  for (int id : graph.parameters()) state_.tensor(id).requires_grad_(true);
}

at::Tensor AutogradBaseline::run_forward(const Batch& batch, bool training, int stop_at_value,
                                         bool record_trace, uint64_t iteration_seed) {
  buffer_writes_.clear();
  std::vector<at::Tensor> env(graph_.values().size());
  for (const auto& v : graph_.values())
    if (v.kind != ValueKind::kActivation) env[v.id] = fixed_tensor(graph_, state_, batch, v.id);
  std::vector<at::Tensor> inputs;
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    const Node& n = graph_.node(order_[pos]);
    inputs.clear();
    for (int id : n.inputs) inputs.push_back(env[id]);
    env[n.output] = reference_forward(n, inputs, training, iteration_seed);
    inputs.clear();
    // A buffer a call writes (AtenCall::writes_buffer) takes the value after the backward,
    // which may read the buffer (the graph here does not mark PyTorch's no_grad regions).
    if (n.op == OpKind::kAten && n.attrs.aten->writes_buffer && training && stop_at_value < 0)
      buffer_writes_.emplace_back(*n.attrs.aten->writes_buffer, env[n.output].detach());
    if (n.output == stop_at_value) return env[n.output];
    // Drop our reference to activations no later node reads; autograd keeps what it saved.
    for (int id : n.inputs)
      if (last_use_[id] == static_cast<int>(pos) && graph_.value(id).kind == ValueKind::kActivation)
        env[id].reset();
    if (record_trace) {
      MemoryTracker::mark(n.name);
      // A sample when autograd has computed this output's gradient, so the trace covers
      // the backward pass too (the hook keeps no tensor alive).
      if (env[n.output].requires_grad())
        env[n.output].register_hook(
            [name = n.name](const at::Tensor&) { MemoryTracker::mark("backward " + name); });
    }
  }
  return env[graph_.loss_value()];
}

void AutogradBaseline::release_gradients() {
  for (int id : graph_.parameters()) state_.tensor(id).mutable_grad() = at::Tensor();
}

IterationResult AutogradBaseline::run_iteration(const Batch& batch,
                                                const IterationOptions& options) {
  release_gradients();
  IterationResult result;
  IterationMeter meter(options.record_trace);
  {
    at::Tensor loss =
        run_forward(batch, options.training, -1, options.record_trace, options.iteration_seed);
    loss.backward();
    result.loss = loss.item<double>();
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& [buffer, next] : buffer_writes_) state_.tensor(buffer).copy_(next);
    buffer_writes_.clear();
  }
  if (options.record_trace) MemoryTracker::mark("backward");
  if (options.sgd_step) {
    torch::NoGradGuard no_grad;
    for (int id : graph_.parameters()) {
      auto& p = state_.tensor(id);
      p.add_(p.grad(), -options.learning_rate);
    }
  }
  IterationMeter::Reading reading = meter.finish();
  result.seconds = reading.seconds;
  result.start_bytes = reading.start_bytes;
  result.peak_bytes = reading.peak_bytes;
  result.trace = std::move(reading.trace);
  for (int id : graph_.parameters()) result.gradients.push_back(state_.tensor(id).grad());
  return result;
}

at::Tensor AutogradBaseline::forward_to(const Batch& batch, int value_id, uint64_t iteration_seed) {
  return run_forward(batch, /*training=*/true, value_id, false, iteration_seed);
}

at::Tensor AutogradBaseline::evaluate(const Batch& batch, int value_id, bool training) {
  torch::NoGradGuard no_grad;
  return run_forward(batch, training, value_id, false, 0);
}

}  // namespace monet
