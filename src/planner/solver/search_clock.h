// SearchClock: the time a planner's stages see as used, and SearchLimit, what ends their
// searches. Under SearchLimit::kWallClock a stage ends when its share of the time limit has
// passed on the wall clock (a user's planning time). Under SearchLimit::kWork no stage
// reads a clock: the clock stands at zero, an LP relaxation and CBC's branch and cut each
// end after the simplex iterations their nominal seconds stand for
// (MilpOptions::relaxation_work_per_second, search_work_per_second) or CBC's after
// MilpOptions::max_nodes nodes, and a
// neighbourhood search runs its window sequence on one core; the time limit then only
// chooses strategies and sizes the work (as it does under the wall clock), so a plan
// depends on the program and the options alone: the same on every machine and under any
// load (tests).
#pragma once

#include <chrono>
#include <limits>
#include <string>

namespace monet {

enum class SearchLimit {
  kWallClock,  // "wall-clock": stages end at their share of the time limit (the default)
  kWork,       // "work": stages end by their work counts; no clock is read
};
/// "wall-clock" or "work".
const char* search_limit_name(SearchLimit limit);
/// Throws std::invalid_argument naming the known values for any other name.
SearchLimit search_limit_from_name(const std::string& name);

/// A wall-clock limit (seconds) that never ends a solve (an LP relaxation runs to its end).
inline constexpr double kNoTimeLimit = std::numeric_limits<double>::infinity();

/// The wall-clock limit (seconds) a solver applies for a nominal `seconds`: `seconds`
/// under kWallClock, +infinity (none) under kWork.
double wall_limit(SearchLimit limit, double seconds);

class SearchClock {
 public:
  /// Starts now.
  explicit SearchClock(SearchLimit limit);
  /// Seconds charged since the start: the wall time under kWallClock, 0 under kWork.
  double elapsed() const;
  /// What is left of `limit_seconds` (seconds): all of it under kWork.
  double left(double limit_seconds) const { return limit_seconds - elapsed(); }
  /// Whether a stage limited to `limit_seconds` is over: past it, or given none (<= 0;
  /// under kWork too).
  bool past(double limit_seconds) const { return limit_seconds <= 0 || elapsed() > limit_seconds; }
  /// Wall seconds since the start, for reports and statistics only (never a decision).
  double wall_seconds() const;
  SearchLimit limit() const { return limit_; }

 private:
  SearchLimit limit_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace monet
