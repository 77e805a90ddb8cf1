#include "api/planning_limit.h"

#include <stdexcept>

namespace monet {

SearchLimit search_limit_of(PlanningLimit limit) {
  return limit == PlanningLimit::kWork ? SearchLimit::kWork : SearchLimit::kWallClock;
}

const char* planning_limit_name(PlanningLimit limit) {
  return search_limit_name(search_limit_of(limit));
}

PlanningLimit planning_limit_from_name(const std::string& name) {
  return search_limit_from_name(name) == SearchLimit::kWork ? PlanningLimit::kWork
                                                            : PlanningLimit::kWallClock;
}

}  // namespace monet
