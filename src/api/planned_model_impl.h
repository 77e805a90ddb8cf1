// PlannedModel::Impl: what a monet::PlannedModel holds, shared by the API's translation
// units (data-parallel training hooks into its backward).
#pragma once

#include <monet/monet.h>

#include "api/impl_access.h"

#include <functional>
#include <memory>

#include "plan/plan.h"
#include "runtime/executor.h"

namespace monet {

struct PlannedModel::Impl {
  Model model;
  Plan plan;
  PlanReport report;
  // Shared with the backward of forward()'s outputs, which may outlive this object.
  std::shared_ptr<Executor> executor;
  std::shared_ptr<StepResult> last_step = std::make_shared<StepResult>();
  /// Passed to every step's executor: called when a parameter's gradient is complete.
  std::function<void(int parameter)> on_parameter_gradient;
  /// UpdateMode::kFused: updates each parameter inside the backward (use_optimizer,
  /// use_update).
  PlannedModel::ParameterUpdateFn update;
  /// Called when the planned backward of a forward()'s output has run (DataParallel: the
  /// last all-reduces and the sharded updates); may throw, failing that backward.
  std::function<void()> after_backward;
  /// The options every step's executor runs with.
  ExecutionOptions execution_options(const Model::Impl& model);
};

}  // namespace monet
