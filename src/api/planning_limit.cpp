#include "api/planning_limit.h"

#include <stdexcept>

namespace monet {

SearchLimit search_limit_of(PlanningLimit limit) {
  return limit == PlanningLimit::kWork ? SearchLimit::kWork : SearchLimit::kWallClock;
}

SearchOptions search_options_of(const PlanOptions& o) {
  SearchOptions so;
  so.time_limit_seconds = o.time_limit_seconds;
  so.search_limit = search_limit_of(o.planning_limit);
  so.relative_gap = 0.01;
  so.progress = o.progress;
  return so;
}

const char* planning_limit_name(PlanningLimit limit) {
  return search_limit_name(search_limit_of(limit));
}

PlanningLimit planning_limit_from_name(const std::string& name) {
  return search_limit_from_name(name) == SearchLimit::kWork ? PlanningLimit::kWork
                                                            : PlanningLimit::kWallClock;
}

}  // namespace monet
