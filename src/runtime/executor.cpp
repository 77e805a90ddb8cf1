#include "runtime/executor.h"

#include <torch/torch.h>

#include "graph/aten_call.h"
#include "ops/op_kernels.h"
#include "plan/liveness.h"
#include "plan/plan_validator.h"
#include "runtime/iteration_meter.h"

namespace monet {
namespace {

// True when no other tensor references `t`'s memory. A view keeps its base alive (even
// without autograd), so a view whose base is referenced by nothing but the view — the
// other slices of a cat gradient already freed — is exclusive too.
bool exclusively_owned(const at::Tensor& t) {
  if (t.use_count() != 1) return false;
  const auto storage_users = t.storage().use_count();
  if (!t.is_view()) return storage_users == 1;
  return t._base().use_count() == 1 && storage_users == 2;
}

// Adds `g` into `slot`; in place when the slot's memory is exclusively ours (as
// autograd's input buffer does, and also for views whose siblings are dead).
void accumulate(at::Tensor& slot, const at::Tensor& g) {
  if (!slot.defined()) {
    slot = g;
  } else if (exclusively_owned(slot)) {
    slot.add_(g);
  } else {
    slot = slot + g;
  }
}

// Adds `g` to the parameter's .grad() as autograd's AccumulateGrad does: the first
// gradient becomes .grad(), later ones are added to it in place.
void accumulate_into_grad(at::Tensor& parameter, at::Tensor g) {
  if (!parameter.grad().defined())
    parameter.mutable_grad() = std::move(g);
  else
    parameter.mutable_grad().add_(g);
}

}  // namespace

Executor::Executor(const Graph& graph, ModelState& state, Plan plan)
    : graph_(graph), state_(state), plan_(std::move(plan)) {
  if (plan_.graph_fingerprint != graph_.fingerprint())
    throw PlanError("the plan was made for another graph (fingerprint " + plan_.graph_fingerprint +
                    ", this one has " + graph_.fingerprint() + ")");
  validate_plan(graph_, plan_);
  ids_ = TensorIds::of(graph_);
  needs_grad_ = values_needing_grad(graph_);
  Liveness live = analyze_liveness(graph_, plan_);
  free_after_ = std::move(live.free_after);
  state_free_after_ = std::move(live.state_free_after);
  ParameterEvents events = parameter_events(graph_, plan_, needs_grad_);
  gradients_final_after_ = std::move(events.gradient_final_after);
  updates_after_ = std::move(events.update_after);
  // Resolve implementations once, not on every iteration.
  forward_.resize(plan_.program.size());
  backward_.resize(plan_.program.size());
  for (size_t i = 0; i < plan_.program.size(); ++i) {
    const Instruction& in = plan_.program[i];
    const Node& n = graph_.node(in.node);
    if (in.kind == InstrKind::kForward)
      forward_[i] = find_forward_impl(forward_impls(graph_, n), n, in.impl);
    else if (in.kind == InstrKind::kBackward)
      backward_[i] = find_backward_impl(backward_impls(graph_, n), n, in.part, in.impl);
  }
  const int loss_node = graph_.value(graph_.loss_value()).producer;
  output_ = graph_.node(loss_node).inputs[0];
  loss_forward_ = plan_.program.size();
  for (size_t i = 0; i < plan_.program.size() && loss_forward_ == plan_.program.size(); ++i)
    if (plan_.program[i].node == loss_node && plan_.program[i].kind == InstrKind::kForward)
      loss_forward_ = i;
}

std::vector<int> Executor::gradient_order() const {
  std::vector<int> order;
  for (const auto& ps : gradients_final_after_) order.insert(order.end(), ps.begin(), ps.end());
  return order;
}

struct PendingIteration::State {
  State(const Graph& g, const Batch& b, const ExecutionOptions& o, bool external)
      : batch(b), options(o), external_loss(external), meter(o.record_trace) {
    const TensorIds ids = TensorIds::of(g);
    tensors.resize(ids.count());
    param_grads.resize(g.values().size());
    node_state.resize(g.nodes().size());
    for (const auto& n : g.nodes()) node_state[n.id].seed = node_seed(o.iteration_seed, n);
  }
  Batch batch;
  ExecutionOptions options;
  bool external_loss;    // the loss node is the caller's: its forward and backward skipped
  IterationMeter meter;  // opened before the first instruction
  std::vector<at::Tensor> tensors;      // by TensorIds
  std::vector<NodeState> node_state;    // per node (dropout seeds, ...)
  std::vector<at::Tensor> param_grads;  // by value id, GradientDestination::kResult
  double loss = 0;
  bool finished = false;
  bool output_taken = false;  // PendingIteration::take_output ran the loss node's frees
  at::ScalarType output_type = at::kFloat;  // the output's, as computed (the gradient's)
};

ExecutionResult Executor::run(const Batch& batch, const ExecutionOptions& options) {
  PendingIteration::State state(graph_, batch, options, /*external=*/false);
  execute(state, 0, plan_.program.size());
  return finish(state);
}

std::unique_ptr<PendingIteration> Executor::start(const Batch& batch,
                                                  const ExecutionOptions& options) const {
  auto state = std::make_unique<PendingIteration::State>(graph_, batch, options, true);
  execute(*state, 0, loss_forward_);
  return std::unique_ptr<PendingIteration>(new PendingIteration(*this, std::move(state)));
}

PendingIteration::PendingIteration(const Executor& executor, std::unique_ptr<State> state)
    : executor_(executor), state_(std::move(state)) {}
PendingIteration::~PendingIteration() = default;

at::Tensor PendingIteration::take_output() {
  if (state_->output_taken) throw std::logic_error("PendingIteration::take_output called twice");
  at::Tensor out = state_->tensors[executor_.ids_.activation(executor_.output_)];
  state_->output_type = out.scalar_type();
  // The loss node's forward (the caller's: skipped), and the plan's frees after it.
  executor_.execute(*state_, executor_.loss_forward_, executor_.loss_forward_ + 1);
  state_->output_taken = true;
  return out;
}

ExecutionResult PendingIteration::finish(at::Tensor grad_output) {
  if (state_->finished) throw std::logic_error("PendingIteration::finish called twice");
  if (!state_->output_taken)
    throw std::logic_error("PendingIteration::finish called before take_output");
  const TensorIds& ids = executor_.ids_;
  const std::vector<int64_t>& shape = executor_.graph_.value(executor_.output_).shape;
  if (!grad_output.defined() || grad_output.sizes() != at::IntArrayRef(shape))
    throw std::invalid_argument("the output's gradient must have the output's shape");
  state_->tensors[ids.grad(executor_.output_)] = grad_output.to(state_->output_type).contiguous();
  grad_output.reset();  // a copy (another dtype or layout) leaves the caller's at once
  executor_.execute(*state_, executor_.loss_forward_ + 1, executor_.plan_.program.size());
  return executor_.finish(*state_);
}

ExecutionResult Executor::finish(PendingIteration::State& state) const {
  state.finished = true;
  {  // buffers a generic call writes take their next values (AtenCall::writes_buffer)
    torch::NoGradGuard no_grad;
    for (const Node& n : graph_.nodes()) {
      at::Tensor& next = state.node_state[n.id].buffer_write;
      if (!next.defined()) continue;
      state_.tensor(*n.attrs.aten->writes_buffer).copy_(next);
      next.reset();
    }
  }
  state.tensors.clear();
  state.tensors.shrink_to_fit();
  ExecutionResult result;
  result.loss = state.loss;
  IterationMeter::Reading reading = state.meter.finish();
  result.seconds = reading.seconds;
  result.start_bytes = reading.start_bytes;
  result.peak_bytes = reading.peak_bytes;
  result.trace = std::move(reading.trace);
  if (state.options.gradients == GradientDestination::kResult)
    for (int id : graph_.parameters()) result.gradients.push_back(std::move(state.param_grads[id]));
  return result;
}

void Executor::update_parameter(PendingIteration::State& state, int parameter) const {
  at::Tensor& grad = state.options.gradients == GradientDestination::kParameters
                         ? state_.tensor(parameter).mutable_grad()
                         : state.param_grads[parameter];
  state.options.update_parameter(parameter, grad);
  grad.reset();
}

at::Tensor Executor::read(const PendingIteration::State& state, int v,
                          const Instruction& in) const {
  if (graph_.value(v).kind != ValueKind::kActivation)
    return fixed_tensor(graph_, state_, state.batch, v);
  const at::Tensor& t = state.tensors[ids_.activation(v)];
  if (!t.defined())
    throw PlanError(describe(graph_, in) + " reads '" + graph_.value(v).name +
                    "', which is not alive");
  return t;
}

void Executor::run_forward_instruction(PendingIteration::State& state, size_t i) const {
  const Instruction& in = plan_.program[i];
  const Node& n = graph_.node(in.node);
  std::vector<at::Tensor>& tensors = state.tensors;
  const int loss = graph_.loss_value();
  const ForwardImplInfo& impl = forward_[i];
  std::vector<at::Tensor> inputs;
  for (int v : n.inputs) inputs.push_back(read(state, v, in));
  ForwardOutput out = run_forward(graph_, n, impl, inputs, state.node_state[n.id], true);
  inputs.clear();
  if (impl.inplace) tensors[ids_.activation(n.inputs[0])].reset();
  if (n.output == loss) {
    state.loss = out.output.item<double>();
    tensors[ids_.grad(loss)] = at::ones({}, out.output.options());  // d loss / d loss
  }
  tensors[ids_.activation(n.output)] = std::move(out.output);
  if (impl.emits_intermediate) tensors[ids_.intermediate(n.id)] = std::move(out.intermediate);
}

void Executor::run_backward_instruction(PendingIteration::State& state, size_t i) const {
  const Instruction& in = plan_.program[i];
  const Node& n = graph_.node(in.node);
  std::vector<at::Tensor>& tensors = state.tensors;
  const BackwardImplInfo& impl = backward_[i];
  BackwardArgs args;
  args.grad_output = tensors[ids_.grad(n.output)];
  if (!args.grad_output.defined())
    throw PlanError(describe(graph_, in) + " runs before the gradient of its output exists");
  args.inputs.resize(n.inputs.size());
  args.needs_grad = backward_grad_mask(graph_, n, in.part, needs_grad_);
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Value& v = graph_.value(n.inputs[k]);
    if (v.kind != ValueKind::kActivation) args.inputs[k] = read(state, v.id, in);
  }
  for (int k : impl.reads_inputs) args.inputs[k] = read(state, n.inputs[k], in);
  if (impl.reads_output) args.output = read(state, n.output, in);
  if (impl.reads_intermediate) {
    args.intermediate = tensors[ids_.intermediate(n.id)];
    if (!args.intermediate.defined())
      throw PlanError(describe(graph_, in) + " reads the intermediate of '" + n.name +
                      "', which is not alive");
  }
  std::vector<at::Tensor> grads = run_backward(graph_, n, impl, args, state.node_state[n.id]);
  args = BackwardArgs();
  const bool into_parameters = state.options.gradients == GradientDestination::kParameters;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (!grads[k].defined()) continue;
    const int v = n.inputs[k];
    if (graph_.value(v).kind == ValueKind::kParameter && into_parameters)
      accumulate_into_grad(state_.tensor(v), grads[k]);
    else if (graph_.value(v).kind == ValueKind::kParameter)
      accumulate(state.param_grads[v], grads[k]);
    else
      accumulate(tensors[ids_.grad(v)], grads[k]);
  }
}

void Executor::execute(PendingIteration::State& state, size_t begin, size_t end) const {
  torch::NoGradGuard no_grad;  // the plan is the backward: no autograd graph
  std::vector<at::Tensor>& tensors = state.tensors;
  const int loss_node = graph_.value(graph_.loss_value()).producer;
  for (size_t i = begin; i < end; ++i) {
    const Instruction& in = plan_.program[i];
    const Node& n = graph_.node(in.node);
    if (state.external_loss && n.id == loss_node && in.kind != InstrKind::kFree) {
      // The caller's loss: its value and gradient come from outside the plan.
    } else if (in.kind == InstrKind::kForward) {
      run_forward_instruction(state, i);
    } else if (in.kind == InstrKind::kBackward) {
      run_backward_instruction(state, i);
    } else {
      tensors[in.slot == Slot::kOutput ? ids_.activation(n.output) : ids_.intermediate(n.id)]
          .reset();
    }
    for (int t : free_after_[i]) tensors[t].reset();
    for (int node : state_free_after_[i]) {  // as autograd frees a node's saved tensors
      state.node_state[node].save_mean.reset();
      state.node_state[node].save_invstd.reset();
    }
    if (state.options.on_parameter_gradient)
      for (int p : gradients_final_after_[i]) state.options.on_parameter_gradient(p);
    if (state.options.update_parameter)
      for (int p : updates_after_[i]) update_parameter(state, p);
    if (state.options.record_trace) MemoryTracker::mark(describe(graph_, in));
  }
}

}  // namespace monet
