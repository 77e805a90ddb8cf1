// Budgets for a whole training step: parsing, the optimizer's share, and autograd's
// (or DDP's per-rank) measured step peak that ratio budgets refer to.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "api/atomic_file.h"
#include "api/impl_access.h"
#include "api/model_impl.h"
#include "base/memory_tracker.h"
#include "plan/plan.h"
#include "runtime/autograd_baseline.h"

namespace monet {
namespace {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(std::vector<torch::Tensor> params,
                                                        OptimizerKind kind, double weight_decay) {
  switch (kind) {
    case OptimizerKind::kSGD:
      return std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(0.01).weight_decay(weight_decay));
    case OptimizerKind::kSGDMomentum:
      return std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(weight_decay));
    case OptimizerKind::kAdam:
      return std::make_unique<torch::optim::Adam>(
          params, torch::optim::AdamOptions(1e-3).weight_decay(weight_decay));
    case OptimizerKind::kNone:
      break;
  }
  return nullptr;
}

}  // namespace

const char* optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kNone:
      return "none";
    case OptimizerKind::kSGD:
      return "sgd";
    case OptimizerKind::kSGDMomentum:
      return "sgd-momentum";
    case OptimizerKind::kAdam:
      return "adam";
  }
  return "?";
}

OptimizerKind optimizer_kind_from_name(const std::string& name, double momentum) {
  if (name == "sgd") return momentum > 0 ? OptimizerKind::kSGDMomentum : OptimizerKind::kSGD;
  // AdamW holds Adam's state; its decoupled decay needs no more temporaries than Adam's.
  if (name == "adam" || name == "adamw") return OptimizerKind::kAdam;
  if (name == "none") return OptimizerKind::kNone;
  throw std::invalid_argument("unknown optimizer '" + name + "' (known: sgd, adam, adamw, none)");
}

UpdateMode update_mode_of(OptimizerUpdate update) {
  return update == OptimizerUpdate::kFused ? UpdateMode::kFused : UpdateMode::kAfterBackward;
}

OptimizerUpdate optimizer_update_of(UpdateMode mode) {
  return mode == UpdateMode::kFused ? OptimizerUpdate::kFused : OptimizerUpdate::kAfterBackward;
}

const char* optimizer_update_name(OptimizerUpdate update) {
  return update_mode_name(update_mode_of(update));
}

OptimizerUpdate optimizer_update_from_name(const std::string& name) {
  return optimizer_update_of(update_mode_from_name(name));
}

OptimizerMemory optimizer_memory(const Model& model, OptimizerKind kind, double weight_decay) {
  // A parameter the loss is not computed from gets no gradient, hence no state.
  const Graph& g = impl_of(model)->graph;
  const std::vector<bool> needs = values_needing_grad(g);
  int64_t total = 0, largest = 0;
  for (int p : g.parameters()) {
    if (!needs[p]) continue;
    total += g.value(p).bytes();
    largest = std::max<int64_t>(largest, g.value(p).bytes());
  }
  OptimizerMemory m;
  // LibTorch 1.13's updates, per parameter: SGD's weight decay makes grad + wd * p (one
  // temporary), momentum's first step clones the gradient into its buffer (state); Adam
  // makes sqrt(v) and its quotient (two temporaries) besides the decayed gradient.
  const int64_t decayed = weight_decay != 0 ? largest : 0;
  switch (kind) {
    case OptimizerKind::kNone:
      break;
    case OptimizerKind::kSGD:
      m.update_bytes = decayed;
      break;
    case OptimizerKind::kSGDMomentum:
      m.state_bytes = total;
      m.update_bytes = decayed;
      break;
    case OptimizerKind::kAdam:
      m.state_bytes = 2 * total;
      m.update_bytes = 2 * largest + decayed;
      break;
  }
  return m;
}

OptimizerMemory optimizer_memory(const Model& model, const PlanOptions& options) {
  const double share = options.optimizer_state_share;
  if (!(share > 0 && share <= 1))
    throw std::invalid_argument("optimizer_state_share " + std::to_string(share) +
                                " is outside (0, 1]");
  OptimizerMemory m = optimizer_memory(model, options.optimizer, options.weight_decay);
  m.state_bytes = static_cast<int64_t>(std::ceil(static_cast<double>(m.state_bytes) * share));
  return m;
}

int64_t parse_budget(const std::string& text, const std::function<int64_t()>& baseline_peak) {
  const std::string usage =
      "budget '" + text + "': expected bytes, KiB/MiB/GiB or a ratio of autograd's peak like 0.4x";
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(usage);
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB" || unit == "K" || unit == "KB")
    scale = 1024.0;
  else if (unit == "MiB" || unit == "M" || unit == "MB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G" || unit == "GB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "x")
    scale = -1;
  else
    throw std::invalid_argument("budget '" + text + "': unknown unit '" + unit +
                                "' (use B, KiB, MiB, GiB, or x for a ratio of autograd's peak)");
  if (!std::isfinite(v)) throw std::invalid_argument("budget '" + text + "' is not finite");
  if (!(v > 0)) throw std::invalid_argument("budget '" + text + "' must be positive");
  if (scale < 0) scale = static_cast<double>(baseline_peak());
  const double bytes = std::floor(v * scale);
  if (!(bytes < 9.2e18))
    throw std::invalid_argument("budget '" + text + "' is too large (over 8 EiB)");
  if (bytes < 1) throw std::invalid_argument("budget '" + text + "' is under one byte");
  return static_cast<int64_t>(bytes);
}

namespace {

// Peak bytes of autograd's second training step of `model` with `optimizer` (the first
// allocates its state), with DDP's gradient buckets alive throughout when `ddp`; cached by
// fingerprint, optimizer, DDP and threads unless cache_dir is empty.
int64_t measure_step_peak(const Model& model, OptimizerKind optimizer, double weight_decay,
                          bool ddp, const std::string& cache_dir) {
  const Model::Impl& m = *impl_of(model);
  const std::string cache = cache_dir.empty()
                                ? ""
                                : cache_dir + "/baseline-" + m.graph.fingerprint() + "-" +
                                      optimizer_kind_name(optimizer) +
                                      (weight_decay != 0 ? "-wd" : "") + (ddp ? "-ddp" : "") +
                                      "-t" + std::to_string(at::get_num_threads()) + ".json";
  if (!cache.empty()) {
    std::ifstream f(cache);
    try {
      if (f) return nlohmann::json::parse(f).at("step_peak_bytes").get<int64_t>();
    } catch (const std::exception&) {
      // A corrupt cache entry is measured again and rewritten.
    }
  }
  MemoryTracker::install();
  int64_t peak = 0;
  {
    const int64_t before = MemoryTracker::current();
    ModelState state = m.state.clone();
    // Autograd's step in the graph's floating type, as plans count it (a model's state
    // may have been converted after it was built).
    for (const Value& v : m.graph.values())
      if ((v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer) &&
          state.tensor(v.id).is_floating_point())
        state.tensor(v.id) = state.tensor(v.id).to(m.graph.floating_dtype());
    const Batch batch = make_batch(m.graph, 1);
    AutogradBaseline baseline(m.graph, state);
    std::vector<torch::Tensor> params;
    for (int id : m.graph.parameters()) params.push_back(state.tensor(id));
    auto opt = make_optimizer(params, optimizer, weight_decay);
    // DistributedDataParallel (gradient_as_bucket_view=False, its default) allocates its
    // buckets when it is built: one flat copy of every parameter's gradient, whatever the
    // bucket size or the number of ranks, into which each gradient is copied to be
    // all-reduced. Only their bytes matter here.
    std::vector<at::Tensor> ddp_buckets;
    if (ddp)
      for (const auto& p : params) ddp_buckets.push_back(at::empty_like(p));
    for (int step = 0; step < 2; ++step) {  // the second step has the optimizer's state
      baseline.release_gradients();
      MemoryTracker::reset_peak();
      baseline.run_iteration(batch);
      if (opt) opt->step();
      peak = MemoryTracker::peak() - before;
    }
  }
  if (!cache.empty()) {
    try {
      std::filesystem::create_directories(cache_dir);
      write_text_atomically(cache, nlohmann::json{{"step_peak_bytes", peak}}.dump() + "\n");
    } catch (const std::exception&) {
      // The cache is an optimisation: an unwritable directory only costs a measurement.
    }
  }
  return peak;
}

}  // namespace

const char* budget_baseline_name(BudgetBaseline baseline) {
  return baseline == BudgetBaseline::kDataParallelStep ? "DDP's per-rank step" : "autograd's step";
}

int64_t measure_autograd_step_peak(const Model& model, OptimizerKind optimizer, double weight_decay,
                                   const std::string& cache_dir) {
  return measure_step_peak(model, optimizer, weight_decay, false, cache_dir);
}

int64_t measure_ddp_step_peak(const Model& model, OptimizerKind optimizer, double weight_decay,
                              const std::string& cache_dir) {
  return measure_step_peak(model, optimizer, weight_decay, true, cache_dir);
}

int64_t measure_baseline_step_peak(const Model& model, const PlanOptions& options,
                                   const std::string& cache_dir) {
  if (options.budget_baseline == BudgetBaseline::kDataParallelStep)
    return measure_ddp_step_peak(model, options.optimizer, options.weight_decay, cache_dir);
  return measure_autograd_step_peak(model, options.optimizer, options.weight_decay, cache_dir);
}

}  // namespace monet
