// The search layer: search_policy() is where the strategy is chosen (by the program's
// size and the time limit under kAuto, as asked otherwise), and search_program() runs it: a
// neighbourhood search needs a warm start, and without one the program is searched by branch and
// cut.
#include "planner/search/program_search.h"

#include <gtest/gtest.h>

#include "knapsack_program.h"

namespace monet {
namespace {

using testing::knapsack;

TEST(ProgramSearch, ThePolicyFollowsTheProgramsSizeAndTheLimitOrAsAsked) {
  SearchOptions o;
  o.neighbourhood_min_columns = 4;
  o.time_limit_seconds = 1;
  // Large programs: by neighbourhoods under kAuto.
  EXPECT_EQ(search_policy(5, o).scale, ProgramScale::kLarge);
  EXPECT_EQ(search_policy(5, o).strategy, SearchStrategy::kNeighbourhood);
  // Small ones: by branch and cut below small_program_neighbourhood_min_seconds, by
  // neighbourhoods from it on.
  o.neighbourhood_min_columns = 5;
  EXPECT_EQ(search_policy(5, o).scale, ProgramScale::kSmall);
  EXPECT_EQ(search_policy(5, o).strategy, SearchStrategy::kBranchAndCut);
  o.time_limit_seconds = o.small_program_neighbourhood_min_seconds;
  EXPECT_EQ(search_policy(5, o).strategy, SearchStrategy::kNeighbourhood);
  o.small_program_neighbourhood_min_seconds = 2 * o.time_limit_seconds;
  EXPECT_EQ(search_policy(5, o).strategy, SearchStrategy::kBranchAndCut);
  // As asked, whatever the size.
  o.strategy = SearchStrategy::kNeighbourhood;
  EXPECT_EQ(search_policy(5, o).strategy, SearchStrategy::kNeighbourhood);
  o.neighbourhood_min_columns = 1;
  o.strategy = SearchStrategy::kBranchAndCut;
  EXPECT_EQ(search_policy(5, o).strategy, SearchStrategy::kBranchAndCut);
  EXPECT_EQ(search_policy(5, o).scale, ProgramScale::kLarge);
}

TEST(ProgramSearch, NeighbourhoodSearchWithoutAWarmStartIsABranchAndCut) {
  const Milp m = knapsack(12, 27);
  MilpOptions exact;
  exact.search_limit = SearchLimit::kWork;
  const MilpResult optimum = solve_milp(m, exact);
  ASSERT_EQ(optimum.status, MilpStatus::kOptimal);
  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.search_limit = SearchLimit::kWork;
  const MilpResult r = search_program(m, o);
  EXPECT_EQ(r.status, MilpStatus::kOptimal);
  EXPECT_EQ(r.neighbourhoods, 0);
  EXPECT_NEAR(r.objective, optimum.objective, 1e-9);
  // With a warm start (the empty knapsack), the neighbourhood search reaches it too.
  o.warm_start.assign(m.columns(), 0);
  o.time_limit_seconds = 30;
  const MilpResult searched = search_program(m, o);
  EXPECT_TRUE(m.satisfies(searched.values));
  EXPECT_NEAR(searched.objective, optimum.objective, 1e-9);
  EXPECT_EQ(searched.incumbent_trace.front().first, 0.0);  // the warm start, first
}

}  // namespace
}  // namespace monet
