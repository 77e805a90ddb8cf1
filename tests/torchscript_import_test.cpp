// Imported TorchScript models (torchvision, traced in Python) train as Python PyTorch
// does: the executor's loss and gradients, under store-all and under a MONeT plan, equal
// PyTorch autograd's in float64. Fixtures come from tools/make_import_fixtures.py (CTest
// set-up); the traced models are float32, as a user would save them.
#include <gtest/gtest.h>
#include <monet/monet.h>
#include <torch/script.h>

#include <fstream>

#include "gradient_check.h"
#include "graph/torchscript/torchscript_import.h"
#include "halfway_budget.h"
#include "model_specs.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/monet_planner.h"
#include "planner/named_planner.h"
#include "quick_profile.h"
#include "runtime/executor.h"
#include "runtime/torchscript_weights.h"
#include "step_peak.h"
#include "training_equivalence.h"

namespace monet {
namespace {

const std::string kDir = MONET_IMPORT_FIXTURE_DIR;

struct Imported {
  Graph graph;
  ModelState state;  // float32, loaded from the file
  Batch batch;       // float32 input, int64 target
  std::map<std::string, at::Tensor> ref;
};

// What each fixture is trained on (tools/make_import_fixtures.py): segmentation models
// with per-pixel cross-entropy on their "out", the UNet with the mean squared error.
ImportOptions import_options(const std::string& name) {
  if (name == "fcn_resnet50" || name == "deeplabv3_mobilenet_v3_large")
    return {"out", OpKind::kCrossEntropyLoss};
  if (name == "unet_gn") return {"", OpKind::kMSELoss};
  if (name == "gpt_tiny" || name == "gpt_tied_matmul")
    return {"", OpKind::kCrossEntropyLoss, ClassDim::kLast};
  return {};
}

Imported import(const std::string& name, const ImportOptions& options) {
  std::map<std::string, at::Tensor> ref;
  for (const auto& b : torch::jit::load(kDir + "/" + name + "_ref.pt").named_buffers())
    ref[b.name] = b.value;
  const at::Tensor input = ref.at("input");
  Graph g = import_torchscript(kDir + "/" + name + ".pt", input.sizes().vec(), options);
  ModelState state = ModelState::initialize(g, 0);
  const WeightTransfer t = load_torchscript_weights(g, state, kDir + "/" + name + ".pt");
  EXPECT_EQ(t.copied,
            static_cast<int>(g.parameters().size() + g.values_of_kind(ValueKind::kBuffer).size()));
  // What the graph leaves out: integer buffers (batch counters), buffers that are
  // constants of the trace (Swin's relative position index, a causal mask), on the
  // generic path batch norms' running statistics, and second names of tied parameters.
  std::map<std::string, at::Tensor> buffers, params;
  const torch::jit::Module file = torch::jit::load(kDir + "/" + name + ".pt");
  for (const auto& b : file.named_buffers()) buffers[b.name] = b.value;
  for (const auto& p : file.named_parameters()) params[p.name] = p.value;
  auto running_statistic = [](const std::string& n) {
    return n.find("running_") != std::string::npos;
  };
  for (const auto& unused : t.unused) {
    if (params.count(unused)) {
      bool tied = false;
      for (int p : g.parameters())
        tied = tied || params.at(g.value(p).name).is_same(params.at(unused));
      EXPECT_TRUE(tied) << unused << " is a parameter the graph leaves out";
      continue;
    }
    EXPECT_TRUE(buffers.count(unused) && (!running_statistic(unused) ||
                                          options.activations_and_norms == OperatorPath::kGeneric))
        << unused;
  }
  Batch batch;
  batch[g.values_of_kind(ValueKind::kInput).at(0)] = input;
  batch[g.values_of_kind(ValueKind::kTarget).at(0)] = ref.at("target");
  return {std::move(g), std::move(state), std::move(batch), std::move(ref)};
}

Imported import(const std::string& name) { return import(name, import_options(name)); }

// Runs `plan` in float64 and compares loss and every parameter gradient with PyTorch's.
// Returns the largest relative error.
double worst_error_against_pytorch(const Imported& m, const Plan& plan) {
  ModelState state = m.state.clone();
  testing::convert(state, m.graph, at::kDouble);
  Batch batch = m.batch;
  for (auto& [id, t] : batch)
    if (t.is_floating_point()) t = t.to(at::kDouble);
  Executor executor(m.graph, state, testing::comparable_plan(m.graph, plan, at::kDouble));
  const ExecutionResult r = executor.run(batch);
  const double loss_ref = m.ref.at("loss64").item<double>();
  double worst = std::abs(r.loss - loss_ref) / std::abs(loss_ref);
  EXPECT_LE(worst, 1e-9) << "loss " << r.loss << " vs PyTorch " << loss_ref;
  double largest = 0;
  for (const auto& [key, t] : m.ref)
    if (key.rfind("grad64__", 0) == 0 || key.rfind("sample64__", 0) == 0)
      largest = std::max(largest, t.abs().max().item<double>());
  const auto params = m.graph.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    std::string key = m.graph.value(params[i]).name;
    for (size_t p; (p = key.find('.')) != std::string::npos;) key.replace(p, 1, "__");
    at::Tensor got = r.gradients.at(i);
    if (!got.defined()) {
      ADD_FAILURE() << "no gradient for " << m.graph.value(params[i]).name;
      continue;
    }
    at::Tensor want;
    if (m.ref.count("grad64__" + key)) {
      want = m.ref.at("grad64__" + key);
    } else {
      want = m.ref.at("sample64__" + key);
      const int64_t stride = m.ref.at("stride__" + key).item<int64_t>();
      got = got.flatten().slice(0, 0, c10::nullopt, stride);
    }
    // Relative to the tensor's own scale, floored where PyTorch's gradient is ~0.
    const double err = testing::relative_error(got, want, 1e-6 * largest);
    EXPECT_LE(err, 1e-9) << m.graph.value(params[i]).name;
    worst = std::max(worst, err);
  }
  return worst;
}

class ImportedTorchvision : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

// Random implementations and recomputations: every backward implementation of every
// operator, the re-running ones included, against PyTorch (a re-run needs the inputs whose
// values the derivative uses, also where it keeps only its own copy of them, as matmul
// does of a strided operand).
TEST_P(ImportedTorchvision, RandomPlanMatchesPyTorch) {
  const Imported m = import(GetParam());
  const double err = worst_error_against_pytorch(m, random_plan(m.graph, 1));
  std::cout << GetParam() << ": random plan worst relative error " << err << "\n";
}

TEST_P(ImportedTorchvision, StoreAllMatchesPyTorch) {
  const Imported m = import(GetParam());
  const double err = worst_error_against_pytorch(m, store_all_plan(m.graph));
  std::cout << GetParam() << ": " << m.graph.nodes().size() << " nodes, store-all worst relative "
            << "error " << err << "\n";
}

// Store-all's whole step (float32, Adam) never peaks above autograd's.
TEST_P(ImportedTorchvision, StoreAllStepPeaksAtMostAsAutogradsStep) {
  const Imported m = import(GetParam());
  const testing::StepPeaks peaks =
      testing::store_all_and_autograd_step_peaks(m.graph, m.state, m.batch);
  EXPECT_LE(peaks.store_all, peaks.autograd);
  std::cout << GetParam() << " Adam step: store-all " << peaks.store_all << " B, autograd "
            << peaks.autograd << " B above the step's start\n";
}

// A MONeT plan under a budget halfway between the smallest peak of the memory-lean
// heuristic plans and store-all's peak. (At these input sizes parameters and their
// gradients are most of the peak, so 0.5x store-all's peak is below what any plan can
// reach; docs/RESULTS.md measures 0.5x at full size.)
TEST_P(ImportedTorchvision, MonetPlanBetweenLeanAndStoreAllMatchesPyTorch) {
  const Imported m = import(GetParam());
  const CostModel costs = testing::quick_profile(m.graph, m.state, m.batch);
  const SimulationResult all = simulate(m.graph, store_all_plan(m.graph), costs);
  const SimulationResult lean = simulate(m.graph, best_lean_plan(m.graph, costs, -1), costs);
  ASSERT_LT(lean.peak_bytes, all.peak_bytes);
  const int64_t floor = lean.peak_bytes;
  MonetOptions o;
  o.budget_bytes = floor + (all.peak_bytes - floor) / 2;
  o.solver.time_limit_seconds = 15;
  o.solver.search_limit = SearchLimit::kWork;
  o.solver.relative_gap = 0.02;
  const MonetResult r = plan_monet(m.graph, costs, o);
  ASSERT_TRUE(r.found) << "no plan within " << o.budget_bytes << " B (store-all peak "
                       << all.peak_bytes << " B)";
  EXPECT_LE(r.predicted.peak_bytes, o.budget_bytes);
  // The plan runs in float32 with the peak the simulator predicts.
  ModelState s = m.state.clone();
  Executor executor(m.graph, s, r.plan);
  const ExecutionResult run = executor.run(m.batch);
  EXPECT_EQ(run.peak_bytes - run.start_bytes, r.predicted.peak_above_start());
  const double err = worst_error_against_pytorch(m, r.plan);
  std::cout << GetParam() << ": budget " << o.budget_bytes
            << " B = " << static_cast<double>(o.budget_bytes) / all.peak_bytes
            << "x store-all's peak, plan peak " << r.predicted.peak_bytes << " B, "
            << r.predicted.seconds << " s/iter (store-all " << all.seconds
            << "), worst relative error " << err << "\n";
}

INSTANTIATE_TEST_SUITE_P(Torchvision, ImportedTorchvision,
                         ::testing::Values("resnet18", "resnet50", "vgg11", "mobilenet_v2",
                                           "mobilenet_v3_small", "googlenet", "densenet121",
                                           "efficientnet_b0", "shufflenet_v2_x0_5", "convnext_tiny",
                                           "swin_t", "vit_tiny", "generic_ops", "unet_gn",
                                           "fcn_resnet50", "deeplabv3_mobilenet_v3_large",
                                           "gpt_tiny", "gpt_tied_matmul", "first_outputs",
                                           "integer_results", "encoder_tiny", "spectral_norm"),
                         [](const auto& info) { return info.param; });

// Training through the public API on traced torchvision models: 5 steps of SGD with
// momentum and of Adam under a MONeT plan equal LibTorch autograd's (batch 8, float64).
class ImportedTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(ImportedTraining, SgdMomentumAndAdamMatchAutogradInFloat64) {
  const ModelSpec spec = testing::traced_spec(kDir + "/" + GetParam() + ".pt", {8, 3, 64, 64});
  const std::string plan = testing::write_monet_plan(Model::load(spec, 0), at::kDouble);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    testing::NoiseCounts noise;
    const double err = testing::train_and_compare(spec, plan, kind, at::kDouble, &noise);
    EXPECT_LE(err, 1e-10) << optimizer_kind_name(kind);
    std::printf(
        "imported %s %s float64: largest relative error %.3g (%lld noise gradient entries set to "
        "zero, %d noise-only buffers left out)\n",
        GetParam().c_str(), optimizer_kind_name(kind), err,
        static_cast<long long>(noise.gradient_entries_zeroed), noise.buffers_left_out);
  }
}

INSTANTIATE_TEST_SUITE_P(Torchvision, ImportedTraining,
                         ::testing::Values("resnet18", "mobilenet_v3_small"),
                         [](const auto& info) { return info.param; });

// 5 steps of SGD with momentum and of Adam of a traced GPT-2-style decoder (token ids
// in, int64; cross-entropy over [N, T, V] logits) through the public API under a MONeT
// plan, against LibTorch autograd in float64.
void expect_gpt_trains_as_autograd(const std::string& name) {
  ModelSpec spec;
  spec.model = kDir + "/" + name + ".pt";
  spec.input_shape = {8, 16};
  spec.loss = LossKind::kSequenceCrossEntropy;
  const std::string plan = testing::write_monet_plan(Model::load(spec, 0), at::kDouble);
  for (OptimizerKind kind : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    testing::NoiseCounts noise;
    const double err = testing::train_and_compare(spec, plan, kind, at::kDouble, &noise);
    EXPECT_LE(err, 1e-10) << name << " " << optimizer_kind_name(kind);
    std::printf(
        "%s %s float64: largest relative error %.3g (%lld noise gradient entries set to "
        "zero, %d noise-only buffers left out)\n",
        name.c_str(), optimizer_kind_name(kind), err,
        static_cast<long long>(noise.gradient_entries_zeroed), noise.buffers_left_out);
  }
}

// TinyGPT (tools/make_import_fixtures.py): the causal mask buffer a constant of the
// trace, the head's weight tied to the token embedding (one parameter).
TEST(TorchscriptImport, TinyGptTrainsAsAutogradWithTokenInputsAndTiedWeights) {
  ModelSpec spec;
  spec.model = kDir + "/gpt_tiny.pt";
  spec.input_shape = {8, 16};
  spec.loss = LossKind::kSequenceCrossEntropy;
  const Model model = Model::load(spec, 0);
  const Graph& g = impl_of(model)->graph;
  EXPECT_EQ(g.value(g.values_of_kind(ValueKind::kInput).at(0)).dtype, at::kLong);
  EXPECT_EQ(model.target_shape(), (std::vector<int64_t>{8, 16}));
  std::set<std::string> names;
  for (const auto& [name, t] : model.named_parameters()) names.insert(name);
  EXPECT_TRUE(names.count("wte.weight"));
  EXPECT_FALSE(names.count("head.weight")) << "the tied head weight is a second parameter";
  EXPECT_TRUE(model.named_buffers().empty()) << "the causal mask should be a constant";
  expect_gpt_trains_as_autograd("gpt_tiny");
}

// Fused optimizer updates on traced models, under a MONeT plan made for them: the tied
// decoder (wte.weight is read by the embedding and the head; it is updated after the
// embedding's backward, its last use) and torchvision's ResNet-18, 5 steps against
// torch::optim after LibTorch autograd in float64.
TEST(TorchscriptImport, FusedUpdatesOfTheTiedDecoderAndResnet18MatchTorchOptim) {
  ModelSpec gpt;
  gpt.model = kDir + "/gpt_tiny.pt";
  gpt.input_shape = {8, 16};
  gpt.loss = LossKind::kSequenceCrossEntropy;
  const ModelSpec resnet = testing::traced_spec(kDir + "/resnet18.pt", {8, 3, 64, 64});
  const std::vector<std::pair<const char*, testing::MakeOptimizer>> optimizers = {
      {"sgd-nesterov-weight-decay",
       [](const auto& p) {
         return std::make_unique<torch::optim::SGD>(
             p, torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(1e-4));
       }},
      {"adamw", [](const auto& p) {
         return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(1e-3));
       }}};
  for (const ModelSpec& spec : {gpt, resnet}) {
    const std::string plan = testing::fused_plan(spec, false);
    for (const auto& [name, make] : optimizers) {
      const double err = testing::fused_training_error(spec, plan, make, 5, 5);
      EXPECT_LE(err, 1e-10) << spec.model << " " << name;
      std::printf("%s %s fused float64: largest relative error %.3g\n", spec.model.c_str(), name,
                  err);
    }
  }
}

// The decoder with its logits computed as `h @ wte.weight.t()`: one parameter read by the
// embedding and, through a view of it (a transpose), by a matmul. Every planner plans it;
// each plan runs with the peak the simulator predicts and gives PyTorch's loss and
// gradients in float64; training equals autograd's.
TEST(TorchscriptImport, HeadTiedThroughAViewOfTheEmbeddingPlansWithEveryPlanner) {
  MemoryTracker::install();
  const Imported m = import("gpt_tied_matmul");
  EXPECT_EQ(m.graph.parameters().size(), 28u) << "wte.weight is one parameter";
  const CostModel costs = testing::quick_profile(m.graph, m.state, m.batch);
  const int64_t budget = testing::halfway_budget(m.graph, costs);
  for (const std::string& planner : planner_names()) {
    if (planner == "gist-fp16") continue;  // lossy: its gradients are not autograd's
    PlannerRequest request;
    request.planner = planner;
    if (planner_uses_budget(planner)) request.budget_bytes = budget;
    request.solver.time_limit_seconds = 5;
    request.solver.search_limit = SearchLimit::kWork;
    const PlannerOutcome out = make_plan(m.graph, &costs, request);
    ASSERT_TRUE(out.found) << planner;
    const SimulationResult sim = simulate(m.graph, out.plan, costs);
    if (planner_uses_budget(planner)) {
      EXPECT_LE(sim.peak_bytes, budget) << planner;
    }
    ModelState state = m.state.clone();
    Executor executor(m.graph, state, out.plan);
    const ExecutionResult run = executor.run(m.batch);
    EXPECT_EQ(run.peak_bytes - run.start_bytes, sim.peak_above_start()) << planner;
    EXPECT_LE(worst_error_against_pytorch(m, out.plan), 1e-9) << planner;
  }
  expect_gpt_trains_as_autograd("gpt_tied_matmul");
}

// The attention of the GPT (matmul, scaling, causal masked_fill, softmax, dropout,
// matmul) and of torchvision's ViT (q / sqrt(d), bmm, softmax, bmm) becomes one attention
// node per layer; on the generic operator path it stays unfused.
TEST(TorchscriptImport, AttentionPatternsBecomeAttentionNodes) {
  auto attention_nodes = [](const Graph& g) {
    int count = 0;
    for (const Node& n : g.nodes()) count += n.op == OpKind::kAttention;
    return count;
  };
  const Imported gpt = import("gpt_tiny");
  EXPECT_EQ(attention_nodes(gpt.graph), 2);
  const Imported vit = import("vit_tiny");
  EXPECT_EQ(attention_nodes(vit.graph), 2);
  const Imported encoder = import("encoder_tiny");  // nn.TransformerEncoder
  EXPECT_EQ(attention_nodes(encoder.graph), 2);
  ImportOptions generic = import_options("gpt_tiny");
  generic.activations_and_norms = OperatorPath::kGeneric;
  EXPECT_EQ(attention_nodes(import("gpt_tiny", generic).graph), 0);
}

// The fixtures set every dropout's probability to 0 (make_import_fixtures.py's
// prepare()): ATen's dropout then returns its input, and the import makes no node of it.
TEST(TorchscriptImport, DropoutWithProbabilityZeroIsNoOperator) {
  for (const char* name : {"vit_tiny", "swin_t", "gpt_tiny"}) {
    const Imported m = import(name);
    for (const Node& n : m.graph.nodes())
      EXPECT_NE(n.op, OpKind::kDropout) << name << ": " << n.name;
  }
}

// With lossy implementations offered, the GPT's GELUs (and nothing else) offer the
// few-bit backward.
TEST(TorchscriptImport, LossyImplementationsAreOfferedOnlyWhenAsked) {
  auto lossy_nodes = [](const Graph& g) {
    int count = 0;
    for (const Node& n : g.nodes()) {
      bool lossy = false;
      for (const auto& f : forward_impls(g, n)) lossy = lossy || f.lossy;
      count += lossy;
    }
    return count;
  };
  EXPECT_EQ(lossy_nodes(import("gpt_tiny").graph), 0);
  ImportOptions o = import_options("gpt_tiny");
  o.lossy = LossyOffer::kOffered;
  EXPECT_EQ(lossy_nodes(import("gpt_tiny", o).graph), 2);
}

// The autograd baseline (the reference forward under LibTorch autograd) runs traced
// attention too: nn.MultiheadAttention's heads are views of slices that PyTorch made
// contiguous first, and a MONeT plan's gradients equal the baseline's.
TEST(TorchscriptImport, AutogradBaselineRunsTracedAttention) {
  MemoryTracker::install();
  for (const char* name : {"vit_tiny", "encoder_tiny", "gpt_tiny"}) {
    const Imported m = import(name);
    EXPECT_LT(testing::max_gradient_error(m.graph, store_all_plan(m.graph)), 1e-9) << name;
    EXPECT_LT(testing::max_gradient_error(m.graph, chen_plan(m.graph)), 1e-9) << name;
  }
}

TEST(TorchscriptImport, ParametersKeepTheirNamesAndStayTrainable) {
  const Imported m = import("mobilenet_v3_small");
  int se_scales = 0;
  for (const auto& n : m.graph.nodes()) se_scales += n.op == OpKind::kMul;
  EXPECT_EQ(se_scales, 9);  // one squeeze-excitation per block that has one
  bool found = false;
  for (int id : m.graph.parameters())
    found = found || m.graph.value(id).name == "features.0.0.weight";
  EXPECT_TRUE(found);
}

TEST(TorchscriptImport, UnsupportedOperatorIsNamedWithItsLocation) {
  // Traced from a module whose forward updates a parameter in place (fc.weight.mul_(0.9)).
  try {
    import_torchscript(kDir + "/unsupported.pt", {2, 8});
    FAIL() << "expected an ImportError";
  } catch (const ImportError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in-place 'aten::mul_' on the parameter 'fc.weight' is not supported"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("make_import_fixtures.py:"), std::string::npos) << what;
    EXPECT_EQ(e.op, "aten::mul_");
    EXPECT_NE(e.source.find("make_import_fixtures.py:"), std::string::npos) << e.source;
  }
  // Through the public API: monet::UnsupportedOperator with the same fields.
  try {
    ModelSpec spec;
    spec.model = kDir + "/unsupported.pt";
    spec.input_shape = {2, 8};
    Model::load(spec);
    FAIL() << "expected monet::UnsupportedOperator";
  } catch (const UnsupportedOperator& e) {
    EXPECT_EQ(e.operator_name, "aten::mul_");
    EXPECT_NE(e.source.find("make_import_fixtures.py:"), std::string::npos) << e.source;
  }
}

// A dict output is chosen by key, a missing one is refused naming those there are; the
// per-pixel loss's target has the output's shape without the class dimension.
TEST(TorchscriptImport, OutputsAndLossesAreChosenByName) {
  const std::string path = kDir + "/deeplabv3_mobilenet_v3_large.pt";
  const Graph g = import_torchscript(path, {2, 3, 32, 32}, {"out", OpKind::kCrossEntropyLoss});
  const Value& target = g.value(g.values_of_kind(ValueKind::kTarget).at(0));
  EXPECT_EQ(target.shape, (std::vector<int64_t>{2, 32, 32}));
  try {
    import_torchscript(path, {2, 3, 32, 32}, {"aux", OpKind::kCrossEntropyLoss});
    FAIL() << "expected an ImportError";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("no output 'aux' (the model returns out)"),
              std::string::npos)
        << e.what();
  }
  const Graph summed = import_torchscript(path, {2, 3, 32, 32}, {"", OpKind::kSumLoss});
  EXPECT_TRUE(summed.values_of_kind(ValueKind::kTarget).empty());
  EXPECT_NE(summed.fingerprint(), g.fingerprint());
  // A plan file records the output and the loss, so the graph can be rebuilt from it.
  Plan plan = store_all_plan(g);
  plan.model = path;
  plan.config.inputs = {{{2, 3, 32, 32}, std::nullopt}};
  plan.config.import = {"out", OpKind::kSumLoss};
  std::string model;
  ModelConfig config;
  read_plan_model(plan_to_json(g, plan), &model, &config);
  EXPECT_EQ(config.import.output, "out");
  EXPECT_EQ(config.import.loss, OpKind::kSumLoss);
  EXPECT_EQ(config.import.classes, ClassDim::kSecond);
  plan.config.import = {"", OpKind::kCrossEntropyLoss, ClassDim::kLast};  // a language model
  plan.config.import.lossy = LossyOffer::kOffered;
  read_plan_model(plan_to_json(g, plan), &model, &config);
  EXPECT_EQ(config.import.classes, ClassDim::kLast);
  EXPECT_EQ(config.import.lossy, LossyOffer::kOffered);
  const ModelSpec spec = testing::traced_spec(kDir + "/unet_gn.pt", {2, 3, 32, 32}, LossKind::kMSE);
  const Model m = Model::load(spec);
  EXPECT_EQ(m.target_dtype(), torch::kFloat);
  EXPECT_EQ(m.target_shape(), (std::vector<int64_t>{2, 3, 32, 32}));
  EXPECT_THROW(loss_kind_from_name("hinge"), std::invalid_argument);
  EXPECT_STREQ(loss_kind_name(loss_kind_from_name("bce_with_logits")), "bce_with_logits");
}

// With activations and batch norms on the generic path (--operator-path generic), a traced
// ResNet-18 keeps none of their own operators and still trains as PyTorch does.
TEST(TorchscriptImport, GenericOperatorPathMatchesPyTorch) {
  MemoryTracker::install();
  ImportOptions options;
  options.activations_and_norms = OperatorPath::kGeneric;
  const Imported m = import("resnet18", options);
  int generic = 0;
  for (const Node& n : m.graph.nodes()) {
    EXPECT_NE(n.op, OpKind::kReLU) << n.name;
    EXPECT_NE(n.op, OpKind::kBatchNorm) << n.name;
    generic += n.op == OpKind::kAten;
  }
  EXPECT_EQ(generic, 17 + 20);  // ReLUs and batch norms
  EXPECT_NE(m.graph.fingerprint(), import("resnet18").graph.fingerprint());
  EXPECT_LE(worst_error_against_pytorch(m, store_all_plan(m.graph)), 1e-9);
}

TEST(TorchscriptImport, BadFileAndBadShapeGiveClearErrors) {
  const std::string bad = ::testing::TempDir() + "/not_a_model.pt";
  std::ofstream(bad) << "not a zip archive";
  EXPECT_THROW(import_torchscript(bad, {2, 3, 64, 64}), ImportError);
  try {
    import_torchscript(kDir + "/resnet18.pt", {2, 1, 64, 64});  // one channel, not three
    FAIL() << "expected an ImportError";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("conv1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace monet
