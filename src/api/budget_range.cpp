// budget_range: what budgets a model can be planned for, from its profiled costs.
#include <algorithm>
#include <utility>

#include "api/model_impl.h"
#include "api/planning_limit.h"
#include "base/memory_tracker.h"
#include "cost/profiler.h"
#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/memory_floor.h"
#include "planner/named_planner.h"

namespace monet {

CostModel model_costs(const Graph& g, const PlanOptions& o, const std::string& cache_dir) {
  MemoryTracker::install();  // the profiler measures memory through it
  ProfileOptions po;
  po.progress = o.progress;
  return with_loss_working_set(
      g, cached_profile_costs(g, ModelState::initialize(g, 0), make_batch(g, 1), po, cache_dir),
      o.loss_bytes);
}

bool cached_model_costs(const Graph& g, const PlanOptions& o, const std::string& cache_dir,
                        CostModel* costs) {
  CostModel c;
  if (cache_dir.empty() || !read_cached_costs(g, cache_dir, &c)) return false;
  *costs = with_loss_working_set(g, std::move(c), o.loss_bytes);
  return true;
}

std::string cache_dir_of(const PlanOptions& o) {
  if (!o.use_cache) return "";
  return o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
}

BudgetRange budget_range_of(const Graph& g, const CostModel& costs, const PlanOptions& o,
                            int64_t optimizer_bytes, std::optional<int64_t> infeasible_bytes) {
  // The smallest budget as `monet plan` finds it (smallest_budget).
  const MinimumBudget m =
      smallest_budget(o.planner, g, costs, search_options_of(o), infeasible_bytes);
  const int64_t storeall = simulate(g, store_all_plan(g), costs).peak_bytes;
  const int64_t others = optimizer_bytes + o.reserved_bytes;
  BudgetRange r;
  // Store-all always has a plan: the smallest budget where the search found none smaller.
  r.smallest_bytes = (m.bytes > 0 ? std::min(m.bytes, storeall) : storeall) + others;
  r.storeall_bytes = storeall + others;
  r.floor_bytes = memory_floor_bytes(g, costs) + others;
  return r;
}

BudgetRange budget_range(const Model& model, const PlanOptions& o) {
  Graph& g = impl_of(model)->graph;
  g.set_update_mode(update_mode_of(o.optimizer_update));
  const CostModel costs = model_costs(g, o, cache_dir_of(o));
  return budget_range_of(g, costs, o, optimizer_memory(model, o).total());
}

}  // namespace monet
