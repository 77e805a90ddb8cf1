// The smallest budget for which the MONeT program has a plan, and a plan at it: what
// `monet plan` reports beside every plan, and the left end of `monet sweep`'s range.
#pragma once

#include <cstdint>
#include <optional>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "planner/monet_planner.h"
#include "planner/search/program_search.h"
#include "planner/solver/time_budget.h"

namespace monet {

struct MinimumBudget {
  /// Smallest peak found (bytes): the program's (its memory model), or chain
  /// checkpointing's leanest schedule's (simulated) where that is smaller.
  int64_t bytes = 0;
  int64_t bound_bytes = 0;  // proven lower bound on it; -1: none proven in the time limit
  bool proven = false;      // bytes == bound (solved to optimality)
  Plan plan;                // a plan with that peak
};
/// minimum_budget's share of its time limit (SearchOptions::time_limit_seconds) for the
/// heuristics' leanest plan (chain checkpointing's leanest schedule, the lean planner's
/// smallest plan); the program's search takes what is left.
inline constexpr TimeShare kMinimumBudgetHeuristicsShare{0.25, ShareBase::kWholeLimit};

/// The smallest budget for which the program (in `mode`) has a plan: the same program
/// with the budget as the variable to minimise (on programs of at most
/// solver.neighbourhood_min_columns columns, recomputing in place where possible, as the
/// planner searches them where the out-of-place program has no plan), in MonetMode::kAll started
/// from the heuristics' leanest plan (chain checkpointing's leanest schedule or the lean
/// planner's smallest plan, whichever peaks lower) where the program accepts it, and that plan
/// (its simulated peak, the program's bound dropped where it lies above it) where the search
/// ends above it (the search alone can end well above it; docs/PLANNER.md, "Why the
/// defaults"), or at once where it peaks at the memory floor (memory_floor.h; proven).
/// Reached through smallest_budget() (named_planner.h).
/// `infeasible_bytes`: a budget (bytes) already proven to have no plan, e.g. by the LP relaxation
/// of the program at that budget; the proven lower bound is then at least one byte above it, where
/// the search's own bound is lower or missing (its relaxation can take longer than the time limit
/// on the largest programs). The program is searched by search_policy() on the whole time
/// limit: under SearchStrategy::kAuto, small programs by neighbourhoods from
/// solver.small_program_neighbourhood_min_seconds on (they reach smaller budgets than branch
/// and cut alone; docs/PLANNER.md, "Why the defaults"), by branch and cut below.
MinimumBudget minimum_budget(const Graph& graph, const CostModel& costs, MonetMode mode,
                             const SearchOptions& solver,
                             std::optional<int64_t> infeasible_bytes = std::nullopt);

}  // namespace monet
