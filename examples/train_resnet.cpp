// Trains a small ResNet-18 under 0.8x of autograd's memory with a torch::optim
// optimizer, through monet's public API. Build: see examples/CMakeLists.txt.
#include <monet/monet.h>

#include <iostream>

int main() {
  monet::MemoryStats::install();
  monet::Model model = monet::Model::load({"resnet18", /*batch=*/32, /*image=*/{64, 64},
                                           /*width=*/0.125, /*classes=*/10});
  monet::PlanOptions options;
  options.budget = "0.8x";  // of autograd's peak for the same training step
  options.optimizer = monet::OptimizerKind::kSGDMomentum;
  monet::PlannedModel planned(model, options);
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));

  const torch::Tensor x = torch::randn({32, 3, 64, 64}), y = torch::randint(0, 10, {32});
  for (int step = 0; step < 5; ++step) {
    monet::MemoryStats::reset_peak();
    monet::zero_grad(model.parameters());
    const monet::StepResult r = planned.step(x, y);
    sgd.step();
    std::cout << "step " << step << " loss " << r.loss << " peak "
              << monet::MemoryStats::peak_bytes() << " B (budget " << *planned.report().budget_bytes
              << " B)\n";
  }
  return 0;
}
