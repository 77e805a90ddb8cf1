// ChildSolve: a Milp solved in a child process gives what solve_milp() gives here; the
// neighbourhood search's windows on the second core (children) and on this one combine
// their improvements.
#include "planner/child_solve.h"
#include "planner/program_search.h"

#include <gtest/gtest.h>

#include "knapsack_program.h"

#include "slow_relaxation.h"

#include <future>

namespace monet {
namespace {

using testing::knapsack;

TEST(ChildSolve, SolvesAsThisProcessDoes) {
  const Milp m = knapsack(14, 31);
  MilpOptions o;
  o.time_limit_seconds = 20;
  const MilpResult here = solve_milp(m, o);
  ASSERT_EQ(here.status, MilpStatus::kOptimal);
  ChildSolve child(m, o);
  const MilpResult there = child.wait();
  EXPECT_TRUE(child.finished());
  EXPECT_EQ(there.status, MilpStatus::kOptimal);
  EXPECT_NEAR(there.objective, here.objective, 1e-9);
  ASSERT_EQ(there.values.size(), here.values.size());
  EXPECT_TRUE(m.satisfies(there.values));
  EXPECT_NEAR(m.objective_of(there.values), here.objective, 1e-9);
}

TEST(ChildSolve, ReportsNoSolutionForAnInfeasibleProgram) {
  Milp m;
  const int x = m.add_binary(1), y = m.add_binary(1);
  m.add_row({{x, 1}, {y, 1}}, 3, 1e30);
  MilpOptions o;
  ChildSolve child(m, o);
  const MilpResult r = child.wait();
  EXPECT_EQ(r.status, MilpStatus::kInfeasible);
  EXPECT_TRUE(r.values.empty());
}

TEST(NeighbourhoodSearchOnTwoCores, WindowsKeepTheImprovementsOfBothCores) {
  // Blocks at positions 0..15, each a small knapsack of its own (three items, capacity 4),
  // joined by one loose row over all of them; the warm start takes the worst feasible
  // item of every block. Once the relaxation is ready (and taken as too slow to solve for a
  // branch and cut over the whole program beside), windows alternate between a child
  // process and this one, each improving blocks the other's incumbent does not have.
  Milp m;
  std::vector<int> positions;
  std::vector<double> warm;
  std::vector<std::pair<int, double>> all;
  for (int p = 0; p < 16; ++p) {
    std::vector<std::pair<int, double>> row;
    const double values[3] = {-5, -4, -1}, weights[3] = {3, 2, 1};
    for (int i = 0; i < 3; ++i) {
      const int x = m.add_binary(values[i]);
      row.push_back({x, weights[i]});
      all.push_back({x, 1});
      positions.push_back(p);
      warm.push_back(i == 2 ? 1 : 0);
    }
    m.add_row(row, -1e30, 4);
  }
  m.add_row(all, -1e30, 40);
  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.time_limit_seconds = 60;
  o.relative_gap = 0;
  o.warm_start = warm;
  o.neighbourhood.column_positions = positions;
  o.relaxation = testing::slow_relaxation(m);
  const MilpResult r = search_program(m, o);
  // Each block's best is items 0 and 2 (value 6, weight 4): 32 items in all, within 40.
  EXPECT_TRUE(m.satisfies(r.values));
  EXPECT_NEAR(r.objective, -16 * 6.0, 1e-9);
}

TEST(NeighbourhoodSearchOnTwoCores, WholeBranchAndCutFindsAndProvesTheOptimum) {
  // No column has a place along the model, so there are no windows; the relaxation solves
  // in no time, so the second core runs CBC over the whole program, from the empty
  // knapsack: its solution is the optimum, and its bound proves it (the LP's is lower).
  const Milp m = knapsack(14, 31);
  MilpOptions exact;
  const MilpResult optimum = solve_milp(m, exact);
  ASSERT_EQ(optimum.status, MilpStatus::kOptimal);
  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.time_limit_seconds = 60;
  o.warm_start.assign(m.columns(), 0);
  o.neighbourhood.column_positions.assign(m.columns(), -1);
  const MilpResult r = search_program(m, o);
  EXPECT_LT(r.lp_bound, optimum.objective - 1e-6);
  EXPECT_NEAR(r.objective, optimum.objective, 1e-9);
  EXPECT_TRUE(m.satisfies(r.values));
  EXPECT_GE(r.bound, optimum.objective * (1 + o.relative_gap) - 1e-9);
  EXPECT_EQ(r.status, MilpStatus::kOptimal);
}

}  // namespace
}  // namespace monet
