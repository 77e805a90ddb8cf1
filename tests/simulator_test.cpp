// The simulator against the executor: for every zoo model (tiny configuration) and every
// kind of plan — store-all, Chen sqrt(n), plans using every implementation, random
// plans — the predicted memory after every instruction, and the peak, equal the
// measured ones to the byte. Also checks the profiler's
// declared result sizes (views, in-place outputs) against what the kernels allocate.
#include <gtest/gtest.h>

#include <set>

#include "cost/profiler.h"
#include "cost/simulator.h"
#include "graph/zoo/model_zoo.h"
#include "planner/baselines/baseline_plans.h"
#include "quick_profile.h"
#include "rotated_plan.h"
#include "runtime/executor.h"
#include "tiny_models.h"

namespace monet {
namespace {

class SimulatorOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

// Runs `plan` and checks the simulator byte for byte: after every instruction the bytes
// allocated and the running peak (both above the iteration start) equal the measured
// ones. Returns the number of instructions where they differ (each one reported).
int mismatches(const Graph& g, const ModelState& state, const Batch& batch, const Plan& plan,
               const CostModel& costs, const std::string& name) {
  ModelState s = state.clone();
  Executor executor(g, s, plan);
  ExecutionOptions options;
  options.record_trace = true;
  const ExecutionResult got = executor.run(batch, options);
  const SimulationResult sim = simulate(g, plan, costs);
  EXPECT_EQ(sim.steps.size(), plan.program.size());
  // The trace opens with a sample at the start of the iteration.
  EXPECT_EQ(got.trace.size(), plan.program.size() + 1) << name;
  int bad = 0;
  int64_t running_peak = sim.start_bytes;
  for (size_t i = 0; i < sim.steps.size() && i + 1 < got.trace.size(); ++i) {
    const MemorySample& m = got.trace[i + 1];
    running_peak = std::max(running_peak, sim.steps[i].peak_bytes);
    const int64_t cur = m.current_bytes - got.start_bytes, peak = m.peak_bytes - got.start_bytes;
    if (cur == sim.steps[i].current_bytes - sim.start_bytes &&
        peak == running_peak - sim.start_bytes)
      continue;
    ADD_FAILURE() << name << ", instruction " << i << " (" << m.label << "): measured " << cur
                  << " B (peak " << peak << " B), predicted "
                  << sim.steps[i].current_bytes - sim.start_bytes << " B (peak "
                  << running_peak - sim.start_bytes << " B) above start";
    if (++bad == 3) break;
  }
  EXPECT_EQ(got.peak_bytes - got.start_bytes, sim.peak_above_start()) << name;
  return bad;
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
  int bad_plans = 0;
  for (const auto& [name, plan] : plans)
    bad_plans += mismatches(g, state, batch, plan, costs, name) > 0;
  std::cout << GetParam().name << ": " << plans.size() - bad_plans << " of " << plans.size()
            << " plans simulated byte for byte\n";
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
      const int64_t measured = costs.forward(g, n.id, f.name).result_bytes;
      if (f.size_is_bound)  // sparse storage: the declaration is its upper bound
        EXPECT_LE(measured, forward_result_bytes(g, n, f, true)) << n.name << " " << f.name;
      else
        EXPECT_EQ(measured, forward_result_bytes(g, n, f, true)) << n.name << " forward " << f.name;
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
