// expect_training_matches_autograd: steps of a torch::optim optimizer on a monet::Model
// trained through PlannedModel::step under a plan, against the same optimizer on plain
// LibTorch autograd from the same weights and batches: losses, parameters and buffers
// compared after every step. fused_training_error: the same with the optimizer's updates
// fused into the planned backward (OptimizerUpdate::kFused).
#pragma once

#include <gtest/gtest.h>

#include <monet/monet.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <set>

#include <torch/optim/schedulers/step_lr.h>

#include "api/model_impl.h"
#include "gradient_check.h"
#include "halfway_budget.h"
#include "planner/monet_planner.h"
#include "quick_profile.h"
#include "runtime/autograd_baseline.h"

namespace monet::testing {

inline std::unique_ptr<torch::optim::Optimizer> make_test_optimizer(
    OptimizerKind kind, const std::vector<torch::Tensor>& params) {
  if (kind == OptimizerKind::kAdam)
    return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-3));
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
}

/// Converts the model's parameters and buffers to `dtype` (parameters stay leaves that
/// require grad).
inline void convert_model(Model& model, at::ScalarType dtype) {
  Model::Impl& m = *impl_of(model);
  for (const auto& v : m.graph.values()) {
    if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
    at::Tensor t = m.state.tensor(v.id).detach().to(dtype);
    if (v.kind == ValueKind::kParameter) t.requires_grad_(true);
    m.state.tensor(v.id) = t;
  }
}

/// A loss of the caller's own: (model output, target) -> scalar, differentiable.
using UserLoss = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;

/// Gradient entries that are mathematically zero (a batch-norm shift's channel that a
/// later batch norm cancels, as after MobileNetV2's projections or behind a ReLU that
/// passes the whole channel) come out of any computation as rounding noise of about 1e-17,
/// which differs between two runs that round differently. Adam turns such an entry into a
/// step of lr * g / (|g| + eps), about 1e-12, as different in the two runs as the noise
/// itself, and the parameter then carries it into the batch statistics after it. Entries
/// at most 1e-10 of the largest gradient entry on both sides (`reference`: autograd's
/// parameters, `planned`: the plan's) are set to the zero they are, on both sides, before
/// the optimizer steps; an entry that is larger on either side is left as it is, so a
/// real difference shows. Returns how many entries were set that were not zero already.
inline int64_t zero_rounding_noise(const std::vector<torch::Tensor>& reference,
                                   const std::vector<torch::Tensor>& planned) {
  double largest = 0;
  for (const auto& p : reference) largest = std::max(largest, p.grad().abs().max().item<double>());
  const double noise = 1e-10 * largest;
  int64_t zeroed = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const at::Tensor both = reference[i].grad().abs().le(noise) & planned[i].grad().abs().le(noise);
    zeroed += (both & (reference[i].grad().ne(0) | planned[i].grad().ne(0))).sum().item<int64_t>();
    reference[i].grad().masked_fill_(both, 0);
    planned[i].grad().masked_fill_(both, 0);
  }
  return zeroed;
}

/// What training_error set aside as rounding noise.
struct NoiseCounts {
  int64_t gradient_entries_zeroed = 0;  // over all steps (zero_rounding_noise)
  int buffers_left_out = 0;             // noise_only_buffers
};

/// Batch-norm running means that are mathematically zero after the first step (their
/// largest entry at most 1e-10 of the largest buffer entry: the mean of a batch norm's
/// output through a convolution into the next batch norm) hold rounding noise only; they
/// are left out of the comparison. `reference`: the state after the first autograd
/// iteration.
inline std::set<int> noise_only_buffers(const Graph& g, ModelState& reference) {
  std::set<int> noise;
  double largest = 0;
  for (int id : g.values_of_kind(ValueKind::kBuffer))
    if (reference.tensor(id).is_floating_point())
      largest = std::max(largest, reference.tensor(id).abs().max().item<double>());
  for (int id : g.values_of_kind(ValueKind::kBuffer))
    if (reference.tensor(id).is_floating_point() &&
        reference.tensor(id).abs().max().item<double>() <= 1e-10 * largest)
      noise.insert(id);
  return noise;
}

/// The largest relative error (max-norm of the difference over the max-norm of `want`) of
/// `got`'s parameters and buffers against `want`'s, leaving out `skip`.
inline double state_error(const Graph& g, ModelState& got, ModelState& want,
                          const std::set<int>& skip, int step) {
  double worst = 0;
  for (const auto& v : g.values()) {
    if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
    if (skip.count(v.id)) continue;
    const at::Tensor& w = want.tensor(v.id);
    const double scale = std::max(w.abs().max().item<double>(), 1e-30);
    const double err = (got.tensor(v.id) - w).abs().max().item<double>() / scale;
    worst = std::max(worst, err);
    if (err > 1e-10 && std::getenv("MONET_TRAINING_DEBUG"))
      std::printf("step %d %s: %.3g (largest entry %.3g)\n", step, v.name.c_str(), err, scale);
  }
  return worst;
}

inline double relative_difference(double got, double want) {
  return std::abs(got - want) / std::max(std::abs(want), 1e-30);
}

/// The largest relative error of loss, parameters and buffers over `steps` steps.
/// `batch_at(step)` gives each step's batch (inputs and targets by value id). With
/// `user_loss`, both sides compute it from the model's output (PlannedModel::forward and
/// loss.backward() against autograd's forward to the same output); else both use the
/// model's built-in loss (PlannedModel::step against AutogradBaseline::run_iteration).
/// Gradient entries of rounding noise are set to zero on both sides (zero_rounding_noise)
/// and noise_only_buffers left out of the comparison; `counts` gets how many.
inline double training_error(Model& model, PlannedModel& planned, OptimizerKind kind, int steps,
                             const std::function<Batch(int)>& batch_at,
                             NoiseCounts* counts = nullptr, const UserLoss& user_loss = nullptr) {
  Model::Impl& m = *impl_of(model);
  ModelState reference = m.state.clone();
  AutogradBaseline autograd(m.graph, reference);
  std::vector<torch::Tensor> ref_params;
  for (int id : m.graph.parameters()) ref_params.push_back(reference.tensor(id));
  auto ref_opt = make_test_optimizer(kind, ref_params);
  auto opt = make_test_optimizer(kind, model.parameters());
  const int output = m.graph.node(m.graph.value(m.graph.loss_value()).producer).inputs[0];
  double worst = 0;
  std::set<int> noise;
  for (int s = 0; s < steps; ++s) {
    const Batch batch = batch_at(s);
    const at::Tensor& target = batch.at(m.target_value);
    double ref_loss = 0, loss = 0;
    if (user_loss) {
      autograd.release_gradients();
      at::Tensor l =
          user_loss(autograd.forward_to(batch, output, static_cast<uint64_t>(s)), target);
      l.backward();
      ref_loss = l.item<double>();
    } else {
      IterationOptions io;
      io.iteration_seed = static_cast<uint64_t>(s);  // the planned step's dropout seed
      ref_loss = autograd.run_iteration(batch, io).loss;
    }
    if (s == 0) {
      noise = noise_only_buffers(m.graph, reference);
      if (counts) counts->buffers_left_out = static_cast<int>(noise.size());
    }
    zero_grad(model.parameters());
    if (user_loss) {
      at::Tensor l = user_loss(planned.forward(batch.at(m.input_values[0])), target);
      l.backward();
      loss = l.item<double>();
    } else {
      loss = planned.step(batch.at(m.input_values[0]), target).loss;
    }
    const int64_t zeroed = zero_rounding_noise(ref_params, model.parameters());
    if (counts) counts->gradient_entries_zeroed += zeroed;
    ref_opt->step();
    opt->step();
    if (std::getenv("MONET_TRAINING_DEBUG"))
      std::printf("step %d loss %.17g %.17g\n", s, loss, ref_loss);
    worst = std::max({worst, relative_difference(loss, ref_loss),
                      state_error(m.graph, m.state, reference, noise, s)});
  }
  return worst;
}

/// A reproducible batch of `model` in `dtype`.
inline Batch test_batch(const Model& model, uint64_t seed, at::ScalarType dtype) {
  Batch b = make_batch(impl_of(model)->graph, seed);
  for (auto& [id, t] : b)
    if (t.is_floating_point()) t = t.to(dtype);
  return b;
}

/// Writes `plan` of `g`, with convolutions comparable in `dtype`, for PlanOptions::plan_file;
/// returns the path.
/// The file is named by the graph, the planner, the update mode and this process (tests of
/// one graph run side by side under ctest -j), and written whole before it is renamed
/// into place.
inline std::string write_plan(const Graph& g, const Plan& plan, at::ScalarType dtype) {
  const std::string path = ::testing::TempDir() + "/training_" + g.fingerprint() + "_" +
                           plan.planner + "_" + update_mode_name(g.update_mode()) + "_" +
                           std::to_string(getpid()) + ".json";
  std::ofstream(path + ".tmp") << plan_to_json(g, comparable_plan(g, plan, dtype)).dump();
  std::filesystem::rename(path + ".tmp", path);
  return path;
}

/// A MONeT plan of `model` at a budget halfway between the leanest heuristic plan and
/// store-all, written for PlanOptions::plan_file, with convolutions comparable in `dtype`.
inline std::string write_monet_plan(const Model& model, at::ScalarType dtype) {
  const Graph& g = impl_of(model)->graph;
  MemoryStats::install();
  const CostModel costs = quick_profile(g, impl_of(model)->state, make_batch(g, 1));
  MonetOptions o;
  o.budget_bytes = halfway_budget(g, costs);
  o.solver.time_limit_seconds = 10;
  o.solver.search_limit = SearchLimit::kWork;
  const MonetResult r = plan_monet(g, costs, o);
  EXPECT_TRUE(r.found);
  return write_plan(g, r.plan, dtype);
}

/// Loads `spec` (seed 0) in `dtype`, plans it with `plan`, and returns training_error over
/// 5 steps of reproducible batches.
inline double train_and_compare(const ModelSpec& spec, const std::string& plan, OptimizerKind kind,
                                at::ScalarType dtype, NoiseCounts* counts = nullptr,
                                const UserLoss& user_loss = nullptr) {
  Model model = Model::load(spec, 0);
  convert_model(model, dtype);
  PlanOptions po;
  po.plan_file = plan;
  po.use_cache = false;
  po.progress = false;
  PlannedModel planned(model, po);
  return training_error(
      model, planned, kind, 5, [&](int s) { return test_batch(model, 100 + s, dtype); }, counts,
      user_loss);
}

/// What rounding alone does to training: the largest relative error (as training_error
/// measures it, over 5 steps of the same batches) between two LibTorch autograd runs of
/// `spec` in `dtype` from the same weights, one of them on inputs moved by one unit in the
/// last place (multiplied by 1 + machine epsilon). Mathematically the runs differ by that
/// one rounding of the input; every later rounding then differs too, as between a plan and
/// autograd. With `user_loss`, both runs compute it from the model's output.
inline double autograd_rounding_error(const ModelSpec& spec, OptimizerKind kind,
                                      at::ScalarType dtype, const UserLoss& user_loss = nullptr) {
  Model model = Model::load(spec, 0);
  convert_model(model, dtype);
  Model::Impl& m = *impl_of(model);
  ModelState plain = m.state.clone(), nudged = m.state.clone();
  AutogradBaseline plain_run(m.graph, plain), nudged_run(m.graph, nudged);
  std::vector<torch::Tensor> plain_params, nudged_params;
  for (int id : m.graph.parameters()) {
    plain_params.push_back(plain.tensor(id));
    nudged_params.push_back(nudged.tensor(id));
  }
  auto plain_opt = make_test_optimizer(kind, plain_params);
  auto nudged_opt = make_test_optimizer(kind, nudged_params);
  const double epsilon = dtype == at::kDouble ? std::numeric_limits<double>::epsilon()
                                              : std::numeric_limits<float>::epsilon();
  const int output = m.graph.node(m.graph.value(m.graph.loss_value()).producer).inputs[0];
  double worst = 0;
  std::set<int> noise;
  for (int s = 0; s < 5; ++s) {
    const Batch batch = test_batch(model, 100 + s, dtype);
    Batch moved = batch;
    moved[m.input_values[0]] = batch.at(m.input_values[0]) * (1 + epsilon);
    const auto run = [&](AutogradBaseline& autograd, const Batch& b) {
      if (!user_loss) {
        IterationOptions io;
        io.iteration_seed = static_cast<uint64_t>(s);
        return autograd.run_iteration(b, io).loss;
      }
      autograd.release_gradients();
      at::Tensor l =
          user_loss(autograd.forward_to(b, output, static_cast<uint64_t>(s)), b.at(m.target_value));
      l.backward();
      return l.item<double>();
    };
    const double loss = run(plain_run, batch);
    const double moved_loss = run(nudged_run, moved);
    if (s == 0) noise = noise_only_buffers(m.graph, plain);
    zero_rounding_noise(plain_params, nudged_params);
    plain_opt->step();
    nudged_opt->step();
    worst = std::max({worst, relative_difference(moved_loss, loss),
                      state_error(m.graph, nudged, plain, noise, s)});
  }
  return worst;
}

/// A loss unlike the built-in cross-entropy: label-smoothed negative log-likelihood plus
/// a penalty on the logits' size.
inline torch::Tensor smoothed_nll_with_penalty(const torch::Tensor& logits,
                                               const torch::Tensor& target) {
  const torch::Tensor logp = torch::log_softmax(logits, 1);
  const torch::Tensor nll = -logp.gather(1, target.unsqueeze(1)).mean();
  return 0.9 * nll - 0.1 * logp.mean() + 0.01 * logits.pow(2).mean();
}

/// Makes an optimizer of the given parameters.
using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<torch::Tensor>&)>;

// A plan of `spec`'s graph made for fused updates, written for PlanOptions::plan_file.
inline std::string fused_plan(const ModelSpec& spec, bool store_all) {
  Model model = Model::load(spec, 0);
  Graph& g = impl_of(model)->graph;
  g.set_update_mode(UpdateMode::kFused);
  if (store_all) return write_plan(g, store_all_plan(g), at::kDouble);
  return write_monet_plan(model, at::kDouble);
}

// Steps of `make`'s optimizer fused into the planned backward against the same optimizer
// stepped after LibTorch autograd, from the same weights and batches, with a StepLR
// schedule on both: the largest relative error of loss, parameters and buffers. The
// planned side switches to autograd and the optimizer's own step() after `fused_steps`.
inline double fused_training_error(const ModelSpec& spec, const std::string& plan_file,
                                   const MakeOptimizer& make, int steps, int fused_steps) {
  Model model = Model::load(spec, 0);
  convert_model(model, at::kDouble);
  Model::Impl& m = *impl_of(model);
  PlanOptions po;
  po.plan_file = plan_file;
  po.use_cache = false;
  po.progress = false;
  po.optimizer_update = OptimizerUpdate::kFused;
  PlannedModel planned(model, po);
  ModelState reference = m.state.clone();
  AutogradBaseline autograd(m.graph, reference), plain(m.graph, m.state);
  std::vector<torch::Tensor> ref_params;
  for (int id : m.graph.parameters()) ref_params.push_back(reference.tensor(id));
  auto ref_opt = make(ref_params);
  auto opt = make(model.parameters());
  planned.use_optimizer(*opt);
  torch::optim::StepLR ref_schedule(*ref_opt, 2, 0.5), schedule(*opt, 2, 0.5);
  double worst = 0;
  std::set<int> noise;
  for (int s = 0; s < steps; ++s) {
    const Batch batch = test_batch(model, 100 + s, at::kDouble);
    IterationOptions io;
    io.iteration_seed = static_cast<uint64_t>(s);
    const double ref_loss = autograd.run_iteration(batch, io).loss;
    ref_opt->step();
    autograd.release_gradients();
    if (s == 0) noise = noise_only_buffers(m.graph, reference);
    zero_grad(model.parameters());
    double loss = 0;
    if (s < fused_steps) {
      loss = planned.step(batch.at(m.input_values[0]), batch.at(m.target_value)).loss;
      for (const auto& p : model.parameters())
        EXPECT_FALSE(p.grad().defined()) << "a fused step leaves no gradient";
      opt->step();  // harmless: no gradient left
    } else {
      loss = plain.run_iteration(batch, io).loss;
      opt->step();
      plain.release_gradients();
    }
    ref_schedule.step();
    schedule.step();
    worst = std::max({worst, relative_difference(loss, ref_loss),
                      state_error(m.graph, m.state, reference, noise, s)});
  }
  return worst;
}

}  // namespace monet::testing
