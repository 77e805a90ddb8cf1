// Rematerialization on tiny zoo models: from store-all with every forward at its
// implementation of most workspace, it lowers the simulated peak towards a budget below
// it, by recomputations and by switching the peak instruction to an implementation with
// less workspace, and the plan it returns runs as simulated, with autograd's gradients.
#include "planner/heuristics/rematerialization.h"

#include <gtest/gtest.h>

#include <limits>

#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "plan/plan_validator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/chain/chain_checkpointing.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

class RematerializationOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(RematerializationOnTinyModel, LowersThePeakAndRunsAsSimulated) {
  const testing::ProfiledTinyModel p(GetParam());
  const auto& [g, state, batch, costs] = p;
  SimulatedPlan start;
  start.plan = store_all_plan(g);
  // Every forward out of place at its implementation of most workspace that keeps no
  // intermediate (the backward implementations of store-all read no intermediate).
  for (Instruction& in : start.plan.program) {
    if (in.kind != InstrKind::kForward) continue;
    const Node& n = g.node(in.node);
    const ForwardImplInfo current = find_forward_impl(forward_impls(g, n), n, in.impl);
    if (current.inplace || current.emits_intermediate || current.output_aliases_input) continue;
    for (const ForwardImplInfo& f : forward_impls(g, n))
      if (!f.inplace && !f.emits_intermediate && !f.output_aliases_input && !f.gist_encoding &&
          costs.forward(g, n.id, f.name).workspace_bytes >
              costs.forward(g, n.id, in.impl).workspace_bytes)
        in.impl = f.name;
  }
  validate_plan(g, start.plan);
  start.simulated = simulate(g, start.plan, costs);
  RematerializationOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = start.simulated.start_bytes + start.simulated.peak_above_start() * 3 / 4;
  const SimulatedPlan lowered = rematerialize(g, costs, start, o);
  EXPECT_LT(lowered.simulated.peak_bytes, start.simulated.peak_bytes);
  validate_plan(g, lowered.plan);
  EXPECT_EQ(simulate(g, lowered.plan, costs).peak_bytes, lowered.simulated.peak_bytes);
  testing::expect_runs_as_simulated(g, state, batch, lowered.plan, lowered.simulated);
  // With no tensor to recompute, switching implementations alone lowers the peak (on
  // ResNet-18 and GoogLeNet its instruction has a leaner one; on MobileNetV2 none).
  if (GetParam().name == "mobilenet_v2") return;
  o.candidates_per_move = 0;
  const SimulatedPlan switched = rematerialize(g, costs, start, o);
  EXPECT_LT(switched.simulated.peak_bytes, start.simulated.peak_bytes);
  EXPECT_EQ(switched.plan.program.size(), start.plan.program.size());
  testing::expect_runs_as_simulated(g, state, batch, switched.plan, switched.simulated);
}

// Chain checkpointing's fastest schedule keeps whole segments from their forward run; many
// tensors alive across its peak are made from tensors no longer alive there. Recomputing
// those inputs too (a chain of producers) lowers the peak no less than recomputing only
// tensors whose inputs are alive, and further on GoogLeNet and MobileNetV2 (on ResNet-18,
// with the test costs, both reach the same peak).
TEST_P(RematerializationOnTinyModel, RecomputesInputsNoLongerAliveAndRunsAsSimulated) {
  const testing::ProfiledTinyModel p(GetParam());
  const auto& [g, state, batch, costs] = p;
  ChainCheckpointingOptions co;
  co.search_limit = SearchLimit::kWork;
  co.budget_bytes = std::numeric_limits<int64_t>::max();
  const SimulatedPlan start = chain_checkpointing_plans(g, costs, co).within_budget.front();
  RematerializationOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = start.simulated.start_bytes;  // out of reach: as low as the moves get
  o.recomputed_input_depth = 0;
  const SimulatedPlan alone = rematerialize(g, costs, start, o);
  o.recomputed_input_depth = kRecomputedInputDepth;
  const SimulatedPlan chained = rematerialize(g, costs, start, o);
  EXPECT_LE(chained.simulated.peak_bytes, alone.simulated.peak_bytes);
  if (GetParam().name != "resnet18") {
    EXPECT_LT(chained.simulated.peak_bytes, alone.simulated.peak_bytes);
  }
  validate_plan(g, chained.plan);
  testing::expect_runs_as_simulated(g, state, batch, chained.plan, chained.simulated);
}

INSTANTIATE_TEST_SUITE_P(Zoo, RematerializationOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named({"resnet18", "googlenet",
                                                                         "mobilenet_v2"})),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
