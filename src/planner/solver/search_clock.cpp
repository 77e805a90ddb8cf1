#include "planner/solver/search_clock.h"

#include <limits>
#include <stdexcept>

namespace monet {

const char* search_limit_name(SearchLimit limit) {
  return limit == SearchLimit::kWork ? "work" : "wall-clock";
}

SearchLimit search_limit_from_name(const std::string& name) {
  if (name == "wall-clock") return SearchLimit::kWallClock;
  if (name == "work") return SearchLimit::kWork;
  throw std::invalid_argument("unknown search limit '" + name + "' (known: wall-clock, work)");
}

double wall_limit(SearchLimit limit, double seconds) {
  return limit == SearchLimit::kWork ? kNoTimeLimit : seconds;
}

SearchClock::SearchClock(SearchLimit limit)
    : limit_(limit), start_(std::chrono::steady_clock::now()) {}

double SearchClock::elapsed() const { return limit_ == SearchLimit::kWork ? 0.0 : wall_seconds(); }

double SearchClock::wall_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace monet
