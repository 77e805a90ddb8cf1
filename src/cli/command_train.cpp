// `monet train`: plan a model under a budget for a whole training step and train it on
// an ImageFolder, CIFAR-10 or synthetic data with SGD or Adam; progress, checkpoints,
// saved weights. A thin layer over the public API (monet/monet.h, monet/image_data.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <tuple>

#include <monet/distributed.h>
#include <monet/monet.h>
#include <torch/nn/utils/clip_grad.h>

#include "cli/cli_common.h"
#include "cli/rank_launcher.h"
#include "cli/train_options.h"

namespace monet::cli {
namespace {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainOptions& o,
                                                        std::vector<torch::Tensor> params) {
  if (o.optimizer == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
  if (o.optimizer == "adamw")
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  return std::make_unique<torch::optim::SGD>(
      params, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
}

std::string clock_text(double seconds) {
  const int s = static_cast<int>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

// Where batches come from: the loader (real data) or seeded synthetic batches.
struct DataSource {
  std::optional<ImageData> dataset;
  std::optional<ImageBatches> loader;
  int64_t steps_per_epoch = 0;
};

ImageData open_data(const TrainOptions& o) {
  ImageDataFormat format;
  try {
    format = image_data_format_from_name(o.data_format);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--data-format: ") + e.what());
  }
  return with_usage_errors([&] { return ImageData::open(o.data, format); });
}

// Where this process is: one process alone, or a rank of a data-parallel job (RANK and
// WORLD_SIZE set by `--nproc`'s launcher, or by torchrun).
struct RankContext {
  Rendezvous where;
  bool distributed = false;
  bool primary() const { return where.rank == 0; }
};

// torchrun's variables (unset ones keep Rendezvous's defaults); bad ones are usage errors.
Rendezvous environment_rendezvous() {
  try {
    return Rendezvous::from_environment();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

RankContext rank_context() {
  RankContext c;
  if (std::getenv("RANK") == nullptr || std::getenv("WORLD_SIZE") == nullptr) return c;
  c.where = environment_rendezvous();
  c.distributed = c.where.world_size > 1;
  return c;
}

Model load_training_model(const TrainOptions& o, DataSource& data) {
  ModelOptions mo = o.model;
  if (!o.data.empty()) {
    data.dataset = open_data(o);
    if (!is_traced_model_file(mo.model) && mo.classes == 0) mo.classes = data.dataset->classes();
  }
  const ModelSpec spec = model_spec(mo);
  if (spec.inputs.size() > 1)
    throw UsageError("monet train feeds models of one input; " + mo.model + " takes " +
                     std::to_string(spec.inputs.size()) +
                     " (plan, verify and run take several; train it from Python with "
                     "monet.optimize)");
  return with_usage_errors([&] { return Model::load(spec, o.seed); });
}

PlanOptions plan_options(const TrainOptions& o, const Model& model, const ImageBatchOptions& lo,
                         bool real_data, const RankContext& rc) {
  const bool primary = rc.primary();
  PlanOptions po;
  // Fused updates by default where allowed: not when the gradients are all-reduced after
  // the backward (every one must exist then).
  // Nor when clipping by the global norm or accumulating micro-batches (the same).
  const bool all_gradients = o.clip_grad_norm > 0 || o.accumulate > 1;
  const std::string update = !o.optimizer_update.empty()                     ? o.optimizer_update
                             : o.sync == "during-backward" && !all_gradients ? "fused"
                                                                             : "after-backward";
  po.optimizer_update = optimizer_update_from_name(update);
  po.planner = o.planner;
  po.budget = o.budget;
  po.optimizer = optimizer_kind_from_name(o.optimizer, o.momentum);
  po.weight_decay = o.weight_decay;
  po.time_limit_seconds = o.time_limit;
  po.planning_limit = planning_limit_from_name(o.search_limit);
  po.plan_file = o.plan_file;
  po.cache_dir = o.cache_dir;
  po.progress = primary;
  if (real_data) po.reserved_bytes = o.prefetch * (lo.batch * (3 * lo.height * lo.width * 4 + 8));
  // Micro-batches after the first start with every gradient of the step so far: the
  // budget keeps room for all of them beside what the plan holds.
  if (o.accumulate > 1)
    for (const auto& p : model.parameters()) po.reserved_bytes += p.numel() * p.element_size();
  return po;
}

// The planned model: alone, or planned on rank 0 and run data-parallel.
struct Trainer {
  std::unique_ptr<PlannedModel> alone;
  std::unique_ptr<DataParallel> parallel;
  PlannedModel& planned() { return parallel ? parallel->planned() : *alone; }
  StepResult step(const at::Tensor& x, const at::Tensor& y) {
    return parallel ? parallel->step(x, y) : alone->step(x, y);
  }
};

Trainer make_trainer(const TrainOptions& o, const Model& model, const PlanOptions& po,
                     const RankContext& rc) {
  Trainer t;
  try {
    if (!rc.distributed) {
      t.alone = std::make_unique<PlannedModel>(model, po);
      return t;
    }
    DataParallelOptions dpo;
    dpo.bucket_bytes = static_cast<int64_t>(o.bucket_mib * 1024 * 1024);
    dpo.sync = o.sync == "after-backward" ? GradientSync::kAfterBackward
                                          : GradientSync::kDuringBackward;  // "alternate" too
    dpo.timeout_seconds = o.timeout;
    dpo.shard = shard_mode_from_name(o.shard);
    t.parallel =
        std::make_unique<DataParallel>(model, po, ProcessGroup::gloo(rc.where, o.timeout), dpo);
  } catch (const std::exception& e) {
    // Rank 0 prints its planning error; the other ranks get the same one.
    const bool usage = dynamic_cast<const std::invalid_argument*>(&e) != nullptr ||
                       dynamic_cast<const BudgetError*>(&e) != nullptr;
    if (rc.distributed && !rc.primary() && is_rank_zero_planning_error(e))
      throw ReportedElsewhere{usage ? 2 : 1};
    if (usage) throw UsageError(e.what());
    throw;
  }
  return t;
}

void print_plan(const PlanReport& r, const DataSource& data, const RankContext& rc,
                const Trainer& t, int64_t batch) {
  if (data.dataset) std::cerr << data.dataset->describe() << "\n";
  if (rc.distributed)
    std::cerr << "data parallel: " << rc.where.world_size << " ranks (Gloo, rendezvous at "
              << rc.where.master_addr << ":" << rc.where.master_port << "), batch " << batch
              << " per rank, " << batch * rc.where.world_size << " in all; gradient buckets "
              << format_bytes(t.parallel->bucket_buffer_bytes(), false) << " per rank\n";
  if (rc.distributed && t.parallel->shard() != ShardMode::kNone)
    std::cerr << "sharded (" << shard_mode_name(t.parallel->shard())
              << "): each rank keeps the optimizer state of its own parameters (rank "
              << rc.where.rank << ": " << format_bytes(t.parallel->owned_parameter_bytes(), false)
              << ") and updates them; the owners broadcast the updates\n";
  std::cerr << "plan: " << r.planner << (r.from_cache ? " (cached)" : "");
  if (r.budget_bytes) std::cerr << ", budget " << format_bytes(*r.budget_bytes, false);
  if (r.baseline_peak_bytes)
    std::cerr << " (" << budget_baseline_name(r.budget_baseline) << ": "
              << format_bytes(*r.baseline_peak_bytes, false) << ")";
  if (r.predicted_peak_bytes)
    std::cerr << ", forward+backward predicted " << format_bytes(*r.predicted_peak_bytes, false);
  std::cerr << ", optimizer updates " << optimizer_update_name(r.optimizer_update) << "\n";
}

struct TrainTotals {
  int64_t max_peak = 0;
  double loss_sum = 0;
};

// Micro-batch `m` (the loader's next, or synthetic batch m of this rank).
std::pair<at::Tensor, at::Tensor> next_batch(const TrainOptions& o, const Model& model,
                                             DataSource& data, int64_t m, const RankContext& rc) {
  if (data.loader) return data.loader->next();
  auto [inputs, target] =
      model.synthetic_batch(o.seed * 1000003 + m * rc.where.world_size + rc.where.rank);
  return {inputs[0], target};
}

// Whether step `s` all-reduces after the backward (data parallel).
bool sync_after_backward(const TrainOptions& o, int64_t s) {
  return o.sync == "after-backward" || (o.sync == "alternate" && s % 2 == 1);
}

// One optimizer step: --accumulate micro-batches (their gradients summed, then averaged),
// clipping to --clip-grad-norm, the optimizer's step. Returns the mean loss and the
// micro-batches' forward and backward seconds; `norm` gets the gradients' global norm
// before clipping (-1 without clipping).
StepResult optimizer_step(const TrainOptions& o, Model& model, Trainer& trainer,
                          torch::optim::Optimizer& optimizer, DataSource& data, int64_t s,
                          const RankContext& rc, double* norm) {
  if (trainer.parallel)
    trainer.parallel->set_gradient_sync(sync_after_backward(o, s) ? GradientSync::kAfterBackward
                                                                  : GradientSync::kDuringBackward);
  zero_grad(model.parameters());
  StepResult total;
  for (int64_t k = 0; k < o.accumulate; ++k) {
    const auto [x, y] = next_batch(o, model, data, s * o.accumulate + k, rc);
    const StepResult micro = trainer.step(x, y);
    total.loss += micro.loss / static_cast<double>(o.accumulate);
    total.seconds += micro.seconds;
  }
  const auto params = model.parameters();
  if (o.accumulate > 1) {
    torch::NoGradGuard no_grad;
    for (const auto& p : params)
      if (p.grad().defined()) p.grad().div_(static_cast<double>(o.accumulate));
  }
  *norm = o.clip_grad_norm > 0 ? torch::nn::utils::clip_grad_norm_(params, o.clip_grad_norm) : -1;
  optimizer.step();
  return total;
}

// --checkpoint, from rank 0 (a collective under sharding: rank 0 gathers every rank's
// optimizer state first, so that any number of ranks can resume it).
void write_checkpoint(const TrainOptions& o, const Model& model, Trainer& trainer,
                      torch::optim::Optimizer& optimizer, const RankContext& rc) {
  if (trainer.parallel) trainer.parallel->gather_optimizer_state(optimizer);
  if (rc.primary()) save_checkpoint(o.checkpoint, model, optimizer, o.seed);
  if (trainer.parallel) trainer.parallel->shard_optimizer_state(optimizer);
}

TrainTotals train_loop(const TrainOptions& o, Model& model, Trainer& trainer,
                       torch::optim::Optimizer& optimizer, DataSource& data, int64_t first,
                       int64_t total, const RankContext& rc) {
  const PlanReport& r = trainer.planned().report();
  const bool show = rc.primary(), tty = show && !o.json && isatty(STDERR_FILENO);
  const int64_t batch = model.input_shape()[0] * o.accumulate, world = rc.where.world_size;
  const int64_t log_every = o.log_every > 0 ? o.log_every : std::max<int64_t>(1, total / 20);
  const auto t0 = std::chrono::steady_clock::now();
  TrainTotals totals;
  for (int64_t s = first; s < total; ++s) {
    MemoryStats::reset_peak();
    double norm = -1;
    const StepResult step = optimizer_step(o, model, trainer, optimizer, data, s, rc, &norm);
    const int64_t peak = MemoryStats::peak_bytes();
    totals.max_peak = std::max(totals.max_peak, peak);
    totals.loss_sum += step.loss;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = (s - first + 1) * batch * world / elapsed;  // every rank's samples
    const double eta = elapsed / (s - first + 1) * (total - s - 1);
    if (show && o.json) {
      nlohmann::json j = {{"step", s + 1},
                          {"steps", total},
                          {"loss", step.loss},
                          {"peak_bytes", peak},
                          {"step_seconds", step.seconds},
                          {"samples_per_second", rate}};
      if (r.budget_bytes) j["budget_bytes"] = *r.budget_bytes;
      if (trainer.parallel) {
        j["gradient_sync"] = sync_after_backward(o, s) ? "after-backward" : "during-backward";
        j["world_size"] = world;
        j["global_batch"] = batch * world;
      }
      if (norm >= 0) j["gradient_norm"] = norm;
      std::cout << j.dump() << std::endl;
    } else if (show && (tty || (s + 1) % log_every == 0 || s + 1 == total)) {
      std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  %.1f samples/s  peak %s", tty ? "\r" : "",
                   static_cast<long long>(s + 1), static_cast<long long>(total), step.loss, rate,
                   format_bytes(peak, false).c_str());
      if (r.budget_bytes)
        std::fprintf(stderr, " / budget %s", format_bytes(*r.budget_bytes, false).c_str());
      if (world > 1) std::fprintf(stderr, " per rank (%lld ranks)", static_cast<long long>(world));
      std::fprintf(stderr, "  ETA %s%s", clock_text(eta).c_str(), tty ? "   " : "\n");
    }
    if (o.checkpoint_every > 0 && (s + 1) % o.checkpoint_every == 0)
      write_checkpoint(o, model, trainer, optimizer, rc);
  }
  if (tty) std::fprintf(stderr, "\n");
  return totals;
}

void print_summary(const TrainOptions& o, const PlanReport& r, const TrainTotals& t, int64_t total,
                   int64_t done) {
  if (o.json) {
    nlohmann::json j = {{"steps", total},
                        {"max_step_peak_bytes", t.max_peak},
                        {"mean_loss", done > 0 ? t.loss_sum / done : 0.0}};
    if (r.budget_bytes) j["budget_bytes"] = *r.budget_bytes;
    if (r.baseline_peak_bytes)
      j[r.budget_baseline == BudgetBaseline::kDataParallelStep ? "ddp_step_peak_bytes"
                                                               : "autograd_step_peak_bytes"] =
          *r.baseline_peak_bytes;
    std::cout << j.dump() << std::endl;
    return;
  }
  std::printf("trained %lld steps: largest step peak %s", static_cast<long long>(done),
              format_bytes(t.max_peak, true).c_str());
  if (r.budget_bytes) std::printf(", budget %s", format_bytes(*r.budget_bytes, true).c_str());
  if (r.baseline_peak_bytes)
    std::printf(", %.3f of %s peak %s", double(t.max_peak) / *r.baseline_peak_bytes,
                budget_baseline_name(r.budget_baseline),
                format_bytes(*r.baseline_peak_bytes, true).c_str());
  std::printf("\n");
  if (!o.save.empty()) std::printf("saved the trained weights to %s\n", o.save.c_str());
}

void compare_and_print(const TrainOptions& o, PlannedModel& planned) {
  if (!o.json) std::cerr << "timing forward and backward against autograd, interleaved ...\n";
  const AutogradComparison c = compare_with_autograd(planned, o.compare_iters);
  if (o.json)
    std::cout << nlohmann::json{{"seconds", c.seconds},
                                {"autograd_seconds", c.autograd_seconds},
                                {"overhead", c.overhead},
                                {"peak_bytes", c.peak_bytes},
                                {"autograd_peak_bytes", c.autograd_peak_bytes}}
                     .dump()
              << std::endl;
  else
    std::printf(
        "forward+backward: %.4f s under the plan, %.4f s under autograd: overhead %+.1f%% "
        "(median of %d interleaved; the optimizer step is the same for both); "
        "peak %s against autograd's %s\n",
        c.seconds, c.autograd_seconds, 100 * c.overhead, o.compare_iters,
        format_bytes(c.peak_bytes, true).c_str(),
        format_bytes(c.autograd_peak_bytes, true).c_str());
}

// Starts --nproc ranks of this command on this node (of --nnodes) and waits for them.
int launch_local_ranks(const TrainOptions& o) {
  LaunchOptions lo;
  lo.nproc = o.nproc;
  lo.nnodes = o.nnodes;
  lo.node_rank = o.node_rank;
  const Rendezvous env = environment_rendezvous();  // MASTER_ADDR, MASTER_PORT
  lo.master_addr = o.master_addr.empty() ? env.master_addr : o.master_addr;
  lo.master_port = o.master_port > 0 ? o.master_port : env.master_port;
  return launch_ranks(lo, command_line());
}

// The loader of `model`'s batches on this rank.
ImageBatchOptions loader_options(const TrainOptions& o, const Model& model, const RankContext& rc) {
  const std::vector<int64_t> in_shape = model.input_shape();
  ImageBatchOptions lo;
  lo.batch = in_shape[0];
  lo.height = in_shape.size() > 2 ? in_shape[2] : 1;
  lo.width = in_shape.size() > 3 ? in_shape[3] : 1;
  lo.seed = o.seed;
  lo.prefetch = o.prefetch;
  lo.rank = rc.where.rank;
  lo.world_size = rc.where.world_size;
  lo.warn = [](const std::string& m) { std::cerr << "\nwarning: " << m << "\n"; };
  return lo;
}

// Loads --resume's checkpoint (its seed into `o` and `lo`) and sets the loader's first
// micro-batch. Returns the first optimizer step to run.
int64_t resume(TrainOptions* o, Model& model, Trainer& trainer, torch::optim::Optimizer& optimizer,
               ImageBatchOptions* lo) {
  if (!o->resume.empty()) {
    try {
      lo->seed = o->seed = load_checkpoint(o->resume, model, optimizer);
      if (trainer.parallel) trainer.parallel->shard_optimizer_state(optimizer);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  // The model counts micro-batches (batch-norm updates); the loop optimizer steps.
  const int64_t micro_batches = model.steps();
  if (micro_batches % o->accumulate != 0)
    throw UsageError("the checkpoint is at micro-batch " + std::to_string(micro_batches) +
                     ", not a multiple of --accumulate " + std::to_string(o->accumulate) +
                     ": resume with the --accumulate it was trained with");
  lo->start_step = micro_batches;
  return micro_batches / o->accumulate;
}

// The dataset's loader (none for synthetic data) and the steps per epoch.
void open_loader(const ImageBatchOptions& lo, DataSource* data) {
  data->steps_per_epoch = 1;
  if (!data->dataset) return;
  with_usage_errors([&] { data->loader.emplace(*data->dataset, lo); });
  data->steps_per_epoch = data->loader->steps_per_epoch();
}

int run_train(TrainOptions o) {
  check_options(o);
  const RankContext rc = rank_context();
  if (o.shard != "none" && !rc.distributed && o.nproc * o.nnodes == 1)
    throw UsageError("--shard " + o.shard +
                     " splits the training state among data-parallel ranks: give --nproc (or "
                     "--nnodes) above 1");
  if (!rc.distributed && o.nproc * o.nnodes > 1) return launch_local_ranks(o);
  MemoryStats::install();
  DataSource data;
  Model model = load_training_model(o, data);
  ImageBatchOptions lo = loader_options(o, model, rc);
  Trainer trainer =
      make_trainer(o, model, plan_options(o, model, lo, data.dataset.has_value(), rc), rc);
  auto optimizer = make_optimizer(o, model.parameters());
  if (trainer.planned().report().optimizer_update == OptimizerUpdate::kFused ||
      (trainer.parallel && trainer.parallel->shard() != ShardMode::kNone)) {
    if (trainer.parallel)
      trainer.parallel->use_optimizer(*optimizer);
    else
      trainer.alone->use_optimizer(*optimizer);
  }
  const int64_t first = resume(&o, model, trainer, *optimizer, &lo);
  open_loader(lo, &data);
  const int64_t total = o.steps > 0 ? o.steps : o.epochs * data.steps_per_epoch / o.accumulate;
  if (total == 0)
    throw UsageError("--epochs " + std::to_string(o.epochs) + " gives " +
                     std::to_string(o.epochs * data.steps_per_epoch) +
                     " batches, fewer than --accumulate " + std::to_string(o.accumulate));
  const PlanReport& r = trainer.planned().report();
  if (first >= total) {
    if (rc.primary())
      std::fprintf(stderr,
                   "the checkpoint is at step %lld, not before step %lld: nothing to train\n",
                   static_cast<long long>(first), static_cast<long long>(total));
    return 0;
  }
  if (!o.json && rc.primary()) {
    print_plan(r, data, rc, trainer, model.input_shape()[0]);
    if (o.accumulate > 1)
      std::cerr << "each step: " << o.accumulate << " micro-batches of " << model.input_shape()[0]
                << ", their gradients averaged\n";
    if (o.clip_grad_norm > 0)
      std::cerr << "gradients clipped to a global norm of " << o.clip_grad_norm << "\n";
  }
  const TrainTotals totals = train_loop(o, model, trainer, *optimizer, data, first, total, rc);
  if (!o.checkpoint.empty()) write_checkpoint(o, model, trainer, *optimizer, rc);
  if (rc.primary() && !o.save.empty()) model.save(o.save);
  if (trainer.parallel) trainer.parallel->barrier();
  if (rc.primary()) print_summary(o, r, totals, total, total - first);
  if (o.compare_iters > 0 && rc.primary()) compare_and_print(o, trainer.planned());
  if (r.budget_bytes && totals.max_peak > *r.budget_bytes) {
    std::cerr << "monet: error: "
              << (rc.distributed ? "rank " + std::to_string(rc.where.rank) + ": " : "")
              << "a step's measured peak " << format_bytes(totals.max_peak, true)
              << " exceeded the budget " << format_bytes(*r.budget_bytes, true) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("train", "plan a model under a memory budget and train it");
  auto o = std::make_shared<TrainOptions>();
  add_train_options(cmd, *o);
  commands.push_back({cmd, [o] { return run_train(*o); }});
}

}  // namespace monet::cli
