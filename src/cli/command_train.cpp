// `monet train`: plan a model under a budget for a whole training step and train it on
// an ImageFolder, CIFAR-10 or synthetic data with SGD or Adam; progress, checkpoints,
// saved weights. A thin layer over the public API (monet/monet.h) and the data loader.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <tuple>

#include <monet/monet.h>

#include "api/model_impl.h"
#include "cli/cli_common.h"
#include "graph/torchscript_import.h"
#include "runtime/batch_loader.h"
#include "runtime/model_state.h"

namespace monet::cli {
namespace {

struct TrainOptions {
  ModelOptions model;
  std::string data, data_format = "imagefolder";
  bool synthetic = false;
  std::string budget, planner = "monet", plan_file, cache_dir;
  double time_limit = 60;
  std::string optimizer = "sgd";
  double lr = 0.01, momentum = 0.9, weight_decay = 0;
  int64_t epochs = 0, steps = 0;
  uint64_t seed = 0;
  int prefetch = 2;
  std::string save, checkpoint, resume;
  int64_t checkpoint_every = 0;
  int64_t log_every = 0;
  int compare_iters = 0;
  bool json = false;
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainOptions& o,
                                                        std::vector<torch::Tensor> params) {
  if (o.optimizer == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
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
  std::shared_ptr<ImageDataset> dataset;
  std::unique_ptr<BatchLoader> loader;
  int64_t steps_per_epoch = 0;
};

std::shared_ptr<ImageDataset> open_data(const TrainOptions& o) {
  try {
    if (o.data_format == "cifar10") return open_cifar10(o.data);
    if (o.data_format == "imagefolder") return open_image_folder(o.data);
  } catch (const DataError& e) {
    throw UsageError(e.what());
  }
  throw UsageError("--data-format must be imagefolder or cifar10");
}

void check_options(const TrainOptions& o) {
  if (o.synthetic == !o.data.empty())
    throw UsageError("give --data DIR (with --data-format) or --synthetic");
  if ((o.epochs > 0) == (o.steps > 0)) throw UsageError("give --epochs N or --steps N");
  if (o.optimizer != "sgd" && o.optimizer != "adam")
    throw UsageError("--optimizer must be sgd or adam");
  if (o.checkpoint_every > 0 && o.checkpoint.empty())
    throw UsageError("--checkpoint-every needs --checkpoint FILE");
}

int run_train(TrainOptions o) {
  check_options(o);
  MemoryStats::install();
  DataSource data;
  ModelOptions mo = o.model;
  if (!o.data.empty()) {
    data.dataset = open_data(o);
    if (!is_torchscript_path(mo.model) && mo.classes == 0) mo.classes = data.dataset->classes();
  }
  const ModelConfig config = model_config(mo);
  ModelSpec spec{mo.model,     config.batch,   config.image,
                 config.width, config.classes, config.input_shape};
  spec.output = mo.output;
  spec.loss = loss_kind_from_name(mo.loss);
  Model model = [&] {
    try {
      return Model::load(spec, o.seed);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }();
  const std::vector<int64_t> in_shape = model.input_shape();
  LoaderOptions lo;
  lo.batch = in_shape[0];
  lo.height = in_shape.size() > 2 ? in_shape[2] : 1;
  lo.width = in_shape.size() > 3 ? in_shape[3] : 1;
  lo.seed = o.seed;
  lo.prefetch = o.prefetch;
  lo.warn = [](const std::string& m) { std::cerr << "\nwarning: " << m << "\n"; };

  PlanOptions po;
  po.planner = o.planner;
  po.budget = o.budget;
  po.optimizer = optimizer_kind_from_name(o.optimizer, o.momentum);
  po.weight_decay = o.weight_decay;
  po.time_limit_seconds = o.time_limit;
  po.plan_file = o.plan_file;
  po.cache_dir = o.cache_dir;
  if (data.dataset)
    po.reserved_bytes = o.prefetch * (lo.batch * (3 * lo.height * lo.width * 4 + 8));
  std::unique_ptr<PlannedModel> planned;
  try {
    planned = std::make_unique<PlannedModel>(model, po);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const BudgetError& e) {
    throw UsageError(e.what());
  }
  auto optimizer = make_optimizer(o, model.parameters());
  if (!o.resume.empty()) {
    try {
      lo.seed = o.seed = load_checkpoint(o.resume, model, *optimizer);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  const int64_t first = model.steps();
  lo.start_step = first;
  if (data.dataset) {
    try {
      data.loader = std::make_unique<BatchLoader>(data.dataset, lo);
    } catch (const DataError& e) {
      throw UsageError(e.what());
    }
    data.steps_per_epoch = data.loader->steps_per_epoch();
  } else {
    data.steps_per_epoch = 1;
  }
  const int64_t total = o.steps > 0 ? o.steps : o.epochs * data.steps_per_epoch;
  const PlanReport& r = planned->report();
  if (!o.json) {
    if (data.dataset) std::cerr << data.dataset->describe() << "\n";
    std::cerr << "plan: " << r.planner << (r.from_cache ? " (cached)" : "");
    if (r.budget_bytes > 0) std::cerr << ", budget " << format_bytes(r.budget_bytes);
    if (r.baseline_peak_bytes > 0)
      std::cerr << " (autograd's step: " << format_bytes(r.baseline_peak_bytes) << ")";
    if (r.predicted_peak_bytes > 0)
      std::cerr << ", forward+backward predicted " << format_bytes(r.predicted_peak_bytes);
    std::cerr << "\n";
  }
  const bool tty = isatty(STDERR_FILENO);
  const int64_t log_every = o.log_every > 0 ? o.log_every : std::max<int64_t>(1, total / 20);
  const auto t0 = std::chrono::steady_clock::now();
  int64_t max_peak = 0;
  double loss_sum = 0;
  for (int64_t s = first; s < total; ++s) {
    at::Tensor x, y;
    if (data.loader) {
      std::tie(x, y) = data.loader->next();
    } else {
      Batch b = make_batch(model.impl()->graph, o.seed * 1000003 + s);
      x = b.at(model.impl()->input_value);
      if (model.impl()->target_value >= 0) y = b.at(model.impl()->target_value);
    }
    MemoryStats::reset_peak();
    zero_grad(model.parameters());
    const StepResult step = planned->step(x, y);
    optimizer->step();
    const int64_t peak = MemoryStats::peak_bytes();
    max_peak = std::max(max_peak, peak);
    loss_sum += step.loss;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = (s - first + 1) * lo.batch / elapsed;
    const double eta = elapsed / (s - first + 1) * (total - s - 1);
    if (o.json) {
      nlohmann::json j = {{"step", s + 1},
                          {"steps", total},
                          {"loss", step.loss},
                          {"peak_bytes", peak},
                          {"step_seconds", step.seconds},
                          {"samples_per_second", rate}};
      if (r.budget_bytes > 0) j["budget_bytes"] = r.budget_bytes;
      std::cout << j.dump() << std::endl;
    } else if (tty || (s + 1) % log_every == 0 || s + 1 == total) {
      std::fprintf(stderr, "%sstep %lld/%lld  loss %.4f  %.1f samples/s  peak %s", tty ? "\r" : "",
                   static_cast<long long>(s + 1), static_cast<long long>(total), step.loss, rate,
                   format_bytes(peak).c_str());
      if (r.budget_bytes > 0)
        std::fprintf(stderr, " / budget %s", format_bytes(r.budget_bytes).c_str());
      std::fprintf(stderr, "  ETA %s%s", clock_text(eta).c_str(), tty ? "   " : "\n");
    }
    if (o.checkpoint_every > 0 && (s + 1) % o.checkpoint_every == 0)
      save_checkpoint(o.checkpoint, model, *optimizer, o.seed);
  }
  if (tty && !o.json) std::fprintf(stderr, "\n");
  if (!o.checkpoint.empty()) save_checkpoint(o.checkpoint, model, *optimizer, o.seed);
  if (!o.save.empty()) model.save(o.save);
  const int64_t done = total - first;
  if (o.json) {
    nlohmann::json j = {{"steps", total},
                        {"max_step_peak_bytes", max_peak},
                        {"mean_loss", done > 0 ? loss_sum / done : 0.0}};
    if (r.budget_bytes > 0) j["budget_bytes"] = r.budget_bytes;
    if (r.baseline_peak_bytes > 0) j["autograd_step_peak_bytes"] = r.baseline_peak_bytes;
    std::cout << j.dump() << std::endl;
  } else {
    std::printf("trained %lld steps: largest step peak %s", static_cast<long long>(done),
                format_bytes(max_peak, true).c_str());
    if (r.budget_bytes > 0) std::printf(", budget %s", format_bytes(r.budget_bytes, true).c_str());
    if (r.baseline_peak_bytes > 0)
      std::printf(", %.3f of autograd's step peak %s", double(max_peak) / r.baseline_peak_bytes,
                  format_bytes(r.baseline_peak_bytes, true).c_str());
    std::printf("\n");
    if (!o.save.empty()) std::printf("saved the trained weights to %s\n", o.save.c_str());
  }
  if (o.compare_iters > 0) {
    if (!o.json) std::cerr << "timing forward and backward against autograd, interleaved ...\n";
    const AutogradComparison c = compare_with_autograd(*planned, o.compare_iters);
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
  if (r.budget_bytes > 0 && max_peak > r.budget_bytes) {
    std::cerr << "monet: error: a step's measured peak " << format_bytes(max_peak, true)
              << " exceeded the budget " << format_bytes(r.budget_bytes, true) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("train", "plan a model under a memory budget and train it");
  auto o = std::make_shared<TrainOptions>();
  add_model_options(cmd, o->model, 32);
  cmd->add_option("--data", o->data, "training data folder");
  cmd->add_option("--data-format", o->data_format,
                  "imagefolder (DIR/CLASS/*.png|jpg) or cifar10 (data_batch_*.bin)")
      ->capture_default_str();
  cmd->add_flag("--synthetic", o->synthetic, "random images and labels, no data");
  cmd->add_option("--budget", o->budget,
                  "peak memory of a whole training step: bytes, KiB/MiB/GiB, or a ratio of "
                  "autograd's step peak (0.4x)");
  cmd->add_option("--planner", o->planner, "planner (see monet plan --help)")
      ->capture_default_str();
  cmd->add_option("--plan", o->plan_file, "run this plan file instead of planning");
  cmd->add_option("--time-limit", o->time_limit, "planner wall-clock limit (seconds)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cache-dir", o->cache_dir,
                  "plan, cost and baseline cache (default ~/.cache/monet)");
  cmd->add_option("--optimizer", o->optimizer, "sgd or adam")->capture_default_str();
  cmd->add_option("--lr", o->lr, "learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--momentum", o->momentum, "SGD momentum")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "L2 weight decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "passes over the data")->check(CLI::PositiveNumber);
  cmd->add_option("--steps", o->steps, "training steps in all")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->seed, "initialisation and data-order seed")->capture_default_str();
  cmd->add_option("--prefetch", o->prefetch, "batches decoded ahead in the background")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--save", o->save,
                  "write the trained weights here (TorchScript for a .pt model, "
                  "else a state_dict torch.load reads)");
  cmd->add_option("--checkpoint", o->checkpoint,
                  "checkpoint file (written at the end, and every "
                  "--checkpoint-every steps)");
  cmd->add_option("--checkpoint-every", o->checkpoint_every, "steps between checkpoints")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--resume", o->resume, "continue from this checkpoint");
  cmd->add_option("--log-every", o->log_every,
                  "steps between progress lines when stderr is not a terminal");
  cmd->add_option("--compare-autograd", o->compare_iters,
                  "after training, time this many forward+backward passes under the plan and "
                  "under autograd, interleaved")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "one JSON object per step on stdout, and a summary");
  commands.push_back({cmd, [o] { return run_train(*o); }});
}

}  // namespace monet::cli
