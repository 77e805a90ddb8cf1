// Training through the public API: torch::optim steps on a PlannedModel equal plain
// LibTorch autograd's (losses, parameters, batch-norm statistics), in float64 and
// float32, for tiny zoo models under a MONeT plan.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "halfway_budget.h"
#include "planner/monet_planner.h"
#include "quick_profile.h"
#include "tiny_models.h"
#include "training_equivalence.h"

namespace monet {
namespace {

using testing::TinyModel;

ModelSpec spec_of(const TinyModel& t) {
  return {t.name, t.config.batch, t.config.image, t.config.width, t.config.classes, {}};
}

// A MONeT plan at a budget halfway between the leanest heuristic plan and store-all,
// written for PlanOptions::plan_file, with convolutions comparable in `dtype`.
std::string write_monet_plan(const Model& model, at::ScalarType dtype) {
  const Graph& g = model.impl()->graph;
  const CostModel costs = testing::quick_profile(g, model.impl()->state, make_batch(g, 1));
  MonetOptions o;
  o.budget_bytes = testing::halfway_budget(g, costs);
  o.solver.time_limit_seconds = 10;
  const MonetResult r = plan_monet(g, costs, o);
  EXPECT_TRUE(r.found);
  const Plan plan = testing::comparable_plan(g, r.plan, dtype);
  const std::string path = ::testing::TempDir() + "/training_" + g.fingerprint() + ".json";
  std::ofstream(path) << plan_to_json(g, plan).dump();
  return path;
}

double train_and_compare(const TinyModel& t, const std::string& plan, OptimizerKind kind,
                         at::ScalarType dtype) {
  Model model = Model::load(spec_of(t), 0);
  testing::convert_model(model, dtype);
  PlanOptions po;
  po.plan_file = plan;
  po.use_cache = false;
  po.progress = false;
  PlannedModel planned(model, po);
  return testing::training_error(model, planned, kind, 5, [&](int s) {
    return testing::test_batch(model, 100 + s, dtype);
  });
}

class TrainingEquivalence : public ::testing::TestWithParam<TinyModel> {};

TEST_P(TrainingEquivalence, SgdMomentumAndAdamMatchAutogradInFloat64) {
  const std::string plan = write_monet_plan(Model::load(spec_of(GetParam()), 0), at::kDouble);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    const double err = train_and_compare(GetParam(), plan, kind, at::kDouble);
    EXPECT_LE(err, 1e-10) << optimizer_kind_name(kind);
    std::printf("%s %s float64: largest relative error of loss, parameters, buffers %.3g\n",
                GetParam().name.c_str(), optimizer_kind_name(kind), err);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, TrainingEquivalence,
    ::testing::ValuesIn(testing::tiny_models_named({"resnet18", "mobilenet_v2", "googlenet", "unet"})),
    [](const auto& info) { return info.param.name; });

// float32: the plan's kernels round differently from autograd's (recomputation, other
// backward formulas), so parameters drift by rounding only.
TEST(TrainingFloat32, ErrorsStayAtRoundingLevel) {
  const TinyModel t = testing::tiny_models_named({"resnet18"}).at(0);
  const std::string plan = write_monet_plan(Model::load(spec_of(t), 0), at::kFloat);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    const double err = train_and_compare(t, plan, kind, at::kFloat);
    EXPECT_LE(err, 1e-3) << optimizer_kind_name(kind);
    std::printf("resnet18 %s float32: largest relative error %.3g\n", optimizer_kind_name(kind), err);
  }
}

}  // namespace
}  // namespace monet
