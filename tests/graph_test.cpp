#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/graph_builder.h"
#include "graph/zoo/model_zoo.h"

namespace monet {
namespace {

// A tiny conv -> bn -> relu -> pool -> linear -> loss network.
Graph tiny_net(int64_t batch = 2) {
  GraphBuilder b("tiny");
  int x = b.input("input", {batch, 3, 8, 8});
  int t = b.class_target("target", batch);
  x = b.conv(x, "conv", {4, {3}, 1, 1, 1, false, default_init()});
  x = b.batch_norm(x, "bn");
  x = b.relu(x, "relu", true);
  x = b.max_pool(x, "pool", 2, 2, 0);
  x = b.flatten(x, "flatten");
  x = b.linear(x, "fc", 5);
  b.cross_entropy(x, t);
  return b.finish();
}

TEST(Graph, InfersShapesAndBytes) {
  Graph g = tiny_net();
  const auto& nodes = g.nodes();
  ASSERT_EQ(nodes.size(), 7u);
  EXPECT_EQ(g.value(nodes[0].output).shape, (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_EQ(g.value(nodes[3].output).shape, (std::vector<int64_t>{2, 4, 4, 4}));
  EXPECT_EQ(g.value(nodes[4].output).shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(g.value(nodes[5].output).shape, (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(g.value(g.loss_value()).shape.empty());
  EXPECT_EQ(g.value(nodes[0].output).bytes(), 2 * 4 * 8 * 8 * 4);
  // conv 4*3*3*3, bn 4+4, fc 5*64+5
  EXPECT_EQ(g.parameter_count(), 108 + 8 + 325);
  EXPECT_EQ(g.values_of_kind(ValueKind::kBuffer).size(), 2u);
}

TEST(Graph, TracksConsumersAndOrder) {
  Graph g = tiny_net();
  const int input = g.values_of_kind(ValueKind::kInput).at(0);
  EXPECT_EQ(g.value(input).consumers, std::vector<int>{0});
  const auto order = g.topological_order();
  ASSERT_EQ(order.size(), g.nodes().size());
  std::vector<int> position(order.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  for (const auto& n : g.nodes())
    for (int id : n.inputs) {
      if (g.value(id).producer >= 0) {
        EXPECT_LT(position[g.value(id).producer], position[n.id]);
      }
    }
}

TEST(Graph, RejectsShapeMismatch) {
  GraphBuilder b("bad");
  int x = b.input("input", {2, 3, 8, 8});
  int y = b.input("other", {2, 4, 8, 8});
  try {
    b.add(x, y, "sum", false);
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot add 'input' [2, 3, 8, 8]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(b.conv(x, "conv", {4, {9}, 1, 0, 1, false, {}}), GraphError);  // kernel > input
}

// A result nothing reads is refused, unless a batch norm computes it (for its running
// statistics: an auxiliary head the trained output does not read).
TEST(Graph, RefusesAnUnreadResultExceptABatchNorms) {
  GraphBuilder b("unread");
  int x = b.input("input", {2, 3, 8, 8});
  b.batch_norm(x, "side_bn");
  b.relu(x, "side_relu", false);
  b.cross_entropy(b.linear(b.flatten(x, "flatten"), "fc", 5), b.class_target("target", 2));
  try {
    b.finish();
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()), "value 'side_relu' is computed but never used");
  }
}

TEST(Graph, RejectsDanglingInput) {
  Graph g("g");
  g.add_input("input", {2, 3});
  try {
    g.add_node(OpKind::kReLU, "relu", {7});
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("input id 7"), std::string::npos) << e.what();
  }
  Graph h = tiny_net();
  h.rewire_input(1, 0, 999);
  EXPECT_THROW(h.validate(), GraphError);
}

TEST(Graph, DetectsCycle) {
  Graph g = tiny_net();
  // Make the conv read the relu's output: conv -> bn -> relu -> conv.
  g.rewire_input(0, 0, g.node(2).output);
  try {
    g.validate();
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(Graph, RejectsUnsafeInPlace) {
  GraphBuilder b("inplace");
  int x = b.input("input", {2, 4});
  int t = b.class_target("target", 2);
  int y = b.linear(x, "fc", 4);
  int r = b.relu(y, "relu", true);    // overwrites y ...
  int s = b.add(r, y, "sum", false);  // ... which is read again here
  b.cross_entropy(s, t);
  try {
    b.finish();
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("other nodes also read"), std::string::npos) << e.what();
  }
}

// Linear and convolution give parameters their gradients in the weight part of the
// backward and an activation its gradient in the input part: a parameter as the input, or a
// computed weight, belongs on a generic node (the importer puts them there).
TEST(Graph, RejectsLayersWhoseBackwardPartsWouldMissAGradient) {
  for (const bool parameter_input : {true, false}) {
    Graph g("layer");
    const int x = g.add_input("x", {3, 4});
    const int q = g.add_parameter("queries", {3, 4}, {});
    const int w = g.add_parameter("fc.weight", {5, 4}, {});
    const std::vector<int> in = parameter_input
                                    ? std::vector<int>{q, w}
                                    : std::vector<int>{x, g.add_node(OpKind::kReLU, "relu", {w})};
    g.add_node(OpKind::kSumLoss, "loss", {g.add_node(OpKind::kLinear, "fc", in)});
    try {
      g.validate();
      FAIL() << "expected GraphError";
    } catch (const GraphError& e) {
      const std::string want = parameter_input ? "reads parameter 'queries' as its input"
                                               : "reads the computed 'relu' as a weight or bias";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(Graph, RejectsDuplicateNames) {
  Graph g("g");
  g.add_input("x", {2});
  EXPECT_THROW(g.add_input("x", {2}), GraphError);
  EXPECT_THROW(g.add_input("y", {2, 0}), GraphError);
}

TEST(Graph, EveryValueTakesTheModelsFloatingType) {
  Graph g("double");
  g.set_floating_dtype(at::kDouble);
  const int x = g.add_input("input", {2, 3});
  const int w = g.add_buffer("scale", {3}, InitSpec{InitKind::kOnes});
  const int ids = g.add_input("ids", {2}, at::kLong);
  const int y = g.add_node(OpKind::kReLU, "relu", {x});
  for (int v : {x, w, y}) {
    EXPECT_EQ(g.value(v).dtype, at::kDouble) << g.value(v).name;
    EXPECT_EQ(g.value(v).bytes(), g.value(v).numel() * 8) << g.value(v).name;
  }
  EXPECT_EQ(g.value(ids).dtype, at::kLong);
  EXPECT_NE(g.fingerprint(), [] {
    Graph f("float");
    const int x = f.add_input("input", {2, 3});
    f.add_buffer("scale", {3}, InitSpec{InitKind::kOnes});
    f.add_input("ids", {2}, at::kLong);
    f.add_node(OpKind::kReLU, "relu", {x});
    return f.fingerprint();
  }());
  // The type is the graph's from its first value on; float16 is not planned.
  EXPECT_THROW(g.set_floating_dtype(at::kFloat), GraphError);
  Graph h("half");
  try {
    h.set_floating_dtype(at::kHalf);
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("float32, float64 and bfloat16 models, not Half"),
              std::string::npos)
        << e.what();
  }
  // A specialised operator reads the graph's floating type only.
  Graph mixed("mixed");
  const int single = mixed.add_input("input", {2, 3}, at::kFloat);
  mixed.set_floating_dtype(at::kFloat);
  EXPECT_NO_THROW(mixed.add_node(OpKind::kReLU, "relu", {single}));
  try {
    g.add_node(OpKind::kReLU, "relu_of_ids", {ids});
    FAIL() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("first input 'ids' must be Double"), std::string::npos)
        << e.what();
  }
  // A bfloat16 graph counts 2 bytes an element; a loss takes a float32 prediction (the
  // model's upcast logits) and is float32, and a specialised operator refuses it.
  Graph bf("bfloat16");
  bf.set_floating_dtype(at::kBFloat16);
  const int b = bf.add_input("input", {2, 3});
  EXPECT_EQ(bf.value(b).bytes(), 2 * 6);
  const int upcast = bf.add_input("upcast", {2, 3}, at::kFloat);
  EXPECT_THROW(bf.add_node(OpKind::kReLU, "relu_of_upcast", {upcast}), GraphError);
  EXPECT_EQ(bf.value(bf.add_node(OpKind::kSumLoss, "loss", {upcast})).dtype, at::kFloat);
  const int classes = bf.add_input("classes", {2}, at::kLong, ValueKind::kTarget);
  EXPECT_EQ(bf.value(bf.add_node(OpKind::kCrossEntropyLoss, "ce", {upcast, classes})).dtype,
            at::kFloat);
  EXPECT_THROW(bf.add_node(OpKind::kSumLoss, "loss_of_ids", {bf.add_input("ids", {2}, at::kLong)}),
               GraphError);
}

TEST(Graph, FingerprintIsStableAndSensitive) {
  EXPECT_EQ(tiny_net().fingerprint(), tiny_net().fingerprint());
  EXPECT_EQ(tiny_net().fingerprint().size(), 16u);
  EXPECT_NE(tiny_net(2).fingerprint(), tiny_net(3).fingerprint());
  ModelConfig c;
  c.batch = 2;
  c.image = {64, 64};
  c.width = 0.25;
  const auto a = build_zoo_model("resnet18", c).fingerprint();
  EXPECT_EQ(a, build_zoo_model("resnet18", c).fingerprint());
  EXPECT_NE(a, build_zoo_model("resnet34", c).fingerprint());
  c.image = {96, 96};
  EXPECT_NE(a, build_zoo_model("resnet18", c).fingerprint());
}

TEST(Graph, PrintsReadably) {
  const std::string s = tiny_net().to_string();
  EXPECT_NE(s.find("conv(input, conv.weight)"), std::string::npos) << s;
  EXPECT_NE(s.find("[2, 4, 8, 8] 2048 B"), std::string::npos) << s;
  EXPECT_NE(s.find("max_pool"), std::string::npos);
}

TEST(Graph, PoolingCeilModeMatchesPyTorch) {
  // GoogLeNet: 112 -> maxpool(3, 2, ceil) -> 56; 7 -> maxpool(2, 2, ceil) -> 4.
  GraphBuilder b("pool");
  int x = b.input("input", {1, 1, 112, 7});
  int y = b.max_pool(x, "p", 3, 2, 0, true);
  EXPECT_EQ(b.graph().value(y).shape, (std::vector<int64_t>{1, 1, 56, 3}));
  int z = b.max_pool(x, "q", 2, 2, 0, true);
  EXPECT_EQ(b.graph().value(z).shape, (std::vector<int64_t>{1, 1, 56, 4}));
}

}  // namespace
}  // namespace monet
