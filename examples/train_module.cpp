// Trains a LibTorch module written in C++ under 0.7x of autograd's memory: monet traces
// it (monet/module_trace.h), plans it and trains the module's own tensors.
// Build: see examples/CMakeLists.txt.
#include <monet/module_trace.h>

#include <iostream>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : stem(register_module("stem",
                             torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 32, 3).padding(1)))),
        norm(register_module("norm", torch::nn::BatchNorm2d(32))),
        block(register_module(
            "block",
            torch::nn::Sequential(
                torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 32, 3).padding(1).bias(false)),
                torch::nn::BatchNorm2d(32), torch::nn::ReLU(),
                torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 32, 3).padding(1).bias(false)),
                torch::nn::BatchNorm2d(32)))),
        head(register_module("head", torch::nn::Linear(32, 10))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(norm(stem(x)));
    x = torch::relu(block->forward(x) + x);
    return head(x.mean({2, 3}));
  }

  torch::nn::Conv2d stem;
  torch::nn::BatchNorm2d norm;
  torch::nn::Sequential block;
  torch::nn::Linear head;
};
TORCH_MODULE(Net);

int main() {
  monet::MemoryStats::install();
  Net net;
  net->train();
  const torch::Tensor x = torch::randn({32, 3, 32, 32}), y = torch::randint(0, 10, {32});
  // The model's parameters and buffers are net's own tensors.
  monet::Model model = monet::load_traced_module(
      *net, [&](const std::vector<torch::Tensor>& in) { return net->forward(in[0]); }, {x},
      "net.pt");
  monet::PlanOptions options;
  options.budget = "0.7x";  // of autograd's peak for the same training step
  monet::PlannedModel planned(model, options);
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (int step = 0; step < 5; ++step) {
    monet::MemoryStats::reset_peak();
    monet::zero_grad(net->parameters());
    const monet::StepResult r = planned.step(x, y);
    sgd.step();
    std::cout << "module step " << step << " loss " << r.loss << " peak "
              << monet::MemoryStats::peak_bytes() << " B (budget " << *planned.report().budget_bytes
              << " B)\n";
  }
  return 0;
}
