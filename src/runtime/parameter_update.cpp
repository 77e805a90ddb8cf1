#include "runtime/parameter_update.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <typeinfo>

namespace monet {
namespace {

// The key LibTorch's optimizers file a parameter's state under.
std::string state_key(const at::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }

template <typename State>
State& state_of(torch::optim::Optimizer& optimizer, const at::Tensor& p) {
  auto& states = optimizer.state();
  auto it = states.find(state_key(p));
  if (it == states.end()) it = states.emplace(state_key(p), std::make_unique<State>()).first;
  return static_cast<State&>(*it->second);
}

// Adam's and AdamW's shared arithmetic (their options and states have the same fields).
template <typename Options, typename State>
void adam_step(torch::optim::Optimizer& optimizer, const at::Tensor& p, at::Tensor grad,
               const Options& o, bool decoupled_decay) {
  const bool fresh = optimizer.state().find(state_key(p)) == optimizer.state().end();
  State& s = state_of<State>(optimizer, p);
  if (fresh) {
    s.step(0);
    s.exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
    s.exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    if (o.amsgrad()) s.max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
  }
  s.step(s.step() + 1);
  const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
  const double bias_correction1 = 1 - std::pow(beta1, s.step());
  const double bias_correction2 = 1 - std::pow(beta2, s.step());
  if (o.weight_decay() != 0) {
    if (decoupled_decay)
      p.mul_(1 - o.lr() * o.weight_decay());
    else
      grad = grad.add(p, o.weight_decay());
  }
  s.exp_avg().mul_(beta1).add_(grad, 1 - beta1);
  s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  at::Tensor denom;
  if (o.amsgrad()) {
    at::maximum_out(s.max_exp_avg_sq(), s.max_exp_avg_sq(), s.exp_avg_sq());
    denom = (s.max_exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
  } else {
    denom = (s.exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
  }
  p.addcdiv_(s.exp_avg(), denom, -o.lr() / bias_correction1);
}

}  // namespace

bool ParameterUpdate::supports(const torch::optim::Optimizer& o) {
  return dynamic_cast<const torch::optim::SGD*>(&o) ||
         dynamic_cast<const torch::optim::Adam*>(&o) ||
         dynamic_cast<const torch::optim::AdamW*>(&o);
}

ParameterUpdate::ParameterUpdate(torch::optim::Optimizer& optimizer) : optimizer_(optimizer) {
  if (dynamic_cast<torch::optim::SGD*>(&optimizer))
    kind_ = Kind::kSGD;
  else if (dynamic_cast<torch::optim::AdamW*>(&optimizer))
    kind_ = Kind::kAdamW;
  else if (dynamic_cast<torch::optim::Adam*>(&optimizer))
    kind_ = Kind::kAdam;
  else
    throw std::invalid_argument(
        std::string("fused optimizer updates take torch::optim::SGD, Adam or AdamW, not ") +
        typeid(optimizer).name() + ": use the after-backward update mode for this optimizer");
}

long ParameterUpdate::group_of(const at::Tensor& parameter) {
  const auto& groups = optimizer_.param_groups();
  if (indexed_groups_ != groups.size()) {
    groups_.clear();
    for (size_t g = 0; g < groups.size(); ++g)
      for (const auto& p : groups[g].params()) groups_.emplace(p.unsafeGetTensorImpl(), g);
    indexed_groups_ = groups.size();
  }
  auto it = groups_.find(parameter.unsafeGetTensorImpl());
  return it == groups_.end() ? -1 : static_cast<long>(it->second);
}

void ParameterUpdate::update(const at::Tensor& parameter, const at::Tensor& gradient) {
  const long group = group_of(parameter);
  if (group < 0) return;
  torch::NoGradGuard no_grad;
  if (kind_ == Kind::kSGD)
    update_sgd(parameter, gradient, static_cast<size_t>(group));
  else
    update_adam(parameter, gradient, static_cast<size_t>(group));
}

void ParameterUpdate::update_sgd(const at::Tensor& p, const at::Tensor& grad, size_t group) {
  const auto& o =
      static_cast<const torch::optim::SGDOptions&>(optimizer_.param_groups()[group].options());
  at::Tensor d_p = grad;
  if (o.weight_decay() != 0) d_p = d_p.add(p, o.weight_decay());
  if (o.momentum() != 0) {
    const bool fresh = optimizer_.state().find(state_key(p)) == optimizer_.state().end();
    auto& s = state_of<torch::optim::SGDParamState>(optimizer_, p);
    if (fresh)
      s.momentum_buffer(torch::clone(d_p).detach());
    else
      s.momentum_buffer().mul_(o.momentum()).add_(d_p, 1 - o.dampening());
    d_p = o.nesterov() ? d_p.add(s.momentum_buffer(), o.momentum()) : s.momentum_buffer();
  }
  p.add_(d_p, -o.lr());
}

void ParameterUpdate::update_adam(const at::Tensor& p, const at::Tensor& grad, size_t group) {
  const auto& options = optimizer_.param_groups()[group].options();
  if (kind_ == Kind::kAdamW)
    adam_step<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(
        optimizer_, p, grad, static_cast<const torch::optim::AdamWOptions&>(options), true);
  else
    adam_step<torch::optim::AdamOptions, torch::optim::AdamParamState>(
        optimizer_, p, grad, static_cast<const torch::optim::AdamOptions&>(options), false);
}

std::function<void(const at::Tensor&, const at::Tensor&)> parameter_update_fn(
    torch::optim::Optimizer& optimizer) {
  auto update = std::make_shared<ParameterUpdate>(optimizer);
  return [update](const at::Tensor& p, const at::Tensor& grad) { update->update(p, grad); };
}

}  // namespace monet
