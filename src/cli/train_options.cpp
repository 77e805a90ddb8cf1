#include "cli/train_options.h"

#include <monet/distributed.h>

namespace monet::cli {
namespace {

void add_data_parallel_options(CLI::App* cmd, TrainOptions& o) {
  const char* group = "Data parallel (torch.distributed, Gloo)";
  cmd->add_option("--nproc", o.nproc, "ranks to start on this host (each trains on its shard)")
      ->check(CLI::Range(1, 1024))
      ->group(group);
  cmd->add_option("--nnodes", o.nnodes, "hosts in the job")
      ->check(CLI::Range(1, 1024))
      ->group(group);
  cmd->add_option("--node-rank", o.node_rank, "this host's index, 0 .. nnodes-1")
      ->check(kNonNegative)
      ->group(group);
  cmd->add_option("--master-addr", o.master_addr,
                  "host of rank 0 (default $MASTER_ADDR, else 127.0.0.1)")
      ->group(group);
  cmd->add_option("--master-port", o.master_port, "rank 0's rendezvous port (default 29500)")
      ->check(CLI::Range(1, 65535))
      ->group(group);
  cmd->add_option("--bucket-mib", o.bucket_mib, "gradient bucket size (MiB)")
      ->check(kPositive)
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--gradient-sync", o.sync,
                  "during-backward (each bucket as soon as its gradients are complete), "
                  "after-backward, or alternate (step by step, to compare the two)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--shard", o.shard,
                  "none (every rank holds all optimizer state), optimizer (each rank keeps and "
                  "updates its own parameters' state: ZeRO stage 1) or gradients (also each "
                  "bucket summed onto its owner only: stage 2)")
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--timeout", o.timeout,
                  "seconds a rank waits for the others (rendezvous, each collective) before "
                  "stopping with an error")
      ->check(kPositive)
      ->capture_default_str()
      ->group(group);
}

}  // namespace

void add_train_options(CLI::App* cmd, TrainOptions& o) {
  add_model_options(cmd, o.model, 32);
  cmd->add_option("--data", o.data, "training data folder");
  cmd->add_option("--data-format", o.data_format,
                  "imagefolder (DIR/CLASS/*.png|jpg) or cifar10 (data_batch_*.bin)")
      ->capture_default_str();
  cmd->add_flag("--synthetic", o.synthetic, "random images and labels, no data");
  cmd->add_option("--budget", o.budget,
                  "peak memory of a whole training step: bytes, KiB/MiB/GiB, or a ratio of "
                  "autograd's step peak (0.4x; under --nproc, of PyTorch DDP's per-rank step)");
  cmd->add_option("--planner", o.planner, "planner (see monet plan --help)")->capture_default_str();
  cmd->add_option("--plan", o.plan_file, "run this plan file instead of planning");
  cmd->add_option("--time-limit", o.time_limit, "planner wall-clock limit (seconds)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--search-limit", o.search_limit,
                  "what ends the planner's searches: wall-clock or work (the same plan on "
                  "every machine for the same costs)")
      ->check(CLI::IsMember({"wall-clock", "work"}))
      ->capture_default_str();
  cmd->add_option("--cache-dir", o.cache_dir,
                  "plan, cost and baseline cache (default ~/.cache/monet)");
  cmd->add_option("--optimizer", o.optimizer, "sgd, adam or adamw")->capture_default_str();
  cmd->add_option("--optimizer-update", o.optimizer_update,
                  "when the optimizer updates: fused (each parameter inside the backward, as "
                  "soon as the plan is done with it; its gradient freed at once) or "
                  "after-backward (default: fused; after-backward with --gradient-sync "
                  "after-backward or alternate)")
      ->check(CLI::IsMember({"fused", "after-backward"}));
  cmd->add_option("--clip-grad-norm", o.clip_grad_norm,
                  "scale the gradients down to this global norm before each update "
                  "(torch.nn.utils.clip_grad_norm_; takes after-backward updates)")
      ->check(kPositive);
  cmd->add_option("--accumulate", o.accumulate,
                  "micro-batches per optimizer step, their gradients averaged (takes "
                  "after-backward updates; the budget keeps room for every gradient)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--lr", o.lr, "learning rate")->check(kPositive)->capture_default_str();
  cmd->add_option("--momentum", o.momentum, "SGD momentum")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--weight-decay", o.weight_decay, "L2 weight decay")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "passes over the data")->check(kPositive);
  cmd->add_option("--steps", o.steps, "training steps in all")->check(kPositive);
  cmd->add_option("--seed", o.seed, "initialisation and data-order seed")->capture_default_str();
  cmd->add_option("--prefetch", o.prefetch, "batches decoded ahead in the background")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--save", o.save,
                  "write the trained weights here (TorchScript for a .pt model, "
                  "else a state_dict torch.load reads)")
      ->check(kWritableFile);
  cmd->add_option("--checkpoint", o.checkpoint,
                  "checkpoint file (written at the end, and every "
                  "--checkpoint-every steps)")
      ->check(kWritableFile);
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "steps between checkpoints")
      ->check(kPositive);
  cmd->add_option("--resume", o.resume, "continue from this checkpoint");
  cmd->add_option("--log-every", o.log_every,
                  "steps between progress lines when stderr is not a terminal");
  cmd->add_option("--compare-autograd", o.compare_iters,
                  "after training, time this many forward+backward passes under the plan and "
                  "under autograd, interleaved")
      ->check(kNonNegative);
  cmd->add_flag("--json", o.json, "one JSON object per step on stdout, and a summary");
  add_data_parallel_options(cmd, o);
}

void check_options(const TrainOptions& o) {
  if (o.synthetic == !o.data.empty())
    throw UsageError("give --data DIR (with --data-format) or --synthetic");
  if ((o.epochs > 0) == (o.steps > 0)) throw UsageError("give --epochs N or --steps N");
  if (o.optimizer != "sgd" && o.optimizer != "adam" && o.optimizer != "adamw")
    throw UsageError("--optimizer must be sgd, adam or adamw");
  if (o.optimizer_update == "fused" && (o.clip_grad_norm > 0 || o.accumulate > 1))
    throw UsageError(std::string(o.clip_grad_norm > 0 ? "--clip-grad-norm" : "--accumulate") +
                     " needs every gradient before any update, and fused updates apply each "
                     "one as soon as it is complete: use --optimizer-update after-backward (the "
                     "default with it)");
  if (o.optimizer_update == "fused" && o.sync != "during-backward")
    throw UsageError(
        "--optimizer-update fused takes each bucket's average as its all-reduce completes "
        "during the backward: use --gradient-sync during-backward, or --optimizer-update "
        "after-backward");
  if (o.checkpoint_every > 0 && o.checkpoint.empty())
    throw UsageError("--checkpoint-every needs --checkpoint FILE");
  if (o.node_rank >= o.nnodes)
    throw UsageError("--node-rank " + std::to_string(o.node_rank) + " is not below --nnodes " +
                     std::to_string(o.nnodes));
  if (o.sync != "during-backward" && o.sync != "after-backward" && o.sync != "alternate")
    throw UsageError("--gradient-sync must be during-backward, after-backward or alternate");
  try {
    shard_mode_from_name(o.shard);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--shard: ") + e.what());
  }
  if (o.shard != "none" && (o.clip_grad_norm > 0 || o.accumulate > 1))
    throw UsageError(std::string(o.clip_grad_norm > 0 ? "--clip-grad-norm" : "--accumulate") +
                     " needs every gradient on every rank before any update, and --shard " +
                     o.shard +
                     " updates each rank's own parameters after each backward: use "
                     "--shard none");
}

}  // namespace monet::cli
