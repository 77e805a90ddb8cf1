// without_unread_recomputations on tiny zoo models: a plan that recomputes the whole
// forward pass before its backward loses the recomputations no backward (and no kept
// recomputation) reads, and still runs as simulated with autograd's gradients; plans
// without such recomputations are left as they are.
#include "plan/unread_recomputations.h"

#include <gtest/gtest.h>

#include "gradient_check.h"
#include "plan/plan_validator.h"
#include "planner/baselines/baseline_plans.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

class UnreadRecomputationsOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

// Store-all with every forward instruction run again, out of place, before the backward.
Plan forward_run_twice(const Graph& g) {
  Plan plan = store_all_plan(g);
  std::vector<Instruction> again;
  size_t first_backward = 0;
  while (plan.program[first_backward].kind != InstrKind::kBackward) {
    Instruction in = plan.program[first_backward++];
    if (in.kind != InstrKind::kForward) continue;
    in.impl = out_of_place(in.impl);
    again.push_back(in);
  }
  plan.program.insert(plan.program.begin() + first_backward, again.begin(), again.end());
  return plan;
}

// The same with an explicit free of the loss's output right after its recomputation.
Plan forward_run_twice_with_frees(const Graph& g) {
  Plan plan = forward_run_twice(g);
  size_t at = plan.program.size();
  while (plan.program[at - 1].kind != InstrKind::kForward ||
         plan.program[at - 1].node != g.value(g.loss_value()).producer)
    --at;
  plan.program.insert(plan.program.begin() + at, {InstrKind::kFree, plan.program[at - 1].node, "",
                                                  BackwardPart::kAll, Slot::kOutput});
  return plan;
}

TEST_P(UnreadRecomputationsOnTinyModel, DropsWhatNothingReadsAndRunsAsSimulated) {
  const testing::ProfiledTinyModel p(GetParam());
  const auto& [g, state, batch, costs] = p;
  const Plan store_all = store_all_plan(g);
  EXPECT_EQ(without_unread_recomputations(g, store_all).program.size(), store_all.program.size());

  const Plan twice = forward_run_twice(g);
  validate_plan(g, twice);
  const Plan pruned = without_unread_recomputations(g, twice);
  // The loss, at least, is read by no backward: its recomputation goes.
  ASSERT_LT(pruned.program.size(), twice.program.size());
  EXPECT_EQ(without_unread_recomputations(g, pruned).program.size(), pruned.program.size());
  validate_plan(g, pruned);
  const SimulationResult before = simulate(g, twice, costs), after = simulate(g, pruned, costs);
  EXPECT_LE(after.peak_bytes, before.peak_bytes);
  EXPECT_LT(after.seconds, before.seconds);
  testing::expect_runs_as_simulated(g, state, batch, pruned, after);

  // The loss's recomputation goes, and with it the free of its output.
  const Plan with_free = forward_run_twice_with_frees(g);
  validate_plan(g, with_free);
  const Plan pruned_with_free = without_unread_recomputations(g, with_free);
  for (const Instruction& in : pruned_with_free.program) EXPECT_NE(in.kind, InstrKind::kFree);
  EXPECT_EQ(pruned_with_free.program.size(), pruned.program.size());
  validate_plan(g, pruned_with_free);
}

INSTANTIATE_TEST_SUITE_P(Zoo, UnreadRecomputationsOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named({"resnet18", "mobilenet_v2",
                                                                         "unet"})),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
