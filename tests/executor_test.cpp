// Gradient equivalence: the executor's parameter gradients equal the autograd
// baseline's under the store-all plan and under plans that pick every other operator
// implementation.
#include <gtest/gtest.h>

#include <set>

#include "base/memory_tracker.h"
#include "gradient_check.h"
#include "graph/graph_builder.h"
#include "graph/zoo/model_zoo.h"
#include "ops/op_kernels.h"
#include "planner/baselines/baseline_plans.h"
#include "rotated_plan.h"
#include "runtime/autograd_baseline.h"
#include "runtime/executor.h"
#include "step_peak.h"
#include "tiny_models.h"

namespace monet {
namespace {

class ExecutorOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(ExecutorOnTinyModel, StoreAllMatchesAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const double err64 = testing::max_gradient_error(g, store_all_plan(g));
  const double err32 = testing::max_gradient_error(g, store_all_plan(g), at::kFloat, 1e-4);
  std::cout << GetParam().name << " store-all: max relative gradient error " << err32
            << " (float32), " << err64 << " (float64)\n";
}

// Store-all runs autograd's kernels in autograd's order (a node's input gradient before
// its weight gradient) and frees what autograd frees when autograd does (a batch norm's
// statistics after its backward): its whole step never peaks above autograd's.
TEST_P(ExecutorOnTinyModel, StoreAllStepPeaksAtMostAsAutogradsStep) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const testing::StepPeaks peaks =
      testing::store_all_and_autograd_step_peaks(g, ModelState::initialize(g, 0), make_batch(g, 1));
  EXPECT_LE(peaks.store_all, peaks.autograd);
  std::cout << GetParam().name << " Adam step: store-all " << peaks.store_all << " B, autograd "
            << peaks.autograd << " B above the step's start\n";
}

TEST_P(ExecutorOnTinyModel, ChenMatchesAutogradAndRecomputes) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const Plan plan = chen_plan(g);
  int recomputations = 0;
  bool backward_started = false;
  for (const auto& in : plan.program) {
    backward_started = backward_started || in.kind == InstrKind::kBackward;
    recomputations += backward_started && in.kind == InstrKind::kForward;
  }
  EXPECT_GT(recomputations, 0);
  const double err64 = testing::max_gradient_error(g, plan);
  std::cout << GetParam().name << " chen: " << recomputations
            << " recomputations, max relative gradient error " << err64 << " (float64)\n";
}

// 17 random valid plans per model, 204 over the zoo, fixed seeds. In float64: random
// plans change convolution algorithms and recompute batch norm, whose float32 rounding
// can flip max-pooling ties (see max_gradient_error).
TEST_P(ExecutorOnTinyModel, RandomPlansMatchAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  double worst = 0;
  for (uint64_t seed = 0; seed < 17; ++seed)
    worst = std::max(worst, testing::max_gradient_error(g, random_plan(g, 1000 + seed)));
  std::cout << GetParam().name << " 17 random plans: max relative gradient error " << worst
            << " (float64)\n";
}

TEST_P(ExecutorOnTinyModel, EveryImplementationMatchesAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  std::set<std::string> used;
  double worst64 = 0, worst32 = 0;
  for (int variant = 0; variant < 4; ++variant) {
    const Plan plan = testing::rotated_plan(g, variant, &used);
    worst64 = std::max(worst64, testing::max_gradient_error(g, plan));
    worst32 = std::max(worst32, testing::max_gradient_error(g, plan, at::kFloat, 1e-4));
  }
  std::cout << GetParam().name << " rotated implementations: max relative gradient error "
            << worst32 << " (float32), " << worst64 << " (float64)\n";
}

// A 3x3 convolution with padding 1 (its output the size of its input).
ConvSpec same_size_conv(int64_t out_channels) {
  ConvSpec spec;
  spec.out_channels = out_channels;
  spec.kernel = {3};
  spec.padding = 1;
  return spec;
}

// One iteration of `plan` leaves the buffers (running statistics) as autograd's does.
void expect_buffers_as_autograds(const Graph& g, const Plan& plan) {
  const Batch batch = make_batch(g, 1);
  ModelState mine = ModelState::initialize(g, 0), theirs = mine.clone();
  Executor(g, mine, plan).run(batch);
  AutogradBaseline(g, theirs).run_iteration(batch, IterationOptions{});
  for (const Value& v : g.values())
    if (v.kind == ValueKind::kBuffer)
      EXPECT_TRUE(at::allclose(mine.tensor(v.id), theirs.tensor(v.id), 1e-5, 1e-7)) << v.name;
}

// Batch norm without affine parameters (affine=False: x and the running statistics as
// its inputs): every backward implementation and a recomputing plan match autograd, and
// the running statistics are updated once per iteration, as autograd updates them.
TEST(Executor, BatchNormWithoutAffineParametersMatchesAutograd) {
  MemoryTracker::install();
  GraphBuilder b("batch_norm_without_affine");
  int h = b.conv(b.input("input", {4, 3, 6, 6}), "conv1", same_size_conv(8));
  h = b.relu(b.batch_norm_without_affine(h, "bn1"), "relu1", false);
  h = b.relu(b.batch_norm_without_affine(b.conv(h, "conv2", same_size_conv(4)), "bn2"), "relu2",
             false);
  b.cross_entropy(b.linear(b.flatten(h, "flatten"), "fc", 10), b.class_target("labels", 4));
  const Graph g = b.finish();
  std::set<std::string> used;
  for (int variant = 0; variant < 4; ++variant)
    EXPECT_LT(testing::max_gradient_error(g, testing::rotated_plan(g, variant, &used)), 1e-9);
  for (const char* impl : {"input", "output"})
    EXPECT_TRUE(used.count(std::string("batch_norm backward ") +
                           backward_part_name(BackwardPart::kAll) + " " + impl))
        << impl;
  Plan recompute = store_all_plan(g);  // each batch norm's forward again before its backward
  std::vector<Instruction> program;
  for (const Instruction& in : recompute.program) {
    if (in.kind == InstrKind::kBackward && g.node(in.node).op == OpKind::kBatchNorm)
      program.push_back({InstrKind::kForward, in.node, "default"});
    program.push_back(in);
  }
  recompute.program = program;
  EXPECT_LT(testing::max_gradient_error(g, recompute), 1e-9);
  expect_buffers_as_autograds(g, recompute);
}

// A side branch that ends in a batch norm nothing reads (an auxiliary head the trained
// output does not use, as GoogLeNet's in training mode): its running statistics update as
// autograd's do, and neither it nor the convolution before it gets a gradient.
TEST(Executor, ABatchNormNothingReadsUpdatesItsStatisticsAndGetsNoGradient) {
  MemoryTracker::install();
  GraphBuilder b("unread_batch_norm");
  const ConvSpec spec = same_size_conv(4);
  const int h = b.relu(b.batch_norm(b.conv(b.input("input", {4, 3, 6, 6}), "conv", spec), "bn"),
                       "relu", false);
  const int aux = b.batch_norm(b.conv(h, "aux.conv", spec), "aux.bn");
  b.cross_entropy(b.linear(b.flatten(h, "flatten"), "fc", 10), b.class_target("labels", 4));
  const Graph g = b.finish();
  const auto needs = values_needing_grad(g);
  EXPECT_FALSE(needs[aux]);
  for (const Value& v : g.values())
    if (v.kind == ValueKind::kParameter)
      EXPECT_EQ(needs[v.id], v.name.rfind("aux.", 0) != 0) << v.name;
  for (const Plan& plan : {store_all_plan(g), chen_plan(g), random_plan(g, 3)}) {
    EXPECT_LT(testing::max_gradient_error(g, plan), 1e-9);
    expect_buffers_as_autograds(g, plan);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ExecutorOnTinyModel, ::testing::ValuesIn(testing::tiny_models()),
                         [](const auto& info) { return info.param.name; });

// Across the zoo, the rotated plans exercise every implementation the library offers.
TEST(Executor, RotatedPlansCoverEveryImplementation) {
  MemoryTracker::install();
  std::set<std::string> used, offered;
  for (const char* name : {"resnet18", "vgg11", "mobilenet_v2", "unet3d", "googlenet"}) {
    auto tiny = testing::tiny_models();
    const auto it = std::find_if(tiny.begin(), tiny.end(), [&](auto& t) { return t.name == name; });
    const Graph g = build_zoo_model(it->name, it->config);
    for (int variant = 0; variant < 4; ++variant) testing::rotated_plan(g, variant, &used);
    for (const auto& n : g.nodes()) {
      for (const auto& f : forward_impls(g, n))
        if (!f.inplace && !f.gist_encoding)
          offered.insert(std::string(op_name(n.op)) + " forward " + f.name);
      for (const auto& b : backward_impls(g, n))
        if (!b.gist_encoding)
          offered.insert(std::string(op_name(n.op)) + " backward " + backward_part_name(b.part) +
                         " " + b.name);
    }
  }
  for (const auto& o : offered) EXPECT_TRUE(used.count(o)) << o << " is never exercised";
}

// A squeeze-excitation block (MobileNetV3 / EfficientNet style) with every smooth
// activation: each implementation of hardswish, hardsigmoid, SiLU, sigmoid and the
// broadcasting multiplication gives autograd's gradients.
Graph squeeze_excitation_graph() {
  GraphBuilder b("squeeze_excitation");
  const int x = b.input("input", {2, 4, 6, 6});
  const int c = b.conv(x, "conv", {8, {3}, 1, 1, 1, true, default_init()});
  const int h = b.activation(OpKind::kHardswish, c, "hardswish", false);
  const int s = b.activation(OpKind::kSiLU, h, "silu", false);
  const int p = b.adaptive_avg_pool(s, "squeeze", {1, 1});
  const int f1 = b.conv(p, "fc1", {4, {1}, 1, 0, 1, true, default_init()});
  const int g1 = b.activation(OpKind::kSigmoid, f1, "sigmoid", false);
  const int f2 = b.conv(g1, "fc2", {8, {1}, 1, 0, 1, true, default_init()});
  const int g2 = b.activation(OpKind::kHardsigmoid, f2, "hardsigmoid", false);
  const int m = b.mul(s, g2, "excite");
  const int head = b.flatten(b.adaptive_avg_pool(m, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 2));
  return b.finish();
}

TEST(Executor, SmoothActivationsAndScalingMatchAutogradInEveryImplementation) {
  MemoryTracker::install();
  const Graph g = squeeze_excitation_graph();
  std::set<std::string> used;
  for (int variant = 0; variant < 4; ++variant) {
    const Plan plan = testing::rotated_plan(g, variant, &used);
    EXPECT_LT(testing::max_gradient_error(g, plan), 1e-9) << "variant " << variant;
  }
  for (const char* impl :
       {"sigmoid backward all output", "sigmoid backward all input",
        "hardsigmoid backward all output", "hardsigmoid backward all input",
        "hardswish backward all input", "silu backward all input", "mul backward all default"})
    EXPECT_TRUE(used.count(impl)) << impl;
}

// A ShuffleNet-v2 unit: the input's channels split in two (torch.chunk), one half through
// a branch, concatenated with the other half, channels shuffled in two groups.
Graph shuffle_unit_graph() {
  GraphBuilder b("shuffle_unit");
  const int x = b.input("input", {2, 3, 6, 6});
  const int c =
      b.relu(b.conv(x, "stem", {8, {3}, 1, 1, 1, false, default_init()}), "stem_relu", false);
  const int x1 = b.slice(c, "chunk0", 1, 0, 4);
  const int x2 = b.slice(c, "chunk1", 1, 4, 4);
  const int branch =
      b.relu(b.conv(x2, "branch", {4, {1}, 1, 0, 1, false, default_init()}), "branch_relu", true);
  const int shuffled = b.channel_shuffle(b.cat({x1, branch}, "cat"), "shuffle", 2);
  const int head = b.flatten(b.adaptive_avg_pool(shuffled, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 2));
  return b.finish();
}

TEST(Executor, ChunkAndChannelShuffleMatchAutograd) {
  MemoryTracker::install();
  const Graph g = shuffle_unit_graph();
  std::set<std::string> used;
  for (int variant = 0; variant < 4; ++variant)
    EXPECT_LT(testing::max_gradient_error(g, testing::rotated_plan(g, variant, &used)), 1e-9)
        << "variant " << variant;
  EXPECT_LT(testing::max_gradient_error(g, chen_plan(g)), 1e-9);
  // The shuffle moves channel g * 4 + i to i * 2 + g.
  const at::Tensor x = at::arange(8, at::kDouble).view({1, 8, 1, 1});
  const at::Tensor y = kernels::channel_shuffle(x, 2).flatten();
  EXPECT_TRUE(at::equal(y, at::tensor({0., 4., 1., 5., 2., 6., 3., 7.}, at::kDouble)));
  EXPECT_TRUE(at::equal(kernels::channel_shuffle(kernels::channel_shuffle(x, 2), 4), x));
}

TEST(Executor, RefusesAPlanForAnotherGraph) {
  auto tiny = testing::tiny_models();
  const Graph a = build_zoo_model(tiny[0].name, tiny[0].config);
  const Graph b = build_zoo_model(tiny[1].name, tiny[1].config);
  ModelState state = ModelState::initialize(b, 0);
  EXPECT_THROW(Executor(b, state, store_all_plan(a)), PlanError);
}

}  // namespace
}  // namespace monet
