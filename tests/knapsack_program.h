// A small 0-1 program for solver tests: a knapsack, max sum v_i x_i with
// sum w_i x_i <= capacity (as a minimisation), values and weights in a fixed pattern.
#pragma once

#include <utility>
#include <vector>

#include "planner/solver/milp.h"

namespace monet::testing {

inline Milp knapsack(int items, double capacity) {
  Milp m;
  std::vector<std::pair<int, double>> row;
  for (int i = 0; i < items; ++i) {
    const int x = m.add_binary(-(3.0 + (i * 7) % 11));
    row.push_back({x, 2.0 + (i * 5) % 9});
  }
  m.add_row(row, -1e30, capacity);
  return m;
}

}  // namespace monet::testing
