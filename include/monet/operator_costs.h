// OperatorCosts: the measured time and workspace of every implementation of every
// operator of a model on this machine (`monet profile`), which the planners that take a
// budget need and from which a plan's peak and time are predicted. Profiles are cached
// on disk by the model's fingerprint, the device and the thread count.
// Units: bytes, seconds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "monet/monet.h"
#include "monet/plan_file.h"

namespace monet {

/// Where costs come from.
struct CostSource {
  /// A cost file (OperatorCosts::save, `monet profile -o`) to read instead of the cache.
  std::string costs_file;
  std::string cache_dir;  // the cost cache; empty: default_cache_dir()
  bool use_cache = true;  // false: profile afresh and write nothing
  int repeats = 3;        // timed calls per implementation when profiling (the median is kept)
  int warmup = 1;         // untimed calls per implementation before those
  bool progress = true;   // a progress line per operator while profiling (stderr)
};

/// What costs predict for one plan: its simulated iteration.
struct Prediction {
  int64_t peak_bytes = 0;  // absolute peak (weights and batch included)
  double seconds = 0;      // the profiled seconds of its forward and backward instructions
};

class OperatorCosts {
 public:
  /// `model`'s costs: the cost file's, else the cache's, else profiled now (and cached).
  /// Throws std::invalid_argument for a cost file that cannot be read, is not JSON or was
  /// measured for another model or shape.
  static OperatorCosts obtain(const Model& model, const CostSource& source);
  /// The same without profiling: none when neither the cost file nor the cache has them.
  static std::optional<OperatorCosts> find(const Model& model, const CostSource& source);

  /// Writes them as a cost file, atomically (a temporary file and a rename).
  void save(const std::string& path) const;
  bool from_cache() const;         // read from the cache (or a cost file), not profiled now
  std::string cache_file() const;  // the cache file of these costs; "" without a cache
  int implementations() const;     // (operator, implementation) pairs measured
  int64_t largest_workspace_bytes() const;  // of any implementation
  int threads() const;                      // intra-op threads they were measured with

  /// The simulated iteration of `plan`; throws PlanMismatch for a plan of another model.
  Prediction predict(const PlanFile& plan) const;
  /// The same for store-all at every operator's default implementation (autograd's own
  /// schedule).
  Prediction predict_store_all() const;

  struct Impl;

 private:
  friend struct ImplAccess;  // the library's (src/api/impl_access.h)
  std::shared_ptr<const Impl> impl_;
};

}  // namespace monet
