// solved_to_optimum: MilpOptions for a solve that runs to its proven optimum (within
// relative_gap) with no clock read: SearchLimit::kWork with node and iteration limits far beyond
// what a test's proof takes.
#pragma once

#include "planner/solver/milp.h"

namespace monet::testing {

inline MilpOptions solved_to_optimum() {
  MilpOptions o;
  o.search_limit = SearchLimit::kWork;
  o.time_limit_seconds = 1e6;  // nominal seconds: the iterations they allow never bind
  o.max_nodes = 10000000;
  return o;
}

}  // namespace monet::testing
