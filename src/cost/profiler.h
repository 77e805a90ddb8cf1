// Profiler: measures the CostModel of a graph on this machine. Every forward and
// backward implementation of every node runs on real tensors of the node's shapes
// (activations from one reference forward pass), `warmup` times untimed and `repeats`
// times timed; the median seconds and the largest workspace are kept. Workspace bytes
// are counted by the MemoryTracker, which must be installed.
#pragma once

#include <string>

#include "cost/cost_model.h"
#include "runtime/model_state.h"

namespace monet {

struct ProfileOptions {
  int warmup = 1;         // untimed calls per implementation before timing
  int repeats = 3;        // timed calls per implementation; the median is kept
  bool progress = false;  // a progress line per node on stderr
};

CostModel profile_costs(const Graph& graph, const ModelState& state, const Batch& batch,
                        const ProfileOptions& options = {});

/// Where cost files are cached: $MONET_CACHE_DIR, else $XDG_CACHE_HOME/monet, else
/// ~/.cache/monet.
std::string default_cost_cache_dir();

/// The cache file of `graph`'s costs on this device and thread count under `cache_dir`.
std::string cost_cache_path(const Graph& graph, const std::string& cache_dir);
/// Reads the cached costs if present and valid; false otherwise (a corrupt file is
/// reported on stderr and ignored).
bool read_cached_costs(const Graph& graph, const std::string& cache_dir, CostModel* costs);

/// The cached costs of `graph` on this device and thread count when `cache_dir` holds
/// them, else profiles and writes them there (atomically). `from_cache` tells which.
/// An empty `cache_dir` disables the cache.
CostModel cached_profile_costs(const Graph& graph, const ModelState& state, const Batch& batch,
                               const ProfileOptions& options, const std::string& cache_dir,
                               bool* from_cache = nullptr);

}  // namespace monet
