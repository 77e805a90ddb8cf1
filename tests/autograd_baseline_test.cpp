#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "graph/zoo/model_zoo.h"
#include "runtime/autograd_baseline.h"
#include "tiny_models.h"

namespace monet {
namespace {

// True when a per-channel constant added to `value` cannot change the loss because every
// path from it reaches a batch norm through only 1x1 unpadded, ungrouped convolutions and
// additions, which keep a per-channel constant constant: that batch norm subtracts it
// again. The shift (bias) of a batch norm feeding such paths has an exactly zero
// gradient, mathematically (MobileNetV2's last projection before features.18 is one).
bool shift_cancelled_by_batch_norm(const Graph& g, int value) {
  const auto& consumers = g.value(value).consumers;
  if (consumers.empty()) return false;
  for (int c : consumers) {
    const Node& n = g.node(c);
    if (n.op == OpKind::kBatchNorm) continue;
    const bool pointwise_conv = n.op == OpKind::kConv && n.attrs.groups == 1 &&
                                n.inputs.size() == 2 &&
                                std::all_of(n.attrs.kernel.begin(), n.attrs.kernel.end(),
                                            [](int64_t k) { return k == 1; }) &&
                                std::all_of(n.attrs.padding.begin(), n.attrs.padding.end(),
                                            [](int64_t p) { return p == 0; });
    if (!(pointwise_conv || n.op == OpKind::kAdd)) return false;
    if (!shift_cancelled_by_batch_norm(g, n.output)) return false;
  }
  return true;
}

class BaselineOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override {
    MemoryTracker::install();
    graph_ = std::make_unique<Graph>(build_zoo_model(GetParam().name, GetParam().config));
    state_ = std::make_unique<ModelState>(ModelState::initialize(*graph_, 0));
    batch_ = make_batch(*graph_, 1);
    baseline_ = std::make_unique<AutogradBaseline>(*graph_, *state_);
  }
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<ModelState> state_;
  Batch batch_;
  std::unique_ptr<AutogradBaseline> baseline_;
};

TEST_P(BaselineOnTinyModel, GradientsAreFiniteAndNonZeroForEveryParameter) {
  const Graph& g = *graph_;
  const IterationResult r = baseline_->run_iteration(batch_);
  EXPECT_TRUE(std::isfinite(r.loss));
  const auto params = g.parameters();
  ASSERT_EQ(r.gradients.size(), params.size());
  double overall = 0;  // largest gradient entry of the model, for rounding-level bounds
  for (const auto& grad : r.gradients)
    if (grad.defined()) overall = std::max(overall, grad.abs().max().item<double>());
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& v = g.value(params[i]);
    ASSERT_TRUE(r.gradients[i].defined()) << v.name;
    EXPECT_EQ(r.gradients[i].sizes().vec(), v.shape) << v.name;
    EXPECT_TRUE(r.gradients[i].isfinite().all().item<bool>()) << v.name;
    const double largest = r.gradients[i].abs().max().item<double>();
    const Node& owner = g.node(v.consumers.at(0));
    if (owner.op == OpKind::kBatchNorm && owner.inputs.at(2) == v.id &&
        shift_cancelled_by_batch_norm(g, owner.output)) {
      EXPECT_LT(largest, 1e-4 * overall)
          << v.name << " should have a (mathematically) zero gradient";
      continue;
    }
    EXPECT_GT(largest, 0.0) << v.name << " has a zero gradient";
  }
}

TEST_P(BaselineOnTinyModel, FreesEverythingButGradientsAndMeasuresAPeak) {
  const Graph& g = *graph_;
  baseline_->run_iteration(batch_);  // warm-up: first-call caches
  const IterationResult r = baseline_->run_iteration(batch_);
  // After the iteration only the gradients remain, one per parameter, exactly.
  EXPECT_EQ(MemoryTracker::current() - r.start_bytes, g.parameter_bytes());
  // The peak holds at least the gradients and the largest activation.
  int64_t largest = 0;
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kActivation) largest = std::max(largest, v.bytes());
  EXPECT_GE(r.peak_bytes - r.start_bytes, largest);
  EXPECT_GT(r.seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Zoo, BaselineOnTinyModel, ::testing::ValuesIn(testing::tiny_models()),
                         [](const auto& info) { return info.param.name; });

TEST(AutogradBaseline, SgdStepMovesParametersAgainstTheGradient) {
  MemoryTracker::install();
  const auto tiny = testing::tiny_models()[0];
  const Graph g = build_zoo_model(tiny.name, tiny.config);
  ModelState state = ModelState::initialize(g, 0);
  const ModelState before = state.clone();
  AutogradBaseline baseline(g, state);
  IterationOptions o;
  o.sgd_step = true;
  o.learning_rate = 0.1;
  const IterationResult r = baseline.run_iteration(make_batch(g, 1), o);
  const auto params = g.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto expected = before.tensor(params[i]) - 0.1 * r.gradients[i];
    EXPECT_TRUE(at::allclose(state.tensor(params[i]).detach(), expected, 1e-6, 1e-7))
        << g.value(params[i]).name;
  }
}

TEST(AutogradBaseline, RecordsOneTraceSamplePerOperator) {
  MemoryTracker::install();
  const auto tiny = testing::tiny_models()[2];
  const Graph g = build_zoo_model(tiny.name, tiny.config);
  ModelState state = ModelState::initialize(g, 0);
  AutogradBaseline baseline(g, state);
  IterationOptions o;
  o.record_trace = true;
  const IterationResult r = baseline.run_iteration(make_batch(g, 1), o);
  // start, every node, every node's output gradient (all need one here), backward
  ASSERT_EQ(r.trace.size(), 2 * g.nodes().size() + 2);
  EXPECT_EQ(r.trace.front().label, "start");
  std::set<std::string> gradients;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    EXPECT_EQ(r.trace[1 + i].label, g.node(g.topological_order()[i]).name);
    const std::string& b = r.trace[1 + g.nodes().size() + i].label;
    ASSERT_EQ(b.rfind("backward ", 0), 0u) << b;
    gradients.insert(b);
  }
  EXPECT_EQ(gradients.size(), g.nodes().size());
  EXPECT_EQ(r.trace.back().label, "backward");
  for (const auto& s : r.trace) EXPECT_LE(s.current_bytes, r.peak_bytes);
}

TEST(AutogradBaseline, IsDeterministicForFixedSeeds) {
  MemoryTracker::install();
  const auto tiny = testing::tiny_models()[9];  // mobilenet_v2, has dropout
  const Graph g = build_zoo_model(tiny.name, tiny.config);
  auto run = [&] {
    ModelState state = ModelState::initialize(g, 3);
    AutogradBaseline baseline(g, state);
    at::manual_seed(42);
    return baseline.run_iteration(make_batch(g, 4));
  };
  const auto a = run();
  const auto b = run();
  EXPECT_EQ(a.loss, b.loss);
  for (size_t i = 0; i < a.gradients.size(); ++i)
    EXPECT_TRUE(at::equal(a.gradients[i], b.gradients[i]));
}

}  // namespace
}  // namespace monet
