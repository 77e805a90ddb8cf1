// expect_training_matches_autograd: steps of a torch::optim optimizer on a monet::Model
// trained through PlannedModel::step under a plan, against the same optimizer on plain
// LibTorch autograd from the same weights and batches: losses, parameters and buffers
// compared after every step.
#pragma once

#include <gtest/gtest.h>

#include <monet/monet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>

#include "api/model_impl.h"
#include "gradient_check.h"
#include "runtime/autograd_baseline.h"

namespace monet::testing {

inline std::unique_ptr<torch::optim::Optimizer> make_test_optimizer(
    OptimizerKind kind, const std::vector<torch::Tensor>& params) {
  if (kind == OptimizerKind::kAdam)
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-3));
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
}

/// Converts the model's parameters and buffers to `dtype` (parameters stay leaves that
/// require grad).
inline void convert_model(Model& model, at::ScalarType dtype) {
  Model::Impl& m = *model.impl();
  for (const auto& v : m.graph.values()) {
    if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
    at::Tensor t = m.state.tensor(v.id).detach().to(dtype);
    if (v.kind == ValueKind::kParameter) t.requires_grad_(true);
    m.state.tensor(v.id) = t;
  }
}

/// The largest relative error of loss, parameters and buffers over `steps` steps.
/// `batch_at(step)` gives each step's batch (inputs and targets by value id).
/// Parameters whose first autograd gradient is mathematically zero (at most 1e-10 of the
/// largest: a batch-norm shift that the next batch norm cancels, as after MobileNetV2's
/// projections) hold rounding noise, which Adam normalises into full-size steps in any
/// two runs that round differently; they cannot change the loss and are left out of the
/// comparison (their count goes to `noise_only`).
inline double training_error(Model& model, PlannedModel& planned, OptimizerKind kind, int steps,
                             const std::function<Batch(int)>& batch_at, int* noise_only = nullptr) {
  Model::Impl& m = *model.impl();
  ModelState reference = m.state.clone();
  AutogradBaseline autograd(m.graph, reference);
  std::vector<torch::Tensor> ref_params;
  for (int id : m.graph.parameters()) ref_params.push_back(reference.tensor(id));
  auto ref_opt = make_test_optimizer(kind, ref_params);
  auto opt = make_test_optimizer(kind, model.parameters());
  double worst = 0;
  std::set<int> zero_gradient;  // parameter value ids
  for (int s = 0; s < steps; ++s) {
    const Batch batch = batch_at(s);
    IterationOptions io;
    io.iteration_seed = static_cast<uint64_t>(s);  // the planned step's dropout seed
    const IterationResult ref = autograd.run_iteration(batch, io);
    const double ref_loss = ref.loss;
    if (s == 0) {
      double largest = 0;
      for (const auto& g : ref.gradients) largest = std::max(largest, g.abs().max().item<double>());
      const auto params = m.graph.parameters();
      for (size_t i = 0; i < params.size(); ++i)
        if (ref.gradients[i].abs().max().item<double>() <= 1e-10 * largest)
          zero_gradient.insert(params[i]);
      if (noise_only) *noise_only = static_cast<int>(zero_gradient.size());
    }
    ref_opt->step();
    zero_grad(model.parameters());
    const StepResult r =
        planned.step(batch.at(m.input_value), batch.at(m.target_value));
    opt->step();
    if (std::getenv("MONET_TRAINING_DEBUG")) std::printf("step %d loss %.17g %.17g\n", s, r.loss, ref_loss);
    worst = std::max(worst, std::abs(r.loss - ref_loss) / std::max(std::abs(ref_loss), 1e-30));
    for (const auto& v : m.graph.values()) {
      if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
      if (zero_gradient.count(v.id)) continue;
      const at::Tensor& want = reference.tensor(v.id);
      const double scale = std::max(want.abs().max().item<double>(), 1e-30);
      const double err = (m.state.tensor(v.id) - want).abs().max().item<double>() / scale;
      if (err > worst) worst = err;
      if (err > 1e-10 && std::getenv("MONET_TRAINING_DEBUG"))
        std::printf("step %d %s: %.3g\n", s, v.name.c_str(), err);
    }
  }
  return worst;
}

/// A reproducible batch of `model` in `dtype`.
inline Batch test_batch(const Model& model, uint64_t seed, at::ScalarType dtype) {
  Batch b = make_batch(model.impl()->graph, seed);
  for (auto& [id, t] : b)
    if (t.is_floating_point()) t = t.to(dtype);
  return b;
}

}  // namespace monet::testing
