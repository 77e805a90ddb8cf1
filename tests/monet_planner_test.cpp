// The MONeT planner on tiny zoo models: at several budgets, the plan's simulated and
// measured peaks stay within the budget and its gradients equal autograd's; below the
// smallest feasible budget the planner finds nothing, and at that budget it does.
#include <gtest/gtest.h>

#include "cost/profiler.h"
#include "gradient_check.h"
#include "graph/model_zoo.h"
#include "plan/simulator.h"
#include "planner/baseline_plans.h"
#include "planner/monet_planner.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

// Models whose full program CBC solves in seconds on 2 cores (issue 6 scales the rest).
std::vector<testing::TinyModel> plannable() {
  std::vector<testing::TinyModel> out;
  for (const auto& m : testing::tiny_models())
    if (m.name == "vgg11" || m.name == "vgg16" || m.name == "resnet18") out.push_back(m);
  return out;
}

class MonetOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(MonetOnTinyModel, PlansFitTheBudgetAndMatchAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const SimulationResult store_all = simulate(g, store_all_plan(g), costs);
  const int64_t start = store_all.start_bytes, above = store_all.peak_above_start();
  MilpOptions solver;
  solver.time_limit_seconds = 10;
  solver.relative_gap = 0.01;
  const MinimumBudget smallest = minimum_budget(g, costs, MonetMode::kAll, solver);
  ASSERT_GT(smallest.bytes, start);
  std::cout << GetParam().name << ": store-all " << store_all.peak_bytes << " B, smallest budget "
            << smallest.bytes << " B (" << (smallest.proven ? "proven" : "best found") << ")\n";
  for (double f : {1.0, 0.8, 0.6}) {
    const int64_t budget =
        std::max<int64_t>(start + static_cast<int64_t>(f * above), smallest.bytes);
    for (MonetMode mode : {MonetMode::kAll, MonetMode::kNoOp}) {
      MonetOptions o;
      o.budget_bytes = budget;
      o.mode = mode;
      o.solver = solver;
      const MonetResult r = plan_monet(g, costs, o);
      if (mode == MonetMode::kNoOp && !r.found) continue;  // checkpointing alone may not fit
      ASSERT_TRUE(r.found) << monet_mode_name(mode) << " found no plan for " << budget << " B";
      EXPECT_LE(r.predicted.peak_bytes, budget);
      ModelState s = state.clone();
      Executor executor(g, s, r.plan);
      const ExecutionResult run = executor.run(batch);
      // Measured against the same start as the simulation: the allocator counts exactly.
      EXPECT_LE(run.peak_bytes - run.start_bytes, budget - start)
          << monet_mode_name(mode) << " at " << f;
      EXPECT_EQ(run.peak_bytes - run.start_bytes, r.predicted.peak_above_start());
      const double err = testing::max_gradient_error(g, r.plan);
      std::cout << "  " << monet_mode_name(mode) << " budget " << budget << " B: peak "
                << r.predicted.peak_bytes << " B, predicted " << r.predicted.seconds
                << " s (store-all " << store_all.seconds << " s), gradient error " << err << "\n";
    }
  }
  // Below the proven smallest budget there is no plan.
  if (smallest.proven) {
    MonetOptions o;
    o.budget_bytes = smallest.bound_bytes - 64 * 1024;
    o.solver = solver;
    EXPECT_FALSE(plan_monet(g, costs, o).found);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, MonetOnTinyModel, ::testing::ValuesIn(plannable()),
                         [](const auto& info) { return info.param.name; });

TEST(MonetModes, NamesRoundTrip) {
  for (const char* n :
       {"monet", "monet-noop", "monet-conv", "monet-out", "monet-int", "monet-inplace"})
    EXPECT_STREQ(monet_mode_name(monet_mode_from_name(n)), n);
  EXPECT_THROW(monet_mode_from_name("gurobi"), std::invalid_argument);
}

}  // namespace
}  // namespace monet
