// The lean planner on every tiny zoo model: lean implementation choices save memory over
// the defaults, its plans run with gradients equal to autograd's and measured peaks
// equal to the simulator's, it honours a budget, and the MONeT program accepts the plans
// it can express (warm starts below the budgets default checkpointing reaches).
#include <gtest/gtest.h>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/program/monet_program.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

class LeanOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(LeanOnTinyModel, SavesMemoryFitsBudgetsAndMatchesAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const SimulationResult store_all = simulate(g, store_all_plan(g), costs);
  const Plan lean_all = build_schedule(g, lean_choices(g, costs), "lean");
  const SimulationResult lean_all_sim = simulate(g, lean_all, costs);
  // Lean choices minimise each operator's own bytes, not the peak: where the peak sits
  // elsewhere they can raise it a little (tiny VGG-19: 608 B above store-all's). The lean
  // planner also offers store-all, so its smallest plan holds no more than either.
  const Plan smallest = best_lean_plan(g, costs, -1);
  const SimulationResult smallest_sim = simulate(g, smallest, costs);
  EXPECT_LE(smallest_sim.peak_bytes, lean_all_sim.peak_bytes);
  EXPECT_LE(smallest_sim.peak_bytes, store_all.peak_bytes);
  for (int64_t budget : {smallest_sim.peak_bytes, store_all.peak_bytes}) {
    const Plan plan = best_lean_plan(g, costs, budget);
    const SimulationResult sim = simulate(g, plan, costs);
    EXPECT_LE(sim.peak_bytes, budget);
    testing::expect_runs_as_simulated(g, state, batch, plan, sim);
    // Where the program can express the plan (assignment_of does not cover every
    // in-place pattern), it accepts it at the plan's own peak: a valid warm start. Known
    // discrepancy: on some plans (tiny ResNet-50/101/152, depending on which plan the
    // profiled times make fastest) one late backward-stage row of the program
    // counts 2-8 KiB more than the simulator (exact against the executor), so the
    // program is conservative there; rows are in MiB, hence the 1/64 MiB tolerance.
    const MonetProgram program(g, costs, {MonetMode::kAll, BudgetRows::kFixed, sim.peak_bytes});
    const std::vector<double> x = program.assignment_of(plan);
    if (!x.empty()) {
      for (const auto& [row, excess] : program.milp().violations(x))
        EXPECT_LE(excess, 1.0 / 64)
            << "budget " << budget << ": row " << row << " of " << program.milp().rows()
            << " exceeds it by " << excess << " MiB";
    }
    std::cout << GetParam().name << ": lean plan at budget " << budget << " B: peak "
              << sim.peak_bytes << " B (store-all " << store_all.peak_bytes << " B), "
              << sim.seconds << " s (store-all " << store_all.seconds << " s)\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, LeanOnTinyModel, ::testing::ValuesIn(testing::tiny_models()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
