// The cache directory's planner results: plans (<cache>/plans/) and smallest budgets
// (<cache>/budgets/), each file named by everything that decides it, so that a file is
// only ever read in place of the very search that wrote it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <monet/monet.h>

#include "graph/graph.h"

namespace monet {

/// Raised whenever a planner can return another plan or smallest budget for the same
/// graph, costs and options (2: store-all's convolution input gradients; 3: the MONeT
/// program counts a storage shared by views once; 4: recomputations that emit an
/// intermediate for the backward; 5: the default convolution input gradient costs as
/// ATen's on the real input; 6: rematerialization recomputes the inputs of a
/// recomputation that are no longer alive; 8: chain checkpointing drops the recomputations
/// nothing reads, and its rematerialization recomputes inputs up to 8 producers back; 9:
/// the neighbourhood search widens its windows once each is solved from the incumbent), so
/// that no cached result of an earlier planner is used in its place. Profiles measured
/// another way have another implementation_set_key, which the paths hold.
inline constexpr int kPlanCacheVersion = 9;

/// The plan file for `planner` under an iteration budget (bytes; <= 0: none), with
/// `loss_bytes` charged to the loss, in `g`'s update mode.
std::string plan_cache_path(const std::string& dir, const Graph& g, const std::string& planner,
                            int64_t iteration_budget, int64_t loss_bytes);

/// The file of the smallest iteration budget smallest_budget() finds for `g` under
/// `options` (its planner, loss bytes, planning limit and time limit, and `g`'s update mode).
std::string smallest_budget_cache_path(const std::string& dir, const Graph& g,
                                       const PlanOptions& options);
/// The smallest iteration budget (bytes) cached at `path`: nullopt when there is none, or
/// when the file is unreadable or made for another graph (a warning says so).
std::optional<int64_t> read_cached_smallest_budget(const Graph& g, const std::string& path);
/// Writes `bytes` at `path` atomically; a failure is a warning (the result stands).
void write_cached_smallest_budget(const Graph& g, const std::string& path, int64_t bytes);

}  // namespace monet
