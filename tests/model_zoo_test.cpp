#include <gtest/gtest.h>
#include <torch/torch.h>

#include "graph/zoo/model_zoo.h"
#include "ops/reference_forward.h"
#include "runtime/model_state.h"
#include "tiny_models.h"

namespace monet {
namespace {

int64_t standard_parameter_count(const std::string& name) {
  return build_zoo_model(name, ModelConfig{}).parameter_count();
}

TEST(ModelZoo, ParameterCountsEqualTorchvision) {
  EXPECT_EQ(standard_parameter_count("resnet18"), 11689512);
  EXPECT_EQ(standard_parameter_count("resnet34"), 21797672);
  EXPECT_EQ(standard_parameter_count("resnet50"), 25557032);
  EXPECT_EQ(standard_parameter_count("resnet101"), 44549160);
  EXPECT_EQ(standard_parameter_count("resnet152"), 60192808);
  EXPECT_EQ(standard_parameter_count("vgg11"), 132863336);
  EXPECT_EQ(standard_parameter_count("vgg16"), 138357544);
  EXPECT_EQ(standard_parameter_count("vgg19"), 143667240);
  EXPECT_EQ(standard_parameter_count("mobilenet_v2"), 3504872);
  EXPECT_EQ(standard_parameter_count("googlenet"), 6624904);
}

TEST(ModelZoo, PaperConfigurationsBuild) {
  const Graph unet = build_zoo_model("unet", ModelConfig{});
  const auto& in = unet.value(unet.values_of_kind(ValueKind::kInput)[0]).shape;
  EXPECT_EQ(in, (std::vector<int64_t>{1, 3, 416, 608}));
  const Graph unet3d = build_zoo_model("unet3d", ModelConfig{});
  EXPECT_EQ(unet3d.value(unet3d.values_of_kind(ValueKind::kInput)[0]).shape.size(), 5u);
}

TEST(ModelZoo, RejectsBadConfigurations) {
  EXPECT_THROW(build_zoo_model("resnet51", ModelConfig{}), std::invalid_argument);
  ModelConfig c;
  c.batch = 0;
  EXPECT_THROW(build_zoo_model("resnet50", c), std::invalid_argument);
  c = ModelConfig{};
  c.image = {100, 100};  // not a multiple of 16
  EXPECT_THROW(build_zoo_model("unet", c), std::invalid_argument);
  c.image = {8, 8};  // too small for VGG's five poolings
  EXPECT_THROW(build_zoo_model("vgg16", c), GraphError);
  c.image = {224};
  EXPECT_THROW(build_zoo_model("resnet50", c), std::invalid_argument);
}

class TinyZooModel : public ::testing::TestWithParam<testing::TinyModel> {};

// Runs every node through the reference forward and checks each real output shape
// against the graph's inferred shape, and the final output shape.
TEST_P(TinyZooModel, OutputShapesMatchExecution) {
  const auto& p = GetParam();
  const Graph g = build_zoo_model(p.name, p.config);
  ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> env(g.values().size());
  for (const auto& [id, t] : batch) env[id] = t;
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      env[v.id] = state.tensor(v.id);
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    std::vector<at::Tensor> in;
    for (int v : n.inputs) in.push_back(env[v]);
    env[n.output] = reference_forward(n, in, /*training=*/true);
    EXPECT_EQ(env[n.output].sizes().vec(), g.value(n.output).shape) << n.name;
  }
  const Node& loss = g.node(g.value(g.loss_value()).producer);
  const auto& logits = g.value(loss.inputs[0]).shape;
  if (g.value(loss.inputs[1]).dtype == at::kLong) {
    EXPECT_EQ(logits, (std::vector<int64_t>{p.config.batch, p.config.classes}));
  } else {
    std::vector<int64_t> expected = {p.config.batch, 1};
    expected.insert(expected.end(), p.config.image.begin(), p.config.image.end());
    EXPECT_EQ(logits, expected);
  }
  EXPECT_TRUE(std::isfinite(env[g.loss_value()].item<double>()));
}

INSTANTIATE_TEST_SUITE_P(Zoo, TinyZooModel, ::testing::ValuesIn(testing::tiny_models()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
