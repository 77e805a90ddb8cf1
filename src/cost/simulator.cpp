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

SimulationResult simulate(const Graph& g, const Plan& plan, const CostModel& costs) {
  validate_plan(g, plan);
  const Liveness live = analyze_liveness(g, plan);
  const TensorIds& ids = live.ids;
  const auto needs_grad = values_needing_grad(g);
  const int loss = g.loss_value();
  SimulationResult result;
  result.start_bytes = iteration_start_bytes(g);
  StorageModel mem(result.start_bytes);
  // Holders: the storage behind each program tensor and each parameter gradient (-1: none).
  std::vector<int> tensor(ids.count(), -1), param_grad(g.values().size(), -1);
  std::vector<bool> computed(g.nodes().size(), false);
  auto drop = [&](int& holder) {
    if (holder < 0) return;
    mem.release(holder);
    holder = -1;
  };
  auto assign = [&](int& holder, int storage) {  // holder = storage (old one released after)
    mem.hold(storage);
    const int old = holder;
    holder = storage;
    if (old >= 0) mem.release(old);
  };
  bool backward_started = false;
  for (size_t i = 0; i < plan.program.size(); ++i) {
    const Instruction& in = plan.program[i];
    const Node& n = g.node(in.node);
    mem.reset_peak();
    const int64_t gradient_before = mem.gradient_current();
    if (in.kind == InstrKind::kForward) {
      const ForwardImplInfo f = find_forward_impl(forward_impls(g, n), n, in.impl);
      const ImplCost& c = costs.forward(g, n.id, in.impl);
      (backward_started ? result.recompute_seconds : result.forward_seconds) += c.seconds;
      mem.touch(mem.current() + forward_result_bytes(g, n, f, !computed[n.id]) + c.workspace_bytes);
      if (!computed[n.id]) mem.add_untracked(node_state_bytes(g, n));
      computed[n.id] = true;
      const int input0 = n.inputs.empty() ? -1 : ids.activation(n.inputs[0]);
      int out_storage = -1;
      if (f.inplace || f.output_aliases_input) {
        // A view of a parameter, a buffer or the batch aliases bytes counted in start_bytes:
        // it holds a storage of no bytes of its own.
        out_storage = input0 >= 0 && tensor.at(input0) >= 0 ? tensor.at(input0) : mem.allocate(0);
      } else {
        out_storage = mem.allocate(g.value(n.output).bytes());
      }
      const int inter_storage =
          f.emits_intermediate ? mem.allocate(intermediate_bytes(g, n, f.name)) : -1;
      mem.hold(out_storage);  // the returned output
      if (f.inplace) drop(tensor[input0]);
      if (n.output == loss) {
        const int one =
            mem.allocate(static_cast<int64_t>(c10::elementSize(g.value(loss).dtype)), true);
        assign(tensor[ids.grad(loss)], one);
      }
      assign(tensor[ids.activation(n.output)], out_storage);
      mem.release(out_storage);
      if (inter_storage >= 0) assign(tensor[ids.intermediate(n.id)], inter_storage);
    } else if (in.kind == InstrKind::kBackward) {
      backward_started = true;
      const BackwardImplInfo b = find_backward_impl(backward_impls(g, n), n, in.part, in.impl);
      const ImplCost& c = costs.backward(g, n.id, in.part, in.impl);
      result.backward_seconds += c.seconds;
      const auto mask = backward_grad_mask(g, n, in.part, needs_grad);
      // The gradients the call returns.
      std::vector<int> grads(n.inputs.size(), -1);
      mem.touch(mem.current() + backward_result_bytes(g, n, b, mask) + c.workspace_bytes);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (!mask[k]) continue;
        grads[k] = b.grads_alias_output ? tensor.at(ids.grad(n.output))
                                        : mem.allocate(g.value(n.inputs[k]).bytes(), true);
        mem.hold(grads[k]);
      }
      // Accumulation, as the executor does it: take the gradient, add in place when the
      // slot is exclusively ours, else add into a new tensor.
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (grads[k] < 0) continue;
        const int v = n.inputs[k];
        int& slot = g.value(v).kind == ValueKind::kParameter ? param_grad[v] : tensor[ids.grad(v)];
        if (slot < 0)
          assign(slot, grads[k]);
        else if (mem.holders(slot) > 1)
          assign(slot, mem.allocate(g.value(v).bytes(), true));
      }
      for (int s : grads)
        if (s >= 0) mem.release(s);
    } else {
      drop(tensor[in.slot == Slot::kOutput ? ids.activation(n.output) : ids.intermediate(n.id)]);
    }
    for (int t : live.free_after[i]) drop(tensor[t]);
    for (int p : live.update_after[i]) drop(param_grad[p]);  // the optimizer's, fused
    for (int node : live.state_free_after[i]) mem.add_untracked(-node_state_bytes(g, g.node(node)));
    result.steps.push_back({mem.peak(), mem.current(), gradient_before,
                            std::max(mem.gradient_peak(), gradient_before)});
    result.peak_bytes = std::max(result.peak_bytes, mem.peak());
  }
  result.peak_bytes = std::max(result.peak_bytes, result.start_bytes);
  result.seconds = result.forward_seconds + result.recompute_seconds + result.backward_seconds;
  return result;
}

double SimulationResult::bytes_over(int64_t budget_bytes) const {
  double over = 0;
  for (const SimulatedStep& step : steps)
    over += static_cast<double>(std::max<int64_t>(0, step.peak_bytes - budget_bytes));
  return over;
}

}  // namespace monet
