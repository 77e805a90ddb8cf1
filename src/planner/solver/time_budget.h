// TimeBudget: the time limit of one planner run on its SearchClock, from which its stages
// take their limits. A stage's limit is a TimeShare, a fraction of a stated base: the
// whole limit (fixed when the run starts) or what is left of it when the stage starts.
// Every stage that must run gets at least kMinimumStageSeconds (stage_seconds()). Under
// SearchLimit::kWork the clock stands at zero, so every share is a fixed number of nominal
// seconds (which sizes work, see search_clock.h).
#pragma once

#include <algorithm>

#include "planner/solver/search_clock.h"

namespace monet {

/// What a TimeShare is a fraction of.
enum class ShareBase {
  kWholeLimit,  // the run's whole time limit
  kTimeLeft,    // what is left of the limit when the stage starts
};

/// A stage's limit as a fraction of a base.
struct TimeShare {
  double fraction = 0;  // of `base` (0: the stage gets no time)
  ShareBase base = ShareBase::kWholeLimit;
};

/// The least limit a stage that must run is given (seconds): CBC and CLP given less end
/// before their first iteration on the programs the planner builds.
inline constexpr double kMinimumStageSeconds = 1.0;

/// `seconds`, raised to kMinimumStageSeconds.
inline double stage_seconds(double seconds) { return std::max(kMinimumStageSeconds, seconds); }

class TimeBudget {
 public:
  /// `limit_seconds` (seconds) from now, on a new clock under `limit`.
  TimeBudget(SearchLimit limit, double limit_seconds) : clock_(limit), limit_(limit_seconds) {}

  const SearchClock& clock() const { return clock_; }
  /// The whole limit (seconds).
  double limit_seconds() const { return limit_; }
  /// What is left of the limit less `reserve_seconds` (seconds; negative past the limit).
  double left(double reserve_seconds = 0) const { return clock_.left(limit_) - reserve_seconds; }
  /// Whether the limit has passed (SearchClock::past).
  bool over() const { return clock_.past(limit_); }
  /// `share`'s seconds now: its fraction of the whole limit or of what is left.
  double of(TimeShare share) const {
    return share.fraction * (share.base == ShareBase::kWholeLimit ? limit_ : left());
  }
  /// `share`'s seconds, within what is left less `reserve_seconds`.
  double within(TimeShare share, double reserve_seconds) const {
    return std::min(of(share), left(reserve_seconds));
  }

 private:
  SearchClock clock_;
  double limit_;
};

}  // namespace monet
