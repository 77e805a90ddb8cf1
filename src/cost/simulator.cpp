#include "cost/simulator.h"

#include <algorithm>

#include "plan/liveness.h"
#include "plan/plan_validator.h"

namespace monet {
namespace {

// Storage-level accounting: tensors that are views of one another share a storage, and
// bytes are released when its last holder lets go, as in c10.
class StorageModel {
 public:
  explicit StorageModel(int64_t start) : current_(start), peak_(start) {}

  int allocate(int64_t bytes, bool gradient = false) {
    storages_.push_back({bytes, 0, gradient});
    current_ += bytes;
    peak_ = std::max(peak_, current_);
    if (gradient) {
      gradient_current_ += bytes;
      gradient_peak_ = std::max(gradient_peak_, gradient_current_);
    }
    return static_cast<int>(storages_.size()) - 1;
  }
  void hold(int s) { ++storages_.at(s).holders; }
  void release(int s) {
    if (--storages_.at(s).holders > 0) return;
    current_ -= storages_[s].bytes;
    if (storages_[s].gradient) gradient_current_ -= storages_[s].bytes;
  }
  int holders(int s) const { return storages_.at(s).holders; }
  void add_untracked(int64_t bytes) {
    current_ += bytes;
    peak_ = std::max(peak_, current_);
  }
  void touch(int64_t transient_peak) { peak_ = std::max(peak_, transient_peak); }
  int64_t current() const { return current_; }
  int64_t peak() const { return peak_; }
  void reset_peak() { peak_ = current_, gradient_peak_ = gradient_current_; }
  int64_t gradient_current() const { return gradient_current_; }
  int64_t gradient_peak() const { return gradient_peak_; }

 private:
  struct Storage {
    int64_t bytes;
    int holders;
    bool gradient;
  };
  std::vector<Storage> storages_;
  int64_t current_, peak_;
  int64_t gradient_current_ = 0, gradient_peak_ = 0;
};

}  // namespace

int64_t iteration_start_bytes(const Graph& g) {
  int64_t bytes = g.constant_bytes();
  for (const auto& v : g.values())
    if (v.kind != ValueKind::kActivation) bytes += v.bytes();
  return bytes;
}

namespace {

// One simulation of a plan: the storage model and which storage holds each program tensor
// and each parameter gradient, stepped one instruction at a time.
class PlanSimulation {
 public:
  PlanSimulation(const Graph& g, const Plan& plan, const CostModel& costs)
      : g_(g),
        costs_(costs),
        live_(analyze_liveness(g, plan)),
        ids_(live_.ids),
        needs_grad_(values_needing_grad(g)),
        loss_(g.loss_value()),
        start_bytes_(iteration_start_bytes(g)),
        mem_(start_bytes_),
        tensor_(ids_.count(), -1),
        param_grad_(g.values().size(), -1),
        computed_(g.nodes().size(), false) {
    result_.start_bytes = start_bytes_;
  }

  SimulationResult run(const Plan& plan) {
    for (size_t i = 0; i < plan.program.size(); ++i) step(plan.program[i], i);
    result_.peak_bytes = std::max(result_.peak_bytes, result_.start_bytes);
    result_.seconds =
        result_.forward_seconds + result_.recompute_seconds + result_.backward_seconds;
    return std::move(result_);
  }

 private:
  void drop(int& holder) {
    if (holder < 0) return;
    mem_.release(holder);
    holder = -1;
  }
  void assign(int& holder, int storage) {  // holder = storage (old one released after)
    mem_.hold(storage);
    const int old = holder;
    holder = storage;
    if (old >= 0) mem_.release(old);
  }

  void step(const Instruction& in, size_t i) {
    const Node& n = g_.node(in.node);
    mem_.reset_peak();
    const int64_t gradient_before = mem_.gradient_current();
    if (in.kind == InstrKind::kForward)
      forward(in, n);
    else if (in.kind == InstrKind::kBackward)
      backward(in, n);
    else
      drop(tensor_[in.slot == Slot::kOutput ? ids_.activation(n.output) : ids_.intermediate(n.id)]);
    for (int t : live_.free_after[i]) drop(tensor_[t]);
    for (int p : live_.update_after[i]) drop(param_grad_[p]);  // the optimizer's, fused
    for (int node : live_.state_free_after[i])
      mem_.add_untracked(-node_state_bytes(g_, g_.node(node)));
    result_.steps.push_back({mem_.peak(), mem_.current(), gradient_before,
                             std::max(mem_.gradient_peak(), gradient_before)});
    result_.peak_bytes = std::max(result_.peak_bytes, mem_.peak());
  }

  void forward(const Instruction& in, const Node& n) {
    const ForwardImplInfo f = find_forward_impl(forward_impls(g_, n), n, in.impl);
    const ImplCost& c = costs_.forward(g_, n.id, in.impl);
    (backward_started_ ? result_.recompute_seconds : result_.forward_seconds) += c.seconds;
    mem_.touch(mem_.current() + forward_result_bytes(g_, n, f, !computed_[n.id]) +
               c.workspace_bytes);
    if (!computed_[n.id]) mem_.add_untracked(node_state_bytes(g_, n));
    computed_[n.id] = true;
    const int input0 = n.inputs.empty() ? -1 : ids_.activation(n.inputs[0]);
    int out_storage = -1;
    if (f.inplace || f.output_aliases_input) {
      // A view of a parameter, a buffer or the batch aliases bytes counted in start_bytes:
      // it holds a storage of no bytes of its own.
      out_storage = input0 >= 0 && tensor_.at(input0) >= 0 ? tensor_.at(input0) : mem_.allocate(0);
    } else {
      out_storage = mem_.allocate(g_.value(n.output).bytes());
    }
    const int inter_storage =
        f.emits_intermediate ? mem_.allocate(intermediate_bytes(g_, n, f.name)) : -1;
    mem_.hold(out_storage);  // the returned output
    if (f.inplace) drop(tensor_[input0]);
    if (n.output == loss_) {
      const int one =
          mem_.allocate(static_cast<int64_t>(c10::elementSize(g_.value(loss_).dtype)), true);
      assign(tensor_[ids_.grad(loss_)], one);
    }
    assign(tensor_[ids_.activation(n.output)], out_storage);
    mem_.release(out_storage);
    if (inter_storage >= 0) assign(tensor_[ids_.intermediate(n.id)], inter_storage);
  }

  void backward(const Instruction& in, const Node& n) {
    backward_started_ = true;
    const BackwardImplInfo b = find_backward_impl(backward_impls(g_, n), n, in.part, in.impl);
    const ImplCost& c = costs_.backward(g_, n.id, in.part, in.impl);
    result_.backward_seconds += c.seconds;
    const auto mask = backward_grad_mask(g_, n, in.part, needs_grad_);
    // The gradients the call returns.
    std::vector<int> grads(n.inputs.size(), -1);
    mem_.touch(mem_.current() + backward_result_bytes(g_, n, b, mask) + c.workspace_bytes);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (!mask[k]) continue;
      grads[k] = b.grads_alias_output ? tensor_.at(ids_.grad(n.output))
                                      : mem_.allocate(g_.value(n.inputs[k]).bytes(), true);
      mem_.hold(grads[k]);
    }
    // Accumulation, as the executor does it: take the gradient, add in place when the
    // slot is exclusively ours, else add into a new tensor.
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (grads[k] < 0) continue;
      const int v = n.inputs[k];
      int& slot =
          g_.value(v).kind == ValueKind::kParameter ? param_grad_[v] : tensor_[ids_.grad(v)];
      if (slot < 0)
        assign(slot, grads[k]);
      else if (mem_.holders(slot) > 1)
        assign(slot, mem_.allocate(g_.value(v).bytes(), true));
    }
    for (int s : grads)
      if (s >= 0) mem_.release(s);
  }

  const Graph& g_;
  const CostModel& costs_;
  const Liveness live_;
  const TensorIds& ids_;
  const std::vector<bool> needs_grad_;
  const int loss_;
  const int64_t start_bytes_;
  StorageModel mem_;
  // Holders: the storage behind each program tensor and each parameter gradient (-1: none).
  std::vector<int> tensor_, param_grad_;
  std::vector<bool> computed_;
  bool backward_started_ = false;
  SimulationResult result_;
};

}  // namespace

SimulationResult simulate(const Graph& g, const Plan& plan, const CostModel& costs) {
  validate_plan(g, plan);
  return PlanSimulation(g, plan, costs).run(plan);
}

double SimulationResult::bytes_over(int64_t budget_bytes) const {
  double over = 0;
  for (const SimulatedStep& step : steps)
    over += static_cast<double>(std::max<int64_t>(0, step.peak_bytes - budget_bytes));
  return over;
}

}  // namespace monet
