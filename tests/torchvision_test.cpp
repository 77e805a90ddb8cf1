// The zoo's ResNet-50 and MobileNetV2 compute what torchvision's do, given the same
// weights. Fixtures come from tools/make_torchvision_fixtures.py (CTest set-up).
#include <gtest/gtest.h>
#include <torch/script.h>

#include "graph/zoo/model_zoo.h"
#include "runtime/autograd_baseline.h"
#include "runtime/torchscript_weights.h"

namespace monet {
namespace {

std::map<std::string, at::Tensor> load_tensors(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  for (const auto& b : torch::jit::load(path).named_buffers()) out[b.name] = b.value;
  return out;
}

// max |a - b| / max |b|
double relative_error(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

int value_named(const Graph& g, const std::string& name) {
  for (const auto& v : g.values())
    if (v.name == name) return v.id;
  throw std::runtime_error("no value " + name);
}

struct Loaded {
  Graph graph;
  ModelState state;
  Batch batch;
  std::map<std::string, at::Tensor> io;
};

Loaded load(const std::string& model) {
  const std::string dir = MONET_FIXTURE_DIR;
  ModelConfig c;
  c.batch = 2;
  c.image = {64, 64};
  Graph g = build_zoo_model(model, c);
  ModelState state = ModelState::initialize(g, 0);
  const WeightTransfer t = load_torchscript_weights(g, state, dir + "/" + model + ".pt");
  EXPECT_EQ(t.copied, static_cast<int>(g.values_of_kind(ValueKind::kParameter).size() +
                                       g.values_of_kind(ValueKind::kBuffer).size()));
  for (const auto& name : t.unused)  // torchvision's batch counters are all we skip
    EXPECT_NE(name.find("num_batches_tracked"), std::string::npos) << name;
  auto io = load_tensors(dir + "/" + model + "_io.pt");
  Batch batch = make_batch(g, 0);
  batch[g.values_of_kind(ValueKind::kInput)[0]] = io.at("input");
  if (io.count("target")) batch[g.values_of_kind(ValueKind::kTarget)[0]] = io.at("target");
  return {std::move(g), std::move(state), std::move(batch), std::move(io)};
}

void expect_forward_matches(const std::string& model) {
  Loaded m = load(model);
  AutogradBaseline baseline(m.graph, m.state);
  const int logits = m.graph.node(m.graph.value(m.graph.loss_value()).producer).inputs[0];
  const at::Tensor eval = baseline.evaluate(m.batch, logits, /*training=*/false);
  const double eval_err = relative_error(eval, m.io.at("logits_eval"));
  EXPECT_LE(eval_err, 1e-4) << model << " eval-mode logits";
  // Train-mode features (batch statistics) in float64, where rounding is far below 1e-10.
  ModelState state64 = m.state.clone();
  for (const auto& v : m.graph.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      state64.tensor(v.id) = state64.tensor(v.id).to(at::kDouble);
  Batch batch64 = m.batch;
  for (auto& [id, t] : batch64)
    if (t.is_floating_point()) t = t.to(at::kDouble);
  AutogradBaseline baseline64(m.graph, state64);
  const at::Tensor train = baseline64.evaluate(batch64, value_named(m.graph, "flatten"), true);
  const double train_err = relative_error(train, m.io.at("features_train64"));
  EXPECT_LE(train_err, 1e-10) << model << " train-mode features";
  std::cout << model << ": eval logits rel. error " << eval_err << ", train features " << train_err
            << "\n";
}

TEST(Torchvision, ResNet50ForwardMatches) { expect_forward_matches("resnet50"); }

TEST(Torchvision, MobileNetV2ForwardMatches) { expect_forward_matches("mobilenet_v2"); }

// In float64: at float32, ResNet-50's gradients at this size carry ~1e-2 relative
// rounding noise (measured against float64 in Python), too much to tell an error from it.
TEST(Torchvision, ResNet50TrainingIterationMatchesInDoublePrecision) {
  MemoryTracker::install();
  Loaded m = load("resnet50");
  for (const auto& v : m.graph.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      m.state.tensor(v.id) = m.state.tensor(v.id).to(at::kDouble);
  for (auto& [id, t] : m.batch)
    if (t.is_floating_point()) t = t.to(at::kDouble);
  AutogradBaseline baseline(m.graph, m.state);
  const IterationResult r = baseline.run_iteration(m.batch);
  const double loss_ref = m.io.at("loss64").item<double>();
  EXPECT_NEAR(r.loss, loss_ref, 1e-10 * std::abs(loss_ref));
  const auto params = m.graph.parameters();
  int checked = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string key = "grad64__" + m.graph.value(params[i]).name;
    for (size_t p; (p = key.find('.')) != std::string::npos;) key.replace(p, 1, "__");
    if (!m.io.count(key)) continue;
    const double err = relative_error(r.gradients[i], m.io.at(key));
    EXPECT_LE(err, 1e-8) << key;
    std::cout << key << ": relative error " << err << "\n";
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

TEST(Torchvision, MissingWeightIsNamedAndStateUntouched) {
  ModelConfig c;
  c.batch = 2;
  c.image = {64, 64};
  const Graph g = build_zoo_model("resnet18", c);  // resnet18 names differ from resnet50's
  ModelState state = ModelState::initialize(g, 0);
  const ModelState before = state.clone();
  try {
    load_torchscript_weights(g, state, std::string(MONET_FIXTURE_DIR) + "/resnet50.pt");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
  for (int id : g.parameters()) EXPECT_TRUE(at::equal(state.tensor(id), before.tensor(id)));
}

}  // namespace
}  // namespace monet
