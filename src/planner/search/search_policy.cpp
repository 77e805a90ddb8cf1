#include "planner/search/search_policy.h"

namespace monet {

ProgramScale program_scale(int columns, const SearchOptions& o) {
  return columns > o.neighbourhood_min_columns ? ProgramScale::kLarge : ProgramScale::kSmall;
}

SearchPolicy search_policy(int columns, const SearchOptions& o) {
  SearchPolicy p;
  p.scale = program_scale(columns, o);
  if (o.strategy != SearchStrategy::kAuto)
    p.strategy = o.strategy;
  else if (p.scale == ProgramScale::kLarge ||
           o.time_limit_seconds >= o.small_program_neighbourhood_min_seconds)
    p.strategy = SearchStrategy::kNeighbourhood;
  else
    p.strategy = SearchStrategy::kBranchAndCut;
  return p;
}

}  // namespace monet
