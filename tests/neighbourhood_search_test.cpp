// Neighbourhood search: the program restriction it solves (fixings and what they
// determine), the LP relaxation beside it (solved, or awaited when under way), and plans for the
// zoo models whose full program is too large for CBC's tree search in test time (ResNet-50,
// GoogLeNet, MobileNetV2): within the budget, no slower than the warm start, simulated peak equal
// to the measured one, gradients equal to autograd's.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <limits>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "halfway_budget.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/monet_planner.h"
#include "quick_profile.h"
#include "slow_relaxation.h"
#include "tiny_models.h"

namespace monet {
namespace {

TEST(MilpWithoutFixed, RemovesFixedColumnsAndWhatTheyDetermine) {
  // x0, x1 binary; y = x0 + x1 (equality: determined once both are fixed); z >= y, z <= 5;
  // x2 binary with x1 + x2 <= 1.
  Milp m;
  const int x0 = m.add_binary(1), x1 = m.add_binary(2), x2 = m.add_binary(-1);
  const int y = m.add_continuous(0, 0, 10), z = m.add_continuous(0.5, 0, 10);
  m.add_row({{x0, 1}, {x1, 1}, {y, -1}}, 0, 0);
  m.add_row({{z, 1}, {y, -1}}, 0, 1e30);
  m.add_row({{z, 1}}, -1e30, 5);
  m.add_row({{x1, 1}, {x2, 1}}, -1e30, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> fixed = {1, 1, nan, nan, nan};
  double offset = 0;
  const Milp sub = m.without_fixed(&fixed, &offset);
  EXPECT_DOUBLE_EQ(fixed[y], 2);      // determined by the equality row
  EXPECT_TRUE(std::isnan(fixed[z]));  // only bounded below by y
  EXPECT_DOUBLE_EQ(fixed[x2], 0);     // x1 + x2 <= 1 with x1 = 1 leaves x2 in [0, 0]
  EXPECT_DOUBLE_EQ(offset, 1 + 2);
  ASSERT_EQ(sub.columns(), 1);  // z
  EXPECT_TRUE(sub.satisfies({2}));
  EXPECT_TRUE(sub.satisfies({5}));
  EXPECT_FALSE(sub.satisfies({1.5}));  // z >= y = 2
  EXPECT_FALSE(sub.satisfies({6}));
}

TEST(MilpRelaxation, SolvedOrAwaitedWhenUnderWay) {
  // min -(x0 + x1 + x2) with 2 (x0 + x1 + x2) <= 3: LP optimum -1.5, integer optimum -1.
  Milp m;
  std::vector<std::pair<int, double>> row;
  for (int i = 0; i < 3; ++i) row.push_back({m.add_binary(-1), 2});
  m.add_row(row, -1e30, 3);
  const RelaxationBound lp = solve_relaxation(m, {10}, nullptr);
  ASSERT_TRUE(lp.solved);
  EXPECT_NEAR(lp.bound, -1.5, 1e-9);

  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.search_limit = SearchLimit::kWork;
  o.warm_start = {0, 0, 0};
  const MilpResult own = search_program(m, o);
  EXPECT_NEAR(own.lp_bound, -1.5, 1e-9);
  EXPECT_NEAR(own.objective, -1, 1e-9);
  // A relaxation under way elsewhere is awaited, not solved again: its bound is the one
  // reported (a made-up one here, to tell them apart).
  std::promise<RelaxationBound> elsewhere;
  elsewhere.set_value({true, false, -1.25, 0.5, {}});
  o.relaxation = elsewhere.get_future().share();
  const MilpResult awaited = search_program(m, o);
  EXPECT_DOUBLE_EQ(awaited.lp_bound, -1.25);
  EXPECT_DOUBLE_EQ(awaited.bound, -1.25);
  EXPECT_DOUBLE_EQ(awaited.lp_seconds, 0.5);
  EXPECT_NEAR(awaited.objective, -1, 1e-9);
}

TEST(RelaxationNeighbourhood, FixesWhatTheRelaxationSetsWholeAndSearchesTheRest) {
  // min -6 x0 - 4 x1 - x2 with 2 (x0 + x1 + x2) <= 5: the LP optimum is x = (1, 1, 0.5),
  // -10.5; the integer optimum (1, 1, 0), -10. From the warm start (0, 0, 1), 90% above the
  // bound, with no windows (no column has a position), only the relaxation neighbourhood
  // (x0 = x1 = 1 fixed, x2 free) can improve it, and it finds the optimum.
  Milp m;
  const int x0 = m.add_binary(-6), x1 = m.add_binary(-4), x2 = m.add_binary(-1);
  m.add_row({{x0, 2}, {x1, 2}, {x2, 2}}, -1e30, 5);
  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.search_limit = SearchLimit::kWork;
  o.warm_start = {0, 0, 1};
  o.neighbourhood.column_positions = {-1, -1, -1};
  o.relaxation = testing::slow_relaxation(m);
  const MilpResult r = search_program(m, o);
  EXPECT_NEAR(r.lp_bound, -10.5, 1e-9);
  EXPECT_NEAR(r.objective, -10, 1e-9);
  EXPECT_EQ(r.values, (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(r.neighbourhoods, 1);
  // Within 10% of the bound (the optimum, 5% above it), no relaxation neighbourhood.
  o.warm_start = {1, 1, 0};
  EXPECT_EQ(search_program(m, o).neighbourhoods, 0);
}

// Large programs (over 20,000 columns): the planner's default search is the
// neighbourhood search. (ResNet-152, ResNet-101's blocks three times deeper, took 4 of the
// suite's minutes for nothing ResNet-101 does not cover.)
std::vector<testing::TinyModel> large_programs() {
  return testing::tiny_models_named(
      {"resnet34", "resnet50", "resnet101", "googlenet", "mobilenet_v2"});
}

class NeighbourhoodOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

// At two budgets: store-all's peak (store-all is a warm start the program accepts, and
// faster implementations need memory it does not have everywhere), and halfway between
// the leanest heuristic plan's peak and store-all's (segment keeping's warm start).
TEST_P(NeighbourhoodOnTinyModel, PlansFitTheBudgetAndMatchAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const SimulationResult warm = simulate(g, store_all_plan(g), costs);
  for (const int64_t budget : {warm.peak_bytes, testing::halfway_budget(g, costs)}) {
    MonetOptions o;
    o.budget_bytes = budget;
    o.solver.time_limit_seconds = 8;
    o.solver.search_limit = SearchLimit::kWork;
    o.solver.relative_gap = 0.01;
    o.solver.strategy = SearchStrategy::kNeighbourhood;
    o.solver.neighbourhood.work_rounds = 4;  // sub-programs: enough to leave the warm start
    const MonetResult r = plan_monet(g, costs, o);
    ASSERT_TRUE(r.found) << "budget " << budget;
    EXPECT_GT(r.size.columns, 20000);
    EXPECT_LE(r.predicted.peak_bytes, o.budget_bytes);
    if (budget == warm.peak_bytes) {
      EXPECT_LE(r.predicted.seconds, warm.seconds * (1 + 1e-9));
    }
    // The relaxation's bound holds to the LP solver's absolute tolerance (1e-7 on an
    // objective in seconds, a few 1e-3 here).
    if (r.solve.lp_bound > -1e300) {
      EXPECT_LE(r.solve.lp_bound, r.objective_seconds + 1e-6);
    }
    ModelState s = state.clone();
    Executor executor(g, s, r.plan);
    const ExecutionResult run = executor.run(batch);
    EXPECT_EQ(run.peak_bytes - run.start_bytes, r.predicted.peak_above_start());
    EXPECT_LT(testing::max_gradient_error(g, r.plan), 1e-9);
    std::cout << GetParam().name << ": " << r.size.columns << " columns, budget " << budget
              << " B, peak " << r.predicted.peak_bytes << " B, " << r.predicted.seconds
              << " s/iter (store-all " << warm.seconds << "), " << r.solve.neighbourhoods
              << " neighbourhoods, LP bound " << r.solve.lp_bound << ", gap " << r.solve.gap
              << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, NeighbourhoodOnTinyModel, ::testing::ValuesIn(large_programs()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
