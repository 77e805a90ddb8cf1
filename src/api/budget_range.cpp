// budget_range: what budgets a model can be planned for, from its profiled costs.
#include <algorithm>
#include <utility>

#include "api/model_impl.h"
#include "api/planning_limit.h"
#include "base/memory_tracker.h"
#include "cost/profiler.h"
#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/chain/chain_checkpointing.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/memory_floor.h"
#include "planner/minimum_budget.h"

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
                            int64_t optimizer_bytes) {
  // The leanest plan: of the lean checkpointing plans, and of chain checkpointing's
  // schedules lowered towards nothing (as the MONeT planner lowers them when none fits).
  int64_t smallest = simulate(g, best_lean_plan(g, costs, -1), costs).peak_bytes;
  const SimulatedPlan chain =
      leanest_chain_schedule(g, costs, kMinimumBudgetChainShare.fraction * o.time_limit_seconds,
                             search_limit_of(o.planning_limit));
  if (!chain.plan.program.empty()) smallest = std::min(smallest, chain.simulated.peak_bytes);
  const int64_t others = optimizer_bytes + o.reserved_bytes;
  BudgetRange r;
  r.smallest_bytes = smallest + others;
  r.storeall_bytes = simulate(g, store_all_plan(g), costs).peak_bytes + others;
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
