// ParameterUpdate: one LibTorch optimizer's step applied to one parameter at a time, as
// fused updates need (UpdateMode::kFused: a parameter is updated inside the backward as
// soon as the plan no longer uses it). SGD (momentum, dampening, Nesterov, weight decay),
// Adam (AMSGrad included) and AdamW, with torch::optim's arithmetic and the options of the
// parameter's group read at every update (a learning-rate scheduler's changes apply).
// The state lives in the optimizer's own state map under LibTorch's key, so
// optimizer.step(), its serialization and monet's checkpoints see the same state.
#pragma once

#include <torch/optim.h>

#include <cstddef>
#include <functional>
#include <unordered_map>

namespace monet {

class ParameterUpdate {
 public:
  /// Throws std::invalid_argument naming the optimizer when it is not an SGD, Adam or
  /// AdamW (the after-backward mode then steps it instead). `optimizer` must outlive this.
  explicit ParameterUpdate(torch::optim::Optimizer& optimizer);

  /// Updates `parameter` by `gradient` as optimizer.step() would with `gradient` as its
  /// .grad(). A tensor the optimizer does not hold is left unchanged.
  void update(const at::Tensor& parameter, const at::Tensor& gradient);

  /// Whether `optimizer` is of a kind this class updates.
  static bool supports(const torch::optim::Optimizer& optimizer);

 private:
  enum class Kind { kSGD, kAdam, kAdamW };
  void update_sgd(const at::Tensor& p, const at::Tensor& grad, size_t group);
  void update_adam(const at::Tensor& p, const at::Tensor& grad, size_t group);
  /// The parameter's group index, or -1; the lookup is rebuilt when groups were added.
  long group_of(const at::Tensor& parameter);

  torch::optim::Optimizer& optimizer_;
  Kind kind_;
  std::unordered_map<const c10::TensorImpl*, size_t> groups_;
  size_t indexed_groups_ = 0;  // param_groups().size() when groups_ was built
};

/// `optimizer`'s update as a function of (parameter, gradient), for the executor's and
/// data parallelism's update hooks; throws as ParameterUpdate's constructor does.
std::function<void(const at::Tensor& parameter, const at::Tensor& gradient)> parameter_update_fn(
    torch::optim::Optimizer& optimizer);

}  // namespace monet
