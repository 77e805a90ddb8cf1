// The MONeT program's availability rows and their refinements, alternative reads and
// spans (monet_program.h): every plan the program accepts without them it accepts with
// them (they hold for every 0-1 solution), and its LP relaxation with them is a bound
// between the plain relaxation's and the best plan found.
#include <gtest/gtest.h>

#include <iostream>

#include "base/memory_tracker.h"
#include "graph/zoo/model_zoo.h"
#include "halfway_budget.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/program/monet_program.h"
#include "planner/solver/milp.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

class AvailabilityRows : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(AvailabilityRows, AcceptEveryPlanAndBoundBetweenRelaxationAndOptimum) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const CostModel costs = testing::quick_profile(g, ModelState::initialize(g, 0), make_batch(g, 1));
  const int64_t budget = testing::halfway_budget(g, costs);
  const MonetProgram plain(
      g, costs, {MonetMode::kAll, BudgetRows::kFixed, budget, /*availability_rows=*/false});
  const MonetProgram tight(g, costs, {MonetMode::kAll, BudgetRows::kFixed, budget});
  ASSERT_GT(tight.milp().rows(), plain.milp().rows());

  // Plans of every checkpointing family, store-all included: what the plain program
  // accepts, the tight one accepts at the same objective.
  std::vector<Plan> plans = {chen_plan(g)};
  for (const ScheduleChoices& choices :
       {default_choices(g), lean_choices(g, costs),
        implementation_choices(g, costs, ImplementationPreference::kFastest)})
    for (Plan& p : checkpoint_family(g, choices, "")) plans.push_back(std::move(p));
  int accepted = 0;
  double best = 1e300;
  for (const Plan& p : plans) {
    const std::vector<double> x = plain.assignment_of(p);
    if (x.empty() || !plain.milp().satisfies(x)) continue;
    ++accepted;
    const std::vector<double> y = tight.assignment_of(p);
    ASSERT_FALSE(y.empty());
    EXPECT_TRUE(tight.milp().satisfies(y)) << "a plan the plain program accepts is cut off";
    EXPECT_NEAR(tight.milp().objective_of(y), plain.milp().objective_of(x), 1e-9);
    best = std::min(best, tight.milp().objective_of(y));
  }
  ASSERT_GT(accepted, 0);

  // The LP bound with the rows lies between the plain one and every accepted plan. (That
  // the rows leave the optimum unchanged is checked against exhaustive enumeration in
  // monet_optimality_test.cpp, whose programs have them.)
  const RelaxationBound p = solve_relaxation(plain.milp(), {120}, nullptr);
  const RelaxationBound t = solve_relaxation(tight.milp(), {120}, nullptr);
  ASSERT_TRUE(p.solved);
  ASSERT_TRUE(t.solved);
  // Within CLP's tolerances: its absolute dual tolerance (1e-7) is large beside column
  // costs of microseconds; 4.5e-5 of the bound was seen on tiny ResNet-50.
  EXPECT_GE(t.bound, p.bound * (1 - 1e-4));
  EXPECT_LE(t.bound, best * (1 + 1e-6));
  std::cout << GetParam().name << ": budget " << budget << " B, LP bound " << p.bound
            << " s without the availability rows, " << t.bound << " s with them; best of "
            << accepted << " checkpointing plans " << best << " s\n";
}

INSTANTIATE_TEST_SUITE_P(Tiny, AvailabilityRows,
                         ::testing::ValuesIn(testing::tiny_models_named({"resnet50", "mobilenet_v2",
                                                                         "unet"})),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
