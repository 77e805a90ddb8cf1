// The simulator against the executor: for every zoo model (tiny configuration) and every
// kind of plan — store-all, Chen sqrt(n), plans using every implementation, random
// plans — the predicted peak equals the measured one. Also checks the profiler's
// declared result sizes (views, in-place outputs) against what the kernels allocate.
#include <gtest/gtest.h>

#include <set>

#include "cost/profiler.h"
#include "graph/model_zoo.h"
#include "plan/simulator.h"
#include "planner/baseline_plans.h"
#include "quick_profile.h"
#include "rotated_plan.h"
#include "runtime/executor.h"
#include "tiny_models.h"

namespace monet {
namespace {

// Allocator slack: the executor's measured peak may differ from the prediction by at
// most this fraction of the iteration's own memory (peak above start).
constexpr double kPeakTolerance = 0.01;

class SimulatorOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

// Measured (executor) and predicted (simulator) peak above the iteration start.
struct PeakPair {
  int64_t measured = 0, predicted = 0;
};

PeakPair compare(const Graph& g, const ModelState& state, const Batch& batch, const Plan& plan,
                 const CostModel& costs) {
  ModelState s = state.clone();
  Executor executor(g, s, plan);
  const ExecutionResult got = executor.run(batch);
  const SimulationResult sim = simulate(g, plan, costs);
  EXPECT_EQ(sim.steps.size(), plan.program.size());
  return {got.peak_bytes - got.start_bytes, sim.peak_above_start()};
}

TEST_P(SimulatorOnTinyModel, PredictedPeakEqualsMeasured) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  EXPECT_EQ(
      iteration_start_bytes(g), state.bytes() + [&] {
        int64_t b = 0;
        for (const auto& [id, t] : batch) b += t.nbytes();
        return b;
      }());

  std::vector<std::pair<std::string, Plan>> plans = {{"storeall", store_all_plan(g)},
                                                     {"chen", chen_plan(g)}};
  std::set<std::string> used;
  for (int variant = 0; variant < 4; ++variant)
    plans.push_back(
        {"rotated" + std::to_string(variant), testing::rotated_plan(g, variant, &used)});
  // The same 17 random plans per model as the gradient tests (204 over the zoo).
  for (uint64_t seed = 0; seed < 17; ++seed)
    plans.push_back({"random" + std::to_string(seed), random_plan(g, 1000 + seed)});
  double worst = 0;
  for (const auto& [name, plan] : plans) {
    const PeakPair p = compare(g, state, batch, plan, costs);
    const double err = std::abs(static_cast<double>(p.predicted - p.measured)) / p.measured;
    EXPECT_LE(err, kPeakTolerance) << name << ": predicted " << p.predicted << " B, measured "
                                   << p.measured << " B above start";
    worst = std::max(worst, err);
  }
  std::cout << GetParam().name << ": largest simulator peak error " << worst * 100 << "% over "
            << plans.size() << " plans\n";
}

// Each implementation's measured result bytes equal what op_impl declares (views and
// in-place outputs allocate nothing; every other result is a new tensor).
TEST_P(SimulatorOnTinyModel, ProfiledResultBytesMatchDeclarations) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const auto needs_grad = values_needing_grad(g);
  const auto needs_backward = nodes_needing_backward(g);
  for (const auto& n : g.nodes()) {
    for (const auto& f : forward_impls(g, n)) {
      EXPECT_EQ(costs.forward(g, n.id, f.name).result_bytes, forward_result_bytes(g, n, f, true))
          << n.name << " forward " << f.name;
    }
    if (!needs_backward[n.id]) continue;
    for (const auto& b : backward_impls(g, n)) {
      const auto mask = backward_grad_mask(g, n, b.part, needs_grad);
      EXPECT_EQ(costs.backward(g, n.id, b.part, b.name).result_bytes,
                backward_result_bytes(g, n, b, mask))
          << n.name << " backward " << backward_part_name(b.part) << " " << b.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, SimulatorOnTinyModel, ::testing::ValuesIn(testing::tiny_models()),
                         [](const auto& info) { return info.param.name; });

TEST(CostModel, JsonRoundTripAndRefusesAnotherGraph) {
  MemoryTracker::install();
  auto tiny = testing::tiny_models();
  const Graph a = build_zoo_model(tiny[0].name, tiny[0].config);
  const Graph b = build_zoo_model(tiny[5].name, tiny[5].config);
  const CostModel costs = testing::quick_profile(a, ModelState::initialize(a, 0), make_batch(a, 1));
  const auto j = cost_model_to_json(a, costs);
  const CostModel back = cost_model_from_json(a, j);
  ASSERT_EQ(back.nodes.size(), costs.nodes.size());
  const auto& n = a.nodes().front();
  EXPECT_EQ(back.forward(a, n.id, "default").workspace_bytes,
            costs.forward(a, n.id, "default").workspace_bytes);
  EXPECT_THROW(cost_model_from_json(b, j), CostError);
  EXPECT_THROW(cost_model_from_json(a, nlohmann::json::parse("{\"format\": 3}")), CostError);
}

}  // namespace
}  // namespace monet
