// Training through the public API: torch::optim steps on a PlannedModel equal plain
// LibTorch autograd's (losses, parameters, batch-norm statistics), in float64 and
// float32, for tiny zoo models under a MONeT plan.
#include <gtest/gtest.h>

#include <cstdio>

#include "model_specs.h"
#include "ops/op_impl.h"
#include "tiny_models.h"
#include "training_equivalence.h"

namespace monet {
namespace {

using testing::TinyModel;

ModelSpec spec_of(const TinyModel& t) {
  return testing::zoo_spec(t.name, t.config.batch, t.config.image, t.config.width,
                           t.config.classes);
}

// Training runs at batch 8: with the tiny models' batch of 2, the last stages' batch
// norms normalise 2 values per channel, a map so ill-conditioned that any two
// computations that round differently drift apart by 1e-7 within 5 steps.
ModelSpec training_spec_of(const TinyModel& t) {
  ModelSpec s = spec_of(t);
  s.batch = 8;
  return s;
}

class TrainingEquivalence : public ::testing::TestWithParam<TinyModel> {};

// The float64 bound: 1e-10 relative wherever LibTorch autograd agrees with itself that
// closely when only the input's rounding changes (testing::autograd_rounding_error);
// elsewhere 10 times what that rounding alone does. Gradient entries that are
// mathematically zero are set to zero on both sides first (testing::zero_rounding_noise):
// Adam would turn their rounding noise into steps as different as the noise. Autograd
// against itself then stays within 1e-10 on every model but MobileNetV2 under SGD with
// momentum (2.8e-10, from its last step).
double float64_tolerance(const ModelSpec& spec, OptimizerKind kind,
                         const testing::UserLoss& user_loss = nullptr) {
  const double rounding = testing::autograd_rounding_error(spec, kind, at::kDouble, user_loss);
  std::printf("%s %s: autograd against itself on inputs one unit in the last place away %.3g\n",
              spec.model.c_str(), optimizer_kind_name(kind), rounding);
  return rounding > 1e-10 ? 10 * rounding : 1e-10;
}

TEST_P(TrainingEquivalence, SgdMomentumAndAdamMatchAutogradInFloat64) {
  const ModelSpec spec = training_spec_of(GetParam());
  const std::string plan = testing::write_monet_plan(Model::load(spec, 0), at::kDouble);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    testing::NoiseCounts noise;
    const double err = testing::train_and_compare(spec, plan, kind, at::kDouble, &noise);
    EXPECT_LE(err, float64_tolerance(spec, kind)) << optimizer_kind_name(kind);
    std::printf(
        "%s %s float64: largest relative error of loss, parameters, buffers %.3g "
        "(%lld noise gradient entries set to zero, %d noise-only buffers left out)\n",
        GetParam().name.c_str(), optimizer_kind_name(kind), err,
        static_cast<long long>(noise.gradient_entries_zeroed), noise.buffers_left_out);
  }
}

// Under the store-all plan every kernel is autograd's own (the losses' backward included),
// so 5 Adam steps, the optimizer most sensitive to rounding, end on autograd's losses,
// parameters and buffers (noise-only running means left out, as everywhere) to the last bit.
TEST_P(TrainingEquivalence, StoreAllPlanTrainsAsAutogradToTheLastBit) {
  const ModelSpec spec = training_spec_of(GetParam());
  const Model model = Model::load(spec, 0);
  const Graph& g = impl_of(model)->graph;
  const std::string plan = testing::write_plan(g, store_all_plan(g), at::kDouble);
  EXPECT_EQ(testing::train_and_compare(spec, plan, OptimizerKind::kAdam, at::kDouble), 0.0);
}

// Every batch norm's backward output-activated (x - mean from the output, the paper's
// Appendix E), whatever plan the profiled times would choose: the one backward formula of
// the plans that rounds differently from autograd's, everywhere at once. Its operators run
// out of place, so that each batch norm's output is there for its backward.
TEST_P(TrainingEquivalence, OutputActivatedBatchNormsTrainAsAutogradInFloat64) {
  const ModelSpec spec = training_spec_of(GetParam());
  const Model model = Model::load(spec, 0);
  const Graph& g = impl_of(model)->graph;
  Plan plan = store_all_plan(g);
  int output_activated = 0;
  for (Instruction& in : plan.program) {
    if (in.kind == InstrKind::kForward) in.impl = out_of_place(in.impl);
    if (in.kind == InstrKind::kBackward && g.node(in.node).op == OpKind::kBatchNorm) {
      in.impl = "output";
      ++output_activated;
    }
  }
  ASSERT_GT(output_activated, 0);
  const std::string path = testing::write_plan(g, plan, at::kDouble);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    const double err = testing::train_and_compare(spec, path, kind, at::kDouble);
    EXPECT_LE(err, 1e-10) << optimizer_kind_name(kind);
    std::printf("%s %s float64, %d batch norms output-activated: largest relative error %.3g\n",
                GetParam().name.c_str(), optimizer_kind_name(kind), output_activated, err);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, TrainingEquivalence,
                         ::testing::ValuesIn(testing::tiny_models_named({"resnet18", "googlenet",
                                                                         "mobilenet_v2", "unet"})),
                         [](const auto& info) { return info.param.name; });

// float32: the plan's kernels round differently from autograd's (recomputation, other
// backward formulas), so parameters drift by rounding only.
TEST(TrainingFloat32, ErrorsStayAtRoundingLevel) {
  const TinyModel t = testing::tiny_models_named({"resnet18"}).at(0);
  const std::string plan = testing::write_monet_plan(Model::load(spec_of(t), 0), at::kFloat);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    const double err = testing::train_and_compare(spec_of(t), plan, kind, at::kFloat);
    EXPECT_LE(err, 1e-3) << optimizer_kind_name(kind);
    std::printf("resnet18 %s float32: largest relative error %.3g\n", optimizer_kind_name(kind),
                err);
  }
}

// A loss of the user's own through PlannedModel::forward and loss.backward(): the output's
// gradient enters the planned backward in place of the built-in loss's.
TEST(TrainingUserLoss, ForwardAndLossBackwardMatchAutograd) {
  for (const TinyModel& t : testing::tiny_models_named({"resnet18", "googlenet"})) {
    const ModelSpec spec = training_spec_of(t);
    const std::string plan = testing::write_monet_plan(Model::load(spec, 0), at::kDouble);
    for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
      testing::NoiseCounts noise;
      const double err = testing::train_and_compare(spec, plan, kind, at::kDouble, &noise,
                                                    testing::smoothed_nll_with_penalty);
      EXPECT_LE(err, float64_tolerance(spec, kind, testing::smoothed_nll_with_penalty))
          << t.name << " " << optimizer_kind_name(kind);
      std::printf("%s %s float64, user loss through forward(): largest relative error %.3g\n",
                  t.name.c_str(), optimizer_kind_name(kind), err);
    }
  }
}

}  // namespace
}  // namespace monet
