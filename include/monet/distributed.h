// monet/distributed.h: data-parallel training on torch.distributed's c10d (Gloo).
//
// Every rank runs the same plan on its own shard of the data. The plan is made once, on
// rank 0, and broadcast; rank 0's parameters and buffers are broadcast at start.
// Gradients are averaged over the ranks in buckets, each all-reduced as soon as the plan
// has completed the gradients it holds, so communication overlaps the rest of the
// backward; the bucket buffers are part of the budget. Batch-norm running statistics
// stay per rank (as DistributedDataParallel with broadcast_buffers=False keeps them).
//
//   monet::Rendezvous where = monet::Rendezvous::from_environment();  // torchrun's variables
//   monet::ProcessGroup group = monet::ProcessGroup::gloo(where);
//   monet::DataParallel ddp(monet::Model::load(spec), plan_options, group);
//   torch::optim::SGD sgd(ddp.model().parameters(), ...);
//   for (...) { monet::zero_grad(...); ddp.step(x, y); sgd.step(); }
//
// With plan_options.optimizer_update = OptimizerUpdate::kFused, ddp.use_optimizer(sgd)
// instead: each parameter is updated inside the backward once its bucket's average has
// arrived, and sgd.step() afterwards finds no gradient.
//
// Sharded (DataParallelOptions::shard, ZeRO's stages 1 and 2), each rank keeps the
// optimizer state of its own contiguous run of the parameters and updates those only
// (ddp.use_optimizer under either update mode); the owners then broadcast the updated
// parameters. The plan's budget holds the largest rank's share of the state.
//
// Units: bytes for memory, seconds for time.
#pragma once

#include <monet/monet.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>
#include <string>
#include <vector>

namespace monet {

/// Where this process is in a data-parallel job, in torchrun's terms.
struct Rendezvous {
  std::string master_addr = "127.0.0.1";  // host of rank 0, which serves the TCPStore
  int master_port = 29500;                // the TCPStore's port
  int world_size = 1;                     // ranks in all
  int rank = 0;                           // this process's rank, 0 <= rank < world_size
  int local_rank = 0;                     // its index among the ranks on this host
  /// MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK (those unset keep the
  /// defaults above). Throws std::invalid_argument naming a malformed or inconsistent one.
  static Rendezvous from_environment();
};

/// A c10d process group and the store its ranks met through.
struct ProcessGroup {
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  c10::intrusive_ptr<c10d::Store> store;  // may be null for a group handed in
  /// Joins the ranks of `where` over Gloo (TCP): rank 0 serves a c10d::TCPStore at
  /// master_addr:master_port, every rank waits up to `timeout_seconds` for the others and
  /// uses that timeout for every collective. This rank's Gloo address is the one it
  /// reaches master_addr from ($GLOO_SOCKET_IFNAME names an interface instead). Throws
  /// std::runtime_error when the ranks do not meet in time.
  static ProcessGroup gloo(const Rendezvous& where, double timeout_seconds = 300);
};

/// When gradients are all-reduced.
enum class GradientSync {
  kDuringBackward,  // each bucket as soon as the plan has completed its gradients
  kAfterBackward,   // every bucket after the backward (for comparison)
};

/// What each rank holds of the training state beyond the parameters (ZeRO's stages).
/// Sharded, each rank owns a contiguous run of the model's parameters (in
/// Model::parameters() order, balanced by bytes: parameter_owners()), keeps the optimizer
/// state of those only and updates only those; the updated parameters then reach every
/// rank by a broadcast from their owner, a bucket at a time, after the backward.
enum class ShardMode {
  kNone,            // every rank holds and updates everything (DistributedDataParallel)
  kOptimizerState,  // stage 1: buckets all-reduced; each rank updates and keeps state of its own
  /// Stage 2: as stage 1, but each bucket (never spanning two owners) is summed onto its
  /// owner only (c10d reduce, which Gloo has; it lacks reduce-scatter), and the other
  /// ranks drop their local gradients as soon as they are sent.
  kGradients,
};
/// "none", "optimizer", "gradients".
const char* shard_mode_name(ShardMode mode);
/// Throws std::invalid_argument naming the known values for any other name.
ShardMode shard_mode_from_name(const std::string& name);

/// The rank that owns each tensor of `parameters` when they are split into `world_size`
/// contiguous runs balanced by bytes (each run's bytes as close to total / world_size as
/// the tensors' boundaries allow).
std::vector<int> parameter_owners(const std::vector<torch::Tensor>& parameters, int world_size);

struct DataParallelOptions {
  ShardMode shard = ShardMode::kNone;
  int64_t bucket_bytes = 25 * 1024 * 1024;  // gradient bytes per bucket (DDP's default)
  int buckets_in_flight = 2;  // all-reduces at once; each holds a buffer of one bucket
  GradientSync sync = GradientSync::kDuringBackward;
  double timeout_seconds = 300;  // a collective not done by then stops the step
  /// How long the other ranks wait for rank 0's plan (profiling and solving).
  double planning_timeout_seconds = 3600;
  /// After a failed collective, how long a rank waits for the others to answer a roll
  /// call through the store, to name those that died or hang in its error.
  double roll_call_seconds = 5;
};

/// A stopped data-parallel step: a collective failed or timed out (a rank died or hangs).
class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Whether `e`, thrown by DataParallel's constructor on a rank other than 0, is rank 0's
/// planning error passed on (its message then begins "rank 0 could not plan: "): a launcher
/// of ranks prints it once, from rank 0.
bool is_rank_zero_planning_error(const std::exception& e);

/// A model planned once (on rank 0) and trained data-parallel on every rank.
class DataParallel {
 public:
  /// Rank 0 plans `model` with `plan` (the bucket buffers added to its reserved bytes; a
  /// ratio budget, "1.0x", of PyTorch DDP's per-rank step: BudgetBaseline::
  /// kDataParallelStep) and broadcasts the plan and the budget; every rank then takes rank 0's
  /// parameters and buffers. Collective: every rank must call it. Throws what PlannedModel throws
  /// (on every rank: the others get rank 0's error).
  DataParallel(Model model, PlanOptions plan, ProcessGroup group,
               const DataParallelOptions& options = {});
  ~DataParallel();
  DataParallel(DataParallel&&) noexcept;
  DataParallel& operator=(DataParallel&&) noexcept;

  /// One step on this rank's batch: forward, loss and the planned backward, with the
  /// gradients averaged over the ranks into each parameter's .grad() (zero them before,
  /// as with DistributedDataParallel). StepResult::seconds includes waiting for the last
  /// all-reduce. Throws DistributedError when a collective fails.
  StepResult step(const torch::Tensor& input, const torch::Tensor& target);
  /// The step split as PlannedModel::forward splits it, for a loss of the caller's own:
  /// the planned forward on this rank's inputs; the output's backward runs the planned
  /// backward, the gradients averaged as step() averages them (and, fused or sharded, the
  /// updates made) before it returns. The backward throws DistributedError when a
  /// collective fails.
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs);

  /// Under OptimizerUpdate::kFused (PlanOptions::optimizer_update, with
  /// GradientSync::kDuringBackward): the optimizer that updates each parameter with its
  /// averaged gradient inside the backward, as soon as its bucket's all-reduce has
  /// completed and the plan is done with the parameter; the local gradient is freed at
  /// the plan's update point, as in one process (the bucket buffers hold the averages).
  /// As PlannedModel::use_optimizer: torch::optim::SGD, Adam or AdamW, their arithmetic
  /// and state. Throws std::logic_error for a model planned with kAfterBackward.
  void use_optimizer(torch::optim::Optimizer& optimizer);
  /// The same with an update of the caller's own: `update(parameter, averaged gradient)`.
  void use_update(PlannedModel::ParameterUpdateFn update);

  /// Sharded (DataParallelOptions::shard): the optimizer must be given with use_optimizer
  /// under either update mode; after the backward each rank updates the parameters it
  /// owns (kAfterBackward: from their averaged .grad(), which is then freed on every
  /// rank) and the owners broadcast them. Whether `parameter` is this rank's to update.
  bool owns(const torch::Tensor& parameter) const;
  /// Collective. Sends every rank's optimizer state to rank 0, whose `optimizer` then
  /// holds the state of every parameter (e.g. to save a checkpoint any number of ranks can
  /// resume from); the others are unchanged. Without sharding it does nothing.
  void gather_optimizer_state(torch::optim::Optimizer& optimizer);
  /// Collective. Every rank's `bytes` reach rank 0, which gets them in rank order (its own
  /// first); the other ranks get an empty list. For state kept outside a
  /// torch::optim::Optimizer (Python's optimizers gather theirs with it). Throws
  /// DistributedError when a collective fails.
  std::vector<std::string> gather_to_rank_zero(const std::string& bytes);
  /// Drops from `optimizer` the state of the parameters this rank does not own (after
  /// gather_optimizer_state, or after loading a whole checkpoint). Without sharding it does
  /// nothing.
  void shard_optimizer_state(torch::optim::Optimizer& optimizer);

  PlannedModel& planned();
  Model& model();
  int rank() const;
  int world_size() const;
  /// Changes when the next steps all-reduce (e.g. to compare both in one run).
  void set_gradient_sync(GradientSync sync);
  /// Bytes of the bucket buffers (inside the budget).
  int64_t bucket_buffer_bytes() const;
  ShardMode shard() const;
  /// Bytes of the parameters this rank owns (all of them without sharding).
  int64_t owned_parameter_bytes() const;
  /// Waits for every rank (e.g. before exiting, so that rank 0's store outlives the rest).
  void barrier();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace monet
