// Greedy descent on tiny zoo models: where store-all fits it changes nothing; at a budget
// halfway between the smallest memory-lean checkpointing plan and store-all, it descends from
// store-all with the fastest (or default) implementations to a plan within the budget, below
// store-all's peak, whose measured peak is the simulated one and whose gradients match autograd's;
// and it reaches below the smallest memory-lean checkpointing plan on some model.
#include <gtest/gtest.h>

#include <iostream>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "halfway_budget.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/greedy_descent.h"
#include "planner/heuristics/lean_plans.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

class GreedyDescentOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

const auto kNever = [] { return false; };

TEST_P(GreedyDescentOnTinyModel, ReachesTheBudgetAndMatchesAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const ScheduleChoices fastest =
      implementation_choices(g, costs, ImplementationPreference::kFastest);
  const ScheduleChoices lean = lean_choices(g, costs);
  const SimulationResult all = simulate(g, build_schedule(g, fastest, "store-all"), costs);

  // Store-all fits: nothing to do.
  const ScheduleChoices unchanged = greedy_descent(g, costs, fastest, lean, all.peak_bytes, kNever);
  EXPECT_EQ(unchanged.forward, fastest.forward);
  EXPECT_EQ(unchanged.backward, fastest.backward);
  EXPECT_EQ(unchanged.drop_after_forward, fastest.drop_after_forward);

  // Halfway between the leanest plan and store-all with the default implementations. The
  // descent starts from store-all with the fastest ones, or, where those (chosen by
  // measured time, which varies with the machine's load) already fit, from the defaults.
  const int64_t budget = testing::halfway_budget(g, costs);
  const ScheduleChoices start = all.peak_bytes > budget ? fastest : default_choices(g);
  ASSERT_LT(budget, simulate(g, build_schedule(g, start, "store-all"), costs).peak_bytes);
  const Plan plan =
      build_schedule(g, greedy_descent(g, costs, start, lean, budget, kNever), "descent");
  const SimulationResult sim = simulate(g, plan, costs);
  EXPECT_LE(sim.peak_bytes, budget);
  testing::expect_runs_as_simulated(g, state, batch, plan, sim);
  std::cout << GetParam().name << ": budget " << budget << " B, store-all " << all.peak_bytes
            << " B " << all.seconds << " s; descent " << sim.peak_bytes << " B " << sim.seconds
            << " s\n";
}

INSTANTIATE_TEST_SUITE_P(Zoo, GreedyDescentOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named(
                             {"resnet18", "vgg11", "unet", "googlenet", "mobilenet_v2"})),
                         [](const auto& info) { return info.param.name; });

// Below the smallest memory-lean checkpointing plan, where checkpointing alone cannot go.
TEST(GreedyDescent, ReachesBelowTheSmallestLeanCheckpointingPlan) {
  MemoryTracker::install();
  const auto tiny = testing::tiny_models_named({"unet"});
  const Graph g = build_zoo_model(tiny[0].name, tiny[0].config);
  const CostModel costs = testing::quick_profile(g, ModelState::initialize(g, 0), make_batch(g, 1));
  const ScheduleChoices lean = lean_choices(g, costs);
  const int64_t smallest = simulate(g, best_lean_plan(g, costs, -1), costs).peak_bytes;
  const Plan plan =
      build_schedule(g, greedy_descent(g, costs, lean, lean, smallest - 1, kNever), "descent");
  EXPECT_LT(simulate(g, plan, costs).peak_bytes, smallest);
  EXPECT_LT(testing::max_gradient_error(g, plan), 1e-9);
}

}  // namespace
}  // namespace monet
