// ImplAccess: the library's own way (and its tests') to the implementation behind the
// public API's handles, Model and PlannedModel, whose implementation is private: user
// code sees only include/monet. impl_of() returns it.
#pragma once

#include <monet/monet.h>
#include <monet/operator_costs.h>
#include <monet/plan_file.h>

namespace monet {

struct ImplAccess {
  static Model::Impl* of(const Model& m) { return m.impl_.get(); }
  static PlannedModel::Impl& of(PlannedModel& p) { return *p.impl_; }
  static const PlannedModel::Impl& of(const PlannedModel& p) { return *p.impl_; }
  static const PlanFile::Impl& of(const PlanFile& p) { return *p.impl_; }
  static void set(PlanFile& p, std::shared_ptr<const PlanFile::Impl> impl) {
    p.impl_ = std::move(impl);
  }
  static const OperatorCosts::Impl& of(const OperatorCosts& c) { return *c.impl_; }
  static void set(OperatorCosts& c, std::shared_ptr<const OperatorCosts::Impl> impl) {
    c.impl_ = std::move(impl);
  }
};

/// The model's implementation (api/model_impl.h), shared by every copy of the handle.
inline Model::Impl* impl_of(const Model& m) { return ImplAccess::of(m); }
/// The planned model's implementation (api/planned_model_impl.h).
inline PlannedModel::Impl& impl_of(PlannedModel& p) { return ImplAccess::of(p); }
inline const PlannedModel::Impl& impl_of(const PlannedModel& p) { return ImplAccess::of(p); }
/// The plan file's implementation (api/plan_file_impl.h).
inline const PlanFile::Impl& impl_of(const PlanFile& p) { return ImplAccess::of(p); }
/// The costs' implementation (api/operator_costs_impl.h).
inline const OperatorCosts::Impl& impl_of(const OperatorCosts& c) { return ImplAccess::of(c); }

}  // namespace monet
