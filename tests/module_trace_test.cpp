// save_traced_module and load_traced_module (monet/module_trace.h): a LibTorch module
// written in C++, traced, planned and trained against the same module trained by
// LibTorch's autograd; and what they refuse.
#include <gtest/gtest.h>

#include <monet/module_trace.h>

#include "gradient_check.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace monet {
namespace {

namespace fs = std::filesystem;

// What LibTorch's own modules trace to: a convolution, a batch norm (running statistics
// and their count updated in the forward), a Sequential with a bias-free convolution and
// max pooling, a residual, and a bias-free Linear (an absent parameter).
struct SmallNetImpl : torch::nn::Module {
  SmallNetImpl()
      : conv(register_module("conv",
                             torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)))),
        norm(register_module("norm", torch::nn::BatchNorm2d(8))),
        body(register_module(
            "body", torch::nn::Sequential(
                        torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)),
                        torch::nn::ReLU(), torch::nn::MaxPool2d(2)))),
        head(register_module("head",
                             torch::nn::Linear(torch::nn::LinearOptions(8, 10).bias(false)))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(norm(conv(x)));
    x = body->forward(x) + torch::max_pool2d(x, 2);
    return head(x.mean({2, 3}));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d norm;
  torch::nn::Sequential body;
  torch::nn::Linear head;
};
TORCH_MODULE(SmallNet);

// A module built after seeding the generator with 0 (so that two are alike), in float64
// and training mode.
template <typename Net>
Net seeded() {
  torch::manual_seed(0);
  Net net;
  net->to(torch::kDouble);
  net->train();
  return net;
}

std::string empty_trace_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/monet_module_trace_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A recurrent language model: token ids (int64) through an embedding, a 2-layer LSTM
// (one aten::lstm call over a list of weights, a tuple of results) and a Linear.
struct RecurrentLMImpl : torch::nn::Module {
  RecurrentLMImpl()
      : embed(register_module("embed", torch::nn::Embedding(16, 8))),
        lstm(register_module(
            "lstm", torch::nn::LSTM(torch::nn::LSTMOptions(8, 8).num_layers(2).batch_first(true)))),
        head(register_module("head", torch::nn::Linear(8, 16))) {}
  torch::Tensor forward(torch::Tensor tokens) { return head(std::get<0>(lstm(embed(tokens)))); }
  torch::nn::Embedding embed;
  torch::nn::LSTM lstm;
  torch::nn::Linear head;
};
TORCH_MODULE(RecurrentLM);

// LibTorch's Transformer encoder layer (multi-head attention, layer norms, a ReLU MLP;
// dropout off) over embedded tokens, classified from their mean.
struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : embed(register_module("embed", torch::nn::Embedding(16, 8))),
        layer(register_module(
            "layer",
            torch::nn::TransformerEncoderLayer(
                torch::nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0)))),
        head(register_module("head", torch::nn::Linear(8, 10))) {}
  torch::Tensor forward(torch::Tensor tokens) {  // [N, T]; the layer takes [T, N, E]
    return head(layer(embed(tokens).transpose(0, 1)).mean(0));
  }
  torch::nn::Embedding embed;
  torch::nn::TransformerEncoderLayer layer;
  torch::nn::Linear head;
};
TORCH_MODULE(Encoder);

// Trains `net` 3 SGD-momentum steps in float64 under the plan halfway between the
// smallest budget and store-all, and `reference` (the same weights) 3 steps under
// LibTorch's autograd with `loss`: the losses, parameters and buffers (but batch norms'
// num_batches_tracked, module_trace.h) agree, and the model's tensors are the module's.
// Returns whether the plan is leaner than store-all (a tiny LSTM's floor is its own
// backward: no plan is).
template <typename Net>
bool expect_trains_as_autograd(
    const std::string& name, Net net, Net reference, const std::vector<torch::Tensor>& xs,
    const std::vector<torch::Tensor>& ys, LossKind kind,
    const std::function<torch::Tensor(torch::Tensor, torch::Tensor)>& loss) {
  const std::string dir = empty_trace_dir(name);
  const ModuleForward forward = [&](const std::vector<torch::Tensor>& in) {
    return net->forward(in.at(0));
  };
  ModelSpec spec;
  spec.loss = kind;
  Model model = load_traced_module(*net, forward, {xs[0]}, dir + "/net.pt", spec);
  for (const auto& [key, t] : model.named_parameters())
    EXPECT_TRUE(t.is_same(net->named_parameters()[key])) << key << ": not the module's";
  PlanOptions options;
  options.cache_dir = dir + "/cache";
  options.planning_limit = PlanningLimit::kWork;
  const BudgetRange range = budget_range(model, options);
  options.budget = std::to_string((range.smallest_bytes + range.storeall_bytes) / 2);
  PlannedModel planned(model, options);
  const auto sgd_options = torch::optim::SGDOptions(0.1).momentum(0.9);
  torch::optim::SGD sgd(net->parameters(), sgd_options);
  torch::optim::SGD reference_sgd(reference->parameters(), sgd_options);
  for (size_t i = 0; i < xs.size(); ++i) {
    zero_grad(net->parameters());
    const StepResult r = planned.step(xs[i], ys[i]);
    sgd.step();
    reference_sgd.zero_grad();
    torch::Tensor want = loss(reference->forward(xs[i]), ys[i]);
    want.backward();
    reference_sgd.step();
    EXPECT_NEAR(r.loss, want.item<double>(), 1e-10 * std::abs(want.item<double>()))
        << name << " step " << i;
  }
  for (const auto& p : reference->named_parameters())
    EXPECT_LE(testing::relative_error(net->named_parameters()[p.key()], p.value(), 1e-300), 1e-10)
        << name << " " << p.key();
  for (const auto& b : reference->named_buffers()) {
    if (b.key().find("num_batches_tracked") != std::string::npos) continue;
    EXPECT_LE(testing::relative_error(net->named_buffers()[b.key()].to(torch::kDouble),
                                      b.value().to(torch::kDouble), 1e-300),
              1e-10)
        << name << " " << b.key();
  }
  return *planned.report().predicted_peak_bytes < *planned.report().storeall_predicted_peak_bytes;
}

std::vector<torch::Tensor> three_batches(const std::function<torch::Tensor()>& make) {
  return {make(), make(), make()};
}

TEST(ModuleTrace, ALibTorchModuleTrainsUnderAPlanAsUnderAutograd) {
  SmallNet net = seeded<SmallNet>(), reference = seeded<SmallNet>();
  EXPECT_EQ(net->named_parameters().size(), 6u);
  torch::manual_seed(1);
  const auto xs = three_batches([] { return torch::randn({4, 3, 8, 8}, torch::kDouble); });
  const auto ys = three_batches([] { return torch::randint(0, 10, {4}, torch::kLong); });
  EXPECT_TRUE(expect_trains_as_autograd(
      "small_net", net, reference, xs, ys, LossKind::kCrossEntropy,
      [](torch::Tensor out, torch::Tensor y) { return torch::cross_entropy_loss(out, y); }));
}

TEST(ModuleTrace, ALibTorchLstmAndTransformerTrainFromTokenIds) {
  torch::manual_seed(1);
  const auto tokens = three_batches([] { return torch::randint(0, 16, {4, 6}, torch::kLong); });
  const auto next = three_batches([] { return torch::randint(0, 16, {4, 6}, torch::kLong); });
  const auto classes = three_batches([] { return torch::randint(0, 10, {4}, torch::kLong); });
  expect_trains_as_autograd("lstm_lm", seeded<RecurrentLM>(), seeded<RecurrentLM>(), tokens, next,
                            LossKind::kSequenceCrossEntropy,
                            [](torch::Tensor logits, torch::Tensor y) {
                              return torch::cross_entropy_loss(logits.transpose(1, 2), y);
                            });
  EXPECT_TRUE(expect_trains_as_autograd(
      "encoder", seeded<Encoder>(), seeded<Encoder>(), tokens, classes, LossKind::kCrossEntropy,
      [](torch::Tensor out, torch::Tensor y) { return torch::cross_entropy_loss(out, y); }));
}

TEST(ModuleTrace, WhatCannotBeTracedIsRefusedAndNoFileIsLeft) {
  const std::string dir = empty_trace_dir("refused"), path = dir + "/net.pt";
  SmallNet net = seeded<SmallNet>();
  const ModuleForward forward = [&](const std::vector<torch::Tensor>& in) {
    return net->forward(in.at(0));
  };
  EXPECT_THROW(save_traced_module(*net, forward, {}, path), std::invalid_argument);
  EXPECT_THROW(save_traced_module(*net, forward, {torch::Tensor()}, path), std::invalid_argument);
  try {  // 4 channels into a convolution of 3
    save_traced_module(*net, forward, {torch::randn({2, 4, 8, 8}, torch::kDouble)}, path);
    ADD_FAILURE() << "traced a forward that fails";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tracing SmallNetImpl for '" + path + "' failed"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir)) << "a temporary file was left";
  torch::nn::Sequential cumulative(
      torch::nn::Conv2d(3, 4, 3),
      torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(4).momentum(c10::nullopt)));
  try {
    save_traced_module(
        *cumulative,
        [&](const std::vector<torch::Tensor>& in) { return cumulative->forward(in.at(0)); },
        {torch::randn({2, 3, 8, 8})}, path);
    ADD_FAILURE() << "traced a cumulative average";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'1' averages its running statistics cumulatively"),
              std::string::npos)
        << e.what();
  }
  ModelSpec named;
  named.model = "resnet18";
  EXPECT_THROW(
      load_traced_module(*net, forward, {torch::randn({2, 3, 8, 8}, torch::kDouble)}, path, named),
      std::invalid_argument);
  // The tracer is left inactive: the same module traces afterwards.
  save_traced_module(*net, forward, {torch::randn({2, 3, 8, 8}, torch::kDouble)}, path);
  EXPECT_TRUE(fs::exists(path));
}

#ifdef MONET_BINARY
// The file save_traced_module writes is a model for the CLI: `monet plan` plans it and
// `monet verify` finds the plan's gradients equal to autograd's.
TEST(ModuleTrace, TheSavedFileIsPlannedAndVerifiedByTheCli) {
  const std::string dir = empty_trace_dir("cli"), path = dir + "/net.pt";
  torch::manual_seed(0);
  SmallNet net;
  net->train();
  save_traced_module(
      *net, [&](const std::vector<torch::Tensor>& in) { return net->forward(in.at(0)); },
      {torch::randn({4, 3, 8, 8})}, path);
  const std::string cli = std::string(MONET_BINARY) + " ";
  const std::string plan = dir + "/plan.json", out = dir + "/verify.txt";
  ASSERT_EQ(std::system((cli + "plan --model " + path + " --input-shape 4,3,8,8 --planner chen" +
                         " --cache-dir " + dir + "/cache -o " + plan + " 2>/dev/null")
                            .c_str()),
            0);
  ASSERT_EQ(std::system((cli + "verify --plan " + plan + " > " + out + " 2>&1").c_str()), 0);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("OK"), std::string::npos) << text;
}
#endif

}  // namespace
}  // namespace monet
