// Fused optimizer updates (UpdateMode::kFused): each parameter updated inside the
// backward as soon as the plan no longer uses it. Training equals torch::optim on plain
// LibTorch autograd in float64 (SGD with momentum, dampening, Nesterov and weight decay;
// Adam, AMSGrad, AdamW; a learning-rate schedule), the optimizer's state continues under
// its own step(), and the freed gradients are in the simulator, the executor's measured
// peak and the memory floor alike.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "cost/simulator.h"
#include "model_specs.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/memory_floor.h"
#include "runtime/executor.h"
#include "runtime/parameter_update.h"
#include "tiny_models.h"
#include "training_equivalence.h"

namespace monet {
namespace {

using testing::MakeOptimizer;

struct OptimizerCase {
  const char* name;
  MakeOptimizer make;
};

std::vector<OptimizerCase> optimizer_cases() {
  using namespace torch::optim;
  return {
      {"sgd-momentum",
       [](const auto& p) { return std::make_unique<SGD>(p, SGDOptions(0.01).momentum(0.9)); }},
      {"sgd-nesterov-weight-decay",
       [](const auto& p) {
         return std::make_unique<SGD>(
             p, SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(1e-4));
       }},
      {"sgd-dampening",
       [](const auto& p) {
         return std::make_unique<SGD>(p, SGDOptions(0.01).momentum(0.9).dampening(0.1));
       }},
      {"adam-weight-decay",
       [](const auto& p) {
         return std::make_unique<Adam>(p, AdamOptions(1e-3).weight_decay(1e-4));
       }},
      {"amsgrad",
       [](const auto& p) { return std::make_unique<Adam>(p, AdamOptions(1e-3).amsgrad(true)); }},
      {"adamw",
       [](const auto& p) {
         return std::make_unique<AdamW>(p, AdamWOptions(1e-3).weight_decay(1e-2));
       }},
  };
}

ModelSpec training_spec(const std::string& name) {
  for (const auto& t : testing::tiny_models_named({name}))
    return testing::zoo_spec(t.name, 8, t.config.image, t.config.width, t.config.classes);
  throw std::logic_error("no tiny model " + name);
}

class FusedTraining : public ::testing::TestWithParam<std::string> {};

// Under the store-all plan every kernel is autograd's own, so the gradients are autograd's
// to the last bit, and so are the fused updates' results: the arithmetic is LibTorch's.
TEST_P(FusedTraining, StoreAllPlanUpdatesAsTorchOptimToTheLastBit) {
  const ModelSpec spec = training_spec(GetParam());
  const std::string plan = testing::fused_plan(spec, true);
  for (const OptimizerCase& c : optimizer_cases())
    EXPECT_EQ(testing::fused_training_error(spec, plan, c.make, 5, 5), 0.0) << c.name;
}

// Under a MONeT plan (recomputation, other kernels): rounding only, in float64.
TEST_P(FusedTraining, MonetPlanTrainsAsTorchOptimInFloat64) {
  const ModelSpec spec = training_spec(GetParam());
  const std::string plan = testing::fused_plan(spec, false);
  for (const OptimizerCase& c : optimizer_cases()) {
    const double err = testing::fused_training_error(spec, plan, c.make, 5, 5);
    std::printf("%s %s fused float64: largest relative error %.3g\n", GetParam().c_str(), c.name,
                err);
    EXPECT_LE(err, 1e-10) << c.name;
  }
}

// The optimizer's state after 3 fused steps is where LibTorch's step() finds it: 2 more
// steps of plain autograd and optimizer.step() continue as if every step had been plain.
TEST(FusedUpdates, StateAfterFusedStepsContinuesUnderTheOptimizersOwnStep) {
  const ModelSpec spec = training_spec("resnet18");
  const std::string plan = testing::fused_plan(spec, true);
  for (const OptimizerCase& c : optimizer_cases())
    EXPECT_EQ(testing::fused_training_error(spec, plan, c.make, 5, 3), 0.0) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Zoo, FusedTraining, ::testing::Values("resnet18", "mobilenet_v2"),
                         [](const auto& info) { return info.param; });

// Gradients freed at their update: the simulator predicts the executor's measured peak
// exactly, below the after-backward plan's, and the memory floor drops with it.
TEST(FusedUpdates, SimulatorPredictsTheMeasuredPeakAndGradientsAreFreed) {
  MemoryTracker::install();
  Model model = Model::load(training_spec("resnet18"), 0);
  Model::Impl& m = *impl_of(model);
  Graph& g = m.graph;
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, m.state, batch);
  const Plan plan = store_all_plan(g);
  const SimulationResult after = simulate(g, plan, costs);
  const int64_t after_floor = memory_floor_bytes(g, costs);
  g.set_update_mode(UpdateMode::kFused);
  const SimulationResult fused = simulate(g, plan, costs);
  EXPECT_LT(fused.peak_bytes, after.peak_bytes);
  EXPECT_LT(memory_floor_bytes(g, costs), after_floor);
  EXPECT_LE(memory_floor_bytes(g, costs), fused.peak_bytes);
  ModelState state = m.state.clone();
  Executor executor(g, state, plan);
  int updates = 0;
  ExecutionOptions eo;
  eo.update_parameter = [&](int, const at::Tensor& grad) {
    EXPECT_TRUE(grad.defined());
    ++updates;
  };
  const ExecutionResult run = executor.run(batch, eo);
  EXPECT_EQ(updates, static_cast<int>(g.parameters().size()));
  EXPECT_EQ(run.peak_bytes - run.start_bytes, fused.peak_above_start());
  for (const auto& grad : run.gradients) EXPECT_FALSE(grad.defined());
  std::printf("store-all: %lld B above the start after the backward, %lld B fused\n",
              static_cast<long long>(after.peak_above_start()),
              static_cast<long long>(fused.peak_above_start()));
}

// A plan file records its update mode; a graph of the other mode refuses it by name.
TEST(FusedUpdates, PlanFileRecordsTheModeAndAGraphOfTheOtherModeRefusesIt) {
  Model model = Model::load(training_spec("resnet18"), 0);
  Graph& g = impl_of(model)->graph;
  g.set_update_mode(UpdateMode::kFused);
  const nlohmann::json j = plan_to_json(g, store_all_plan(g));
  EXPECT_EQ(j.at("optimizer_update"), "fused");
  EXPECT_EQ(plan_update_mode(j), UpdateMode::kFused);
  g.set_update_mode(UpdateMode::kAfterBackward);
  try {
    plan_from_json(g, j);
    FAIL() << "an after-backward graph took a fused plan";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("fused"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(plan_to_json(g, store_all_plan(g)).contains("optimizer_update"));
}

TEST(FusedUpdates, UseOptimizerRefusesOtherOptimizersAndAfterBackwardModels) {
  const ModelSpec spec = training_spec("resnet18");
  Model model = Model::load(spec, 0);
  PlanOptions po;
  po.planner = "storeall";
  po.use_cache = false;
  po.progress = false;
  po.optimizer_update = OptimizerUpdate::kFused;
  PlannedModel planned(model, po);
  const Batch batch = make_batch(impl_of(model)->graph, 1);
  const at::Tensor x = batch.at(impl_of(model)->input_values[0]);
  const at::Tensor y = batch.at(impl_of(model)->target_value);
  EXPECT_THROW(planned.step(x, y), std::logic_error);  // no optimizer yet
  torch::optim::Adagrad adagrad(model.parameters(), torch::optim::AdagradOptions(0.1));
  try {
    planned.use_optimizer(adagrad);
    FAIL() << "Adagrad was taken for fused updates";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("after-backward"), std::string::npos) << e.what();
  }
  Model other = Model::load(spec, 0);
  po.optimizer_update = OptimizerUpdate::kAfterBackward;
  PlannedModel after(other, po);
  torch::optim::SGD sgd(other.parameters(), torch::optim::SGDOptions(0.1));
  EXPECT_THROW(after.use_optimizer(sgd), std::logic_error);
}

}  // namespace
}  // namespace monet
