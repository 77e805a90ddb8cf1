// The LP relaxation of a Milp, solved here and handed to solve_milp() ready, but marked as
// too slow to solve for the neighbourhood search to run the whole program's branch and
// cut on the second core: only the neighbourhoods a test is about run.
#pragma once

#include <future>

#include "planner/solver/milp.h"

namespace monet::testing {

inline std::shared_future<RelaxationBound> slow_relaxation(const Milp& m) {
  RelaxationBound lp = solve_relaxation(m, {10}, nullptr);
  lp.seconds = 1e6;
  std::promise<RelaxationBound> solved;
  solved.set_value(lp);
  return solved.get_future().share();
}

}  // namespace monet::testing
