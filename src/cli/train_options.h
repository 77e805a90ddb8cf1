// The command line of `monet train`: its options, their defaults and their checks.
#pragma once

#include <cstdint>
#include <string>

#include "cli/cli_common.h"

namespace monet::cli {

struct TrainOptions {
  ModelOptions model;
  std::string data, data_format = "imagefolder";
  bool synthetic = false;
  std::string budget, planner = "monet", plan_file, cache_dir;
  double time_limit = 60;
  std::string search_limit = "wall-clock";  // --search-limit (PlanningLimit's name)
  std::string optimizer = "sgd";
  std::string optimizer_update;  // --optimizer-update; empty: fused alone, after-backward in DP
  double lr = 0.01, momentum = 0.9, weight_decay = 0;
  double clip_grad_norm = 0;  // --clip-grad-norm: the largest global gradient norm (0: none)
  int64_t accumulate = 1;     // --accumulate: micro-batches per optimizer step
  int64_t epochs = 0, steps = 0;
  uint64_t seed = 0;
  int prefetch = 2;
  std::string save, checkpoint, resume;
  int64_t checkpoint_every = 0;
  int64_t log_every = 0;
  int compare_iters = 0;
  bool json = false;
  // Data parallel (torchrun's terms).
  int nproc = 1, nnodes = 1, node_rank = 0;
  std::string master_addr;
  int master_port = 0;
  double bucket_mib = 25;
  std::string sync = "during-backward";
  std::string shard = "none";  // --shard (ShardMode's name)
  double timeout = 300;
};

/// Registers every option of `monet train` on `cmd`, writing into `o`.
void add_train_options(CLI::App* cmd, TrainOptions& o);
/// Options that contradict each other or name unknown values: throws UsageError.
void check_options(const TrainOptions& o);

}  // namespace monet::cli
