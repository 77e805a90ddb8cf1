// budget_range: what budgets a model can be planned for, from its profiled costs.
#include <algorithm>
#include <utility>

#include "api/model_impl.h"
#include "api/plan_cache.h"
#include "api/planning_limit.h"
#include "base/memory_tracker.h"
#include "base/progress.h"
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

// The smallest iteration budget (bytes; 0: the search found none), from `cache_dir`'s
// budget cache where it holds one for these options, else searched (smallest_budget)
// and cached.
int64_t smallest_iteration_budget(const Graph& g, const CostModel& costs, const PlanOptions& o,
                                  const std::string& cache_dir,
                                  std::optional<int64_t> infeasible_bytes) {
  const std::string cached = cache_dir.empty() ? "" : smallest_budget_cache_path(cache_dir, g, o);
  if (!cached.empty()) {
    if (const std::optional<int64_t> bytes = read_cached_smallest_budget(g, cached)) {
      if (o.progress) report_progress("budget: the smallest from the cache (%s)\n", cached.c_str());
      return *bytes;
    }
  }
  const int64_t bytes =
      smallest_budget(o.planner, g, costs, search_options_of(o), infeasible_bytes).bytes;
  if (!cached.empty() && bytes > 0) write_cached_smallest_budget(g, cached, bytes);
  return bytes;
}

BudgetRange budget_range_of(const Graph& g, const CostModel& costs, const PlanOptions& o,
                            int64_t optimizer_bytes, const std::string& cache_dir,
                            std::optional<int64_t> infeasible_bytes) {
  // The smallest budget as `monet plan` finds it (smallest_budget).
  const int64_t smallest = smallest_iteration_budget(g, costs, o, cache_dir, infeasible_bytes);
  const int64_t storeall = simulate(g, store_all_plan(g), costs).peak_bytes;
  const int64_t others = optimizer_bytes + o.reserved_bytes;
  BudgetRange r;
  // Store-all always has a plan: the smallest budget where the search found none smaller.
  r.smallest_bytes = (smallest > 0 ? std::min(smallest, storeall) : storeall) + others;
  r.storeall_bytes = storeall + others;
  r.floor_bytes = memory_floor_bytes(g, costs) + others;
  return r;
}

BudgetRange budget_range(const Model& model, const PlanOptions& o) {
  Graph& g = impl_of(model)->graph;
  g.set_update_mode(update_mode_of(o.optimizer_update));
  const std::string cache_dir = cache_dir_of(o);
  const CostModel costs = model_costs(g, o, cache_dir);
  return budget_range_of(g, costs, o, optimizer_memory(model, o).total(), cache_dir);
}

}  // namespace monet
