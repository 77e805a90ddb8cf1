// Sharded data parallelism (ZeRO stages 1 and 2) in float64, ranks as threads over a
// c10d::HashStore: two ranks on halves of each batch, each keeping and updating the
// optimizer state of its own parameters only, give the weights one process gets with
// the whole optimizer on the whole batch, under both update modes; rank 0 gathers the
// whole state for a checkpoint and each rank drops what it does not own.
#include <gtest/gtest.h>

#include <monet/distributed.h>

#include "data_parallel_support.h"
#include "distributed/parameter_shards.h"

namespace monet {
namespace {

TEST(ParameterShards, SplitsInOrderIntoRunsBalancedByBytes) {
  const std::vector<at::Tensor> p = {at::zeros({100}), at::zeros({100}), at::zeros({300}),
                                     at::zeros({10}), at::zeros({90})};
  EXPECT_EQ(split_by_bytes(p, 1), (std::vector<int>{0, 0, 0, 0, 0}));
  // 600 elements: the boundary nearest 300 is after the second tensor (200) or the third
  // (500); the third's middle (350) lies past 300, so it opens run 1.
  EXPECT_EQ(split_by_bytes(p, 2), (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(largest_run_bytes(p, split_by_bytes(p, 2), 2), 400 * 4);
  EXPECT_EQ(split_by_bytes(p, 3), (std::vector<int>{0, 0, 1, 2, 2}));
  // More ranks than tensors: some runs are empty, every owner is a rank.
  for (int owner : split_by_bytes(p, 8)) EXPECT_LT(owner, 8);
  EXPECT_EQ(parameter_owners(p, 2), split_by_bytes(p, 2));
  EXPECT_EQ(shard_mode_from_name("gradients"), ShardMode::kGradients);
  EXPECT_STREQ(shard_mode_name(ShardMode::kOptimizerState), "optimizer");
  EXPECT_THROW(shard_mode_from_name("zero3"), std::invalid_argument);
}

struct ShardCase {
  ShardMode shard;
  OptimizerUpdate update;
};
void PrintTo(const ShardCase& c, std::ostream* os) {
  *os << shard_mode_name(c.shard) << ", " << optimizer_update_name(c.update);
}

class ShardedState : public ::testing::TestWithParam<ShardCase> {};

// Adam with weight decay and AMSGrad: two moments and their maximum per parameter.
std::unique_ptr<torch::optim::Optimizer> adam_amsgrad_with_decay(
    const std::vector<torch::Tensor>& p) {
  return std::make_unique<torch::optim::Adam>(
      p, torch::optim::AdamOptions(1e-2).weight_decay(1e-3).amsgrad(true));
}

TEST_P(ShardedState, TwoRanksEqualOneProcessOnTheWholeBatch) {
  const ShardCase c = GetParam();
  const int steps = 3;
  const testing_dp::WholeBatchRun whole =
      testing_dp::train_on_whole_batches(steps, adam_amsgrad_with_decay);
  std::vector<std::vector<torch::Tensor>> trained(2);
  std::vector<size_t> owned_states(2), gathered_states(2), states_after(2);
  size_t parameter_count = 0;
  testing_dp::run_ranks(2, [&](int rank, ProcessGroup pg) {
    DataParallelOptions o;
    o.bucket_bytes = 512;  // many buckets, two in flight
    o.shard = c.shard;
    PlanOptions po = testing_dp::quiet("chen");
    po.optimizer = OptimizerKind::kAdam;
    po.optimizer_update = c.update;
    DataParallel ddp(testing_dp::plain_cnn(2), po, pg, o);
    EXPECT_LT(ddp.planned().report().optimizer.state_bytes,
              optimizer_memory(ddp.model(), OptimizerKind::kAdam).state_bytes);
    auto opt = adam_amsgrad_with_decay(ddp.model().parameters());
    torch::Tensor x = whole.xs[0].narrow(0, 2 * rank, 2), y = whole.ys[0].narrow(0, 2 * rank, 2);
    EXPECT_THROW(ddp.step(x, y), std::logic_error);  // no optimizer given yet
    ddp.use_optimizer(*opt);
    for (int s = 0; s < steps; ++s) {
      zero_grad(ddp.model().parameters());
      ddp.step(whole.xs[s].narrow(0, 2 * rank, 2), whole.ys[s].narrow(0, 2 * rank, 2));
      for (const auto& p : ddp.model().parameters()) EXPECT_FALSE(p.grad().defined());
      opt->step();  // finds no gradient
    }
    for (const auto& p : ddp.model().parameters()) {
      trained[rank].push_back(p.detach().clone());
      EXPECT_EQ(opt->state().count(c10::guts::to_string(p.unsafeGetTensorImpl())),
                ddp.owns(p) ? 1u : 0u);
    }
    owned_states[rank] = opt->state().size();
    ddp.gather_optimizer_state(*opt);
    gathered_states[rank] = opt->state().size();
    ddp.shard_optimizer_state(*opt);
    states_after[rank] = opt->state().size();
    ddp.barrier();
    if (rank == 0) parameter_count = ddp.model().parameters().size();
  });
  const double error = testing_dp::max_relative_error(trained[0], whole.trained);
  std::printf("shard %s, %s updates: largest relative parameter error against one process %.3g\n",
              shard_mode_name(c.shard), optimizer_update_name(c.update), error);
  EXPECT_LE(error, 1e-9);
  EXPECT_EQ(testing_dp::max_relative_error(trained[1], trained[0]), 0.0);
  EXPECT_GT(owned_states[0], 0u);
  EXPECT_GT(owned_states[1], 0u);
  EXPECT_EQ(owned_states[0] + owned_states[1], parameter_count);
  EXPECT_EQ(gathered_states[0], parameter_count);  // rank 0 holds the whole state
  EXPECT_EQ(gathered_states[1], owned_states[1]);
  EXPECT_EQ(states_after, owned_states);
}

INSTANTIATE_TEST_SUITE_P(
    Stages, ShardedState,
    ::testing::Values(ShardCase{ShardMode::kOptimizerState, OptimizerUpdate::kAfterBackward},
                      ShardCase{ShardMode::kOptimizerState, OptimizerUpdate::kFused},
                      ShardCase{ShardMode::kGradients, OptimizerUpdate::kAfterBackward},
                      ShardCase{ShardMode::kGradients, OptimizerUpdate::kFused}),
    [](const ::testing::TestParamInfo<ShardCase>& info) {
      return std::string(info.param.shard == ShardMode::kGradients ? "Gradients" : "Optimizer") +
             (info.param.update == OptimizerUpdate::kFused ? "Fused" : "AfterBackward");
    });

}  // namespace
}  // namespace monet
