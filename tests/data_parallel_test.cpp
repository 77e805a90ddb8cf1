// Data-parallel training in float64. Two rank processes (Rendezvous, TCPStore, Gloo over
// loopback, and across two network namespaces joined by a veth pair) give PyTorch
// DistributedDataParallel's weights and per-rank batch-norm statistics on the same
// shards. Inside one process (ranks as threads over a c10d::HashStore): two ranks on
// halves of each batch give the weights one process gets on the whole batch (no batch
// norm); the executor reports each parameter's gradient once, when it is complete; rank
// 0's planning errors reach every rank.
#include <gtest/gtest.h>

#include <monet/distributed.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "api/model_impl.h"
#include "api/planned_model_impl.h"
#include "data_parallel_support.h"
#include "distributed/gradient_buckets.h"
#include "runtime/data/batch_loader.h"
#include "training_equivalence.h"

using namespace monet::testing_dp;  // NOLINT: the tests' shared helpers

namespace monet {
namespace {

const std::string kDdp = kDir + "/ddp";  // tools/make_training_fixtures.py: ddp_fixtures
constexpr int kDdpSteps = 5, kDdpBatch = 4;
constexpr uint64_t kDdpSeed = 3;

// One rank of the job the environment describes (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT): a MONeT plan halfway between the leanest plan and store-all (bucket
// buffers included), 5 steps of SGD with momentum on this rank's shard, then every
// parameter and buffer against DistributedDataParallel's same rank.
void train_one_ddp_rank() {
  const Rendezvous where = Rendezvous::from_environment();
  ProcessGroup pg = ProcessGroup::gloo(where, 120);
  ModelSpec spec;
  spec.model = kDdp + "/model.pt";
  spec.input_shape = {kDdpBatch, 3, 32, 32};
  Model model = Model::load(spec);
  testing::convert_model(model, at::kDouble);
  PlanOptions po = quiet("monet");
  // MONET_DDP_FUSED: the optimizer's updates fused into the backward, each with its
  // bucket's average.
  const bool fused = std::getenv("MONET_DDP_FUSED") != nullptr;
  if (fused) po.optimizer_update = OptimizerUpdate::kFused;
  DataParallelOptions dpo;
  dpo.bucket_bytes = 4096;  // several buckets, two in flight
  // MONET_DDP_SHARD: sharded optimizer state ("optimizer") or gradients too ("gradients").
  const char* shard = std::getenv("MONET_DDP_SHARD");
  if (shard) dpo.shard = shard_mode_from_name(shard);
  if (where.rank == 0) {
    BucketOptions bo;
    bo.bucket_bytes = dpo.bucket_bytes;
    bo.buckets_in_flight = dpo.buckets_in_flight;
    PlanOptions ro = po;
    ro.reserved_bytes = GradientBuckets::buffer_bytes(model.parameters(), bo);
    const BudgetRange range = budget_range(model, ro);
    po.budget = std::to_string((range.smallest_bytes + range.storeall_bytes) / 2);
  }
  DataParallel ddp(model, po, pg, dpo);
  EXPECT_EQ(ddp.planned().report().planner, "monet");
  LoaderOptions lo;
  lo.batch = kDdpBatch;
  lo.height = lo.width = 32;
  lo.seed = kDdpSeed;
  lo.prefetch = 1;
  lo.rank = where.rank;
  lo.world_size = where.world_size;
  BatchLoader loader(std::shared_ptr<ImageDataset>(open_cifar10(kDdp + "/data")), lo);
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  if (fused || shard) ddp.use_optimizer(sgd);
  for (int s = 0; s < kDdpSteps; ++s) {
    zero_grad(model.parameters());
    auto [x, y] = loader.next();
    ddp.step(x, y);
    sgd.step();  // after fused updates: no gradient left, nothing to do
  }
  ddp.barrier();
  torch::jit::Module ref =
      torch::jit::load(kDdp + "/ddp_rank" + std::to_string(where.rank) + ".pt");
  std::map<std::string, at::Tensor> expected;
  for (const auto& b : ref.named_buffers()) expected[b.name] = b.value;
  auto named = model.named_parameters();
  for (const auto& b : model.named_buffers()) named.push_back(b);
  double worst = 0;
  for (const auto& [name, t] : named) {
    const std::string key = std::regex_replace(name, std::regex("\\."), "__");
    ASSERT_EQ(expected.count(key), 1u) << name;
    const at::Tensor& e = expected.at(key);
    if (!e.is_floating_point()) {
      EXPECT_TRUE(t.equal(e)) << name;
      continue;
    }
    ASSERT_EQ(t.scalar_type(), at::kDouble) << name;
    const double err =
        (t.detach() - e).abs().max().item<double>() / std::max(e.abs().max().item<double>(), 1e-30);
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-9) << name;
  }
  std::printf(
      "rank %d: largest relative error against DistributedDataParallel %.3g "
      "(%zu parameters and buffers%s%s%s)\n",
      where.rank, worst, named.size(), fused ? ", fused updates" : "", shard ? ", sharded " : "",
      shard ? shard : "");
}

TEST(DataParallel, RankOfAJobMatchesPytorchDdp) {
  if (std::getenv("MONET_DDP_RANK_PROCESS") == nullptr)
    GTEST_SKIP() << "runs as a rank process of the two tests below";
  train_one_ddp_rank();
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string self_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return std::string(buf, n > 0 ? n : 0);
}

// Runs two rank processes of this binary (RankOfAJobMatchesPytorchDdp), each command
// prefixed by `prefix[rank]` (e.g. "ip netns exec NS"), with rank 0 at `master`;
// returns both outputs, and whether both exited 0.
bool run_two_ranks(const std::vector<std::string>& prefix, const std::string& master,
                   std::string* output) {
  // Files named by test and process: CTest runs the two-rank tests side by side.
  const std::string dir = ::testing::TempDir() + "/monet_ddp_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                          std::to_string(getpid());
  const std::string port = std::to_string(free_port());
  std::string script;
  for (int r = 0; r < 2; ++r)
    script += "MONET_DDP_RANK_PROCESS=1 RANK=" + std::to_string(r) +
              " LOCAL_RANK=" + std::to_string(r) + " WORLD_SIZE=2 MASTER_ADDR=" + master +
              " MASTER_PORT=" + port + " OMP_NUM_THREADS=1 " + prefix[r] + " " + self_path() +
              " --gtest_filter=DataParallel.RankOfAJobMatchesPytorchDdp > " + dir + "_rank" +
              std::to_string(r) + ".log 2>&1 & p" + std::to_string(r) + "=$!\n";
  script += "wait $p0; a=$?; wait $p1; b=$?; [ $a -eq 0 ] && [ $b -eq 0 ]\n";
  const std::string path = dir + "_ranks.sh";
  std::ofstream(path) << script;
  const int status = std::system(("sh " + path).c_str());
  for (int r = 0; r < 2; ++r) {
    std::ifstream f(dir + "_rank" + std::to_string(r) + ".log");
    *output += "--- rank " + std::to_string(r) + " ---\n" +
               std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void expect_both_ranks_matched(const std::string& output) {
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(output.find("rank " + std::to_string(r) + ": largest relative error against"),
              std::string::npos)
        << output;
  std::printf("%s", output.c_str());
}

TEST(DataParallel, TwoRankProcessesOnLoopbackMatchPytorchDdp) {
  std::string output;
  EXPECT_TRUE(run_two_ranks({"", ""}, "127.0.0.1", &output)) << output;
  expect_both_ranks_matched(output);
}

// The same with SGD's updates fused into the planned backward: each parameter updated
// with its bucket's average once the all-reduce has completed and the plan is done with it.
TEST(DataParallel, TwoRankProcessesWithFusedUpdatesMatchPytorchDdp) {
  std::string output;
  EXPECT_TRUE(run_two_ranks({"MONET_DDP_FUSED=1", "MONET_DDP_FUSED=1"}, "127.0.0.1", &output))
      << output;
  expect_both_ranks_matched(output);
  EXPECT_NE(output.find("fused updates"), std::string::npos) << output;
}

// Sharded optimizer state (ZeRO stage 1, after-backward updates) and sharded gradients
// (stage 2, fused updates): each rank updates its own parameters, the owners broadcast
// them; the weights are DistributedDataParallel's (whose SGD, sharded or not, computes the
// same).
TEST(DataParallel, TwoRankProcessesWithShardedOptimizerStateMatchPytorchDdp) {
  std::string output;
  const std::string env = "MONET_DDP_SHARD=optimizer";
  EXPECT_TRUE(run_two_ranks({env, env}, "127.0.0.1", &output)) << output;
  expect_both_ranks_matched(output);
  EXPECT_NE(output.find("sharded optimizer"), std::string::npos) << output;
}

TEST(DataParallel, TwoRankProcessesWithShardedGradientsMatchPytorchDdp) {
  std::string output;
  const std::string env = "MONET_DDP_SHARD=gradients MONET_DDP_FUSED=1";
  EXPECT_TRUE(run_two_ranks({env, env}, "127.0.0.1", &output)) << output;
  expect_both_ranks_matched(output);
  EXPECT_NE(output.find("sharded gradients"), std::string::npos) << output;
}

// The two ranks in two network namespaces joined by a veth pair: their traffic crosses a
// real TCP link between two addresses.
TEST(DataParallel, TwoHostsOverAVethLinkMatchPytorchDdp) {
  const std::string tag = std::to_string(getpid() % 100000);
  const std::string a = "monet" + tag + "a", b = "monet" + tag + "b";
  const std::vector<std::string> setup = {
      "ip netns add " + a,
      "ip netns add " + b,
      "ip link add v" + tag + "a type veth peer name v" + tag + "b",
      "ip link set v" + tag + "a netns " + a,
      "ip link set v" + tag + "b netns " + b,
      "ip -n " + a + " addr add 10.233.0.1/24 dev v" + tag + "a",
      "ip -n " + b + " addr add 10.233.0.2/24 dev v" + tag + "b",
      "ip -n " + a + " link set v" + tag + "a up",
      "ip -n " + b + " link set v" + tag + "b up",
      "ip -n " + a + " link set lo up",
      "ip -n " + b + " link set lo up"};
  auto teardown = [&] {
    (void)std::system(
        ("ip netns del " + a + " 2>/dev/null; ip netns del " + b + " 2>/dev/null").c_str());
  };
  for (const auto& c : setup)
    if (std::system((c + " 2>/dev/null").c_str()) != 0) {
      teardown();
      GTEST_SKIP() << "network namespaces cannot be created here ('" << c
                   << "' failed: needs root and iproute2)";
    }
  // Unsharded, then with sharded gradients and fused updates (reduce and broadcast
  // across the link).
  for (const std::string env : {"", "MONET_DDP_SHARD=gradients MONET_DDP_FUSED=1 "}) {
    std::string output;
    const bool ok = run_two_ranks({env + "ip netns exec " + a, env + "ip netns exec " + b},
                                  "10.233.0.1", &output);
    EXPECT_TRUE(ok) << output;
    expect_both_ranks_matched(output);
    if (!env.empty()) {
      EXPECT_NE(output.find("sharded gradients"), std::string::npos) << output;
    }
  }
  teardown();
}

TEST(Executor, ReportsEachParametersGradientOnceWhenComplete) {
  for (const std::string planner : {"storeall", "chen"}) {
    Model model = plain_cnn(4);
    PlannedModel planned(model, quiet(planner));
    std::map<int, at::Tensor> reported;
    impl_of(planned).on_parameter_gradient = [&](int v) {
      EXPECT_EQ(reported.count(v), 0u) << "parameter " << v << " reported twice";
      reported[v] = impl_of(model)->state.tensor(v).grad().clone();
    };
    const at::Tensor x = at::randn({4, 3, 32, 32}, at::kDouble);
    const at::Tensor y = at::randint(0, 4, {4}, at::kLong);
    planned.step(x, y);
    const std::vector<int> params = impl_of(model)->graph.parameters();
    ASSERT_EQ(reported.size(), params.size()) << planner;
    for (int v : params) EXPECT_TRUE(reported.at(v).equal(impl_of(model)->state.tensor(v).grad()));
    EXPECT_EQ(impl_of(planned).executor->gradient_order().size(), params.size());
  }
}

// Two ranks on halves of each batch against one process on the whole batch, SGD with
// momentum, for both gradient synchronisations and small buckets (many of them, two in
// flight).
TEST(DataParallel, TwoRanksEqualOneProcessOnTheWholeBatch) {
  const int steps = 3;
  auto sgd = [](const std::vector<torch::Tensor>& p) {
    return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1).momentum(0.9));
  };
  const WholeBatchRun whole = train_on_whole_batches(steps, sgd);
  const std::vector<at::Tensor>&xs = whole.xs, &ys = whole.ys;
  for (const GradientSync sync : {GradientSync::kDuringBackward, GradientSync::kAfterBackward}) {
    std::vector<std::vector<torch::Tensor>> trained(2);
    run_ranks(2, [&](int rank, ProcessGroup pg) {
      DataParallelOptions o;
      o.bucket_bytes = 1024;
      o.sync = sync;
      Model model = plain_cnn(2);
      if (rank == 1) {  // rank 0's weights must replace these
        torch::NoGradGuard no_grad;
        for (auto& p : model.parameters()) p.mul_(2);
      }
      DataParallel ddp(model, quiet("chen"), pg, o);
      EXPECT_EQ(ddp.world_size(), 2);
      auto opt = sgd(ddp.model().parameters());
      for (int s = 0; s < steps; ++s) {
        zero_grad(ddp.model().parameters());
        ddp.step(xs[s].narrow(0, 2 * rank, 2), ys[s].narrow(0, 2 * rank, 2));
        opt->step();
      }
      ddp.barrier();
      for (const auto& p : ddp.model().parameters()) trained[rank].push_back(p.detach().clone());
    });
    const double error = max_relative_error(trained[0], whole.trained);
    std::printf("%s: largest relative parameter error against one process %.3g\n",
                sync == GradientSync::kDuringBackward ? "during backward" : "after backward",
                error);
    EXPECT_LE(error, 1e-9);
    EXPECT_EQ(max_relative_error(trained[1], trained[0]), 0.0);
  }
}

// Fused updates: two ranks on halves of each batch, tiny buckets (many, two in flight, so
// that averages arrive both before and after the plan is done with a parameter), against
// one process on the whole batch with SGD stepped after the backward.
TEST(DataParallel, FusedUpdatesOnTwoRanksEqualOneProcessOnTheWholeBatch) {
  const int steps = 3;
  auto sgd = [](const std::vector<torch::Tensor>& p) {
    return std::make_unique<torch::optim::SGD>(
        p, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  };
  const WholeBatchRun whole = train_on_whole_batches(steps, sgd);
  const std::vector<at::Tensor>&xs = whole.xs, &ys = whole.ys;
  std::vector<std::vector<torch::Tensor>> trained(2);
  run_ranks(2, [&](int rank, ProcessGroup pg) {
    DataParallelOptions o;
    o.bucket_bytes = 256;
    PlanOptions po = quiet("chen");
    po.optimizer_update = OptimizerUpdate::kFused;
    DataParallel ddp(plain_cnn(2), po, pg, o);
    auto opt = sgd(ddp.model().parameters());
    EXPECT_THROW(ddp.set_gradient_sync(GradientSync::kAfterBackward), std::logic_error);
    ddp.use_optimizer(*opt);
    for (int s = 0; s < steps; ++s) {
      zero_grad(ddp.model().parameters());
      ddp.step(xs[s].narrow(0, 2 * rank, 2), ys[s].narrow(0, 2 * rank, 2));
      for (const auto& p : ddp.model().parameters()) EXPECT_FALSE(p.grad().defined());
    }
    ddp.barrier();
    for (const auto& p : ddp.model().parameters()) trained[rank].push_back(p.detach().clone());
  });
  const double error = max_relative_error(trained[0], whole.trained);
  std::printf("fused updates: largest relative parameter error against one process %.3g\n", error);
  EXPECT_LE(error, 1e-9);
  EXPECT_EQ(max_relative_error(trained[1], trained[0]), 0.0);
}

// The step split for a loss of the caller's own (DataParallel::forward, which Python's
// monet.data_parallel runs): the output's backward averages the gradients and, fused,
// makes the updates, as step() does; against one process on the whole batch.
TEST(DataParallel, ForwardWithTheCallersLossEqualsOneProcessOnTheWholeBatch) {
  const int steps = 3;
  auto sgd = [](const std::vector<torch::Tensor>& p) {
    return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1).momentum(0.9));
  };
  const WholeBatchRun whole = train_on_whole_batches(steps, sgd);
  const std::vector<at::Tensor>&xs = whole.xs, &ys = whole.ys;
  for (const OptimizerUpdate update : {OptimizerUpdate::kAfterBackward, OptimizerUpdate::kFused}) {
    std::vector<std::vector<torch::Tensor>> trained(2);
    run_ranks(2, [&](int rank, ProcessGroup pg) {
      DataParallelOptions o;
      o.bucket_bytes = 256;
      PlanOptions po = quiet("chen");
      po.optimizer_update = update;
      DataParallel ddp(plain_cnn(2), po, pg, o);
      auto opt = sgd(ddp.model().parameters());
      if (update == OptimizerUpdate::kFused) ddp.use_optimizer(*opt);
      for (int s = 0; s < steps; ++s) {
        zero_grad(ddp.model().parameters());
        const torch::Tensor out = ddp.forward({xs[s].narrow(0, 2 * rank, 2)});
        torch::nn::functional::cross_entropy(out, ys[s].narrow(0, 2 * rank, 2)).backward();
        if (update == OptimizerUpdate::kAfterBackward) opt->step();
      }
      ddp.barrier();
      for (const auto& p : ddp.model().parameters()) trained[rank].push_back(p.detach().clone());
    });
    const double error = max_relative_error(trained[0], whole.trained);
    std::printf(
        "%s, the caller's loss: largest relative parameter error against one process "
        "%.3g\n",
        optimizer_update_name(update), error);
    EXPECT_LE(error, 1e-9);
    EXPECT_EQ(max_relative_error(trained[1], trained[0]), 0.0);
  }
}

// The output of forward() outlives its DataParallel: its backward is refused in one line
// instead of reaching the destroyed buckets.
TEST(DataParallel, BackwardAfterItsDataParallelIsDestroyedIsRefused) {
  run_ranks(1, [&](int, ProcessGroup pg) {
    torch::Tensor out;
    {
      DataParallel ddp(plain_cnn(2), quiet("storeall"), pg);
      out = ddp.forward({torch::randn({2, 3, 32, 32}, torch::kDouble)});
    }
    try {
      out.sum().backward();
      ADD_FAILURE() << "expected the backward to be refused";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("after its DataParallel was destroyed"),
                std::string::npos)
          << e.what();
    }
  });
}

TEST(DataParallel, RankZerosPlanningErrorReachesEveryRank) {
  std::vector<std::string> messages(2);
  EXPECT_NO_THROW(run_ranks(2, [&](int rank, ProcessGroup pg) {
    try {
      DataParallel ddp(plain_cnn(2), quiet("monet", "1000"), pg);
      ADD_FAILURE() << "a budget of 1000 bytes was accepted";
    } catch (const BudgetError& e) {
      messages[rank] = e.what();
    }
  }));
  EXPECT_NE(messages[0].find("does not hold the model"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("rank 0 could not plan"), std::string::npos) << messages[1];
}

// PyTorch DDP (gradient_as_bucket_view=False) holds one flat copy of every gradient in
// its buckets, alive through the whole step: its per-rank step peak is autograd's plus the
// parameters' bytes (tests/python/test_data_parallel.py measures PyTorch's own DDP).
TEST(Budget, DdpStepPeakIsAutogradsPlusOneCopyOfTheGradients) {
  MemoryTracker::install();
  const Model model = plain_cnn(2);
  int64_t parameter_bytes = 0;
  for (const auto& p : model.parameters()) parameter_bytes += p.numel() * 4;  // float32
  for (const OptimizerKind k : {OptimizerKind::kSGDMomentum, OptimizerKind::kAdam}) {
    const int64_t autograd = measure_autograd_step_peak(model, k, 0, "");
    const int64_t ddp = measure_ddp_step_peak(model, k, 0, "");
    EXPECT_EQ(ddp - autograd, parameter_bytes) << optimizer_kind_name(k);
  }
}

// Under DataParallel a ratio budget is of DDP's per-rank step: "1.0x" is DDP's peak in
// bytes on every rank, and the plan holds the bucket buffers and the rest within it.
// (Measured here first, into the cache rank 0 then reads: the rank threads share one
// memory tracker.)
TEST(DataParallel, ARatioBudgetIsOfDdpsPerRankStep) {
  const std::string cache =
      (std::filesystem::temp_directory_path() / ("monet-ddp-budget-" + std::to_string(getpid())))
          .string();
  std::vector<Model> models = {plain_cnn(2), plain_cnn(2)};
  const int64_t ddp = measure_ddp_step_peak(models[0], OptimizerKind::kSGDMomentum, 0, cache);
  std::vector<PlanReport> reports(2);
  run_ranks(2, [&](int rank, ProcessGroup pg) {
    PlanOptions o = quiet("monet", "1.0x");
    o.use_cache = true;
    o.cache_dir = cache;
    DataParallel parallel(std::move(models[rank]), o, pg);
    reports[rank] = parallel.planned().report();
  });
  std::filesystem::remove_all(cache);
  for (const PlanReport& r : reports) {
    EXPECT_EQ(r.budget_baseline, BudgetBaseline::kDataParallelStep);
    ASSERT_TRUE(r.budget_bytes && r.baseline_peak_bytes);
    EXPECT_EQ(*r.budget_bytes, ddp);
    EXPECT_EQ(*r.baseline_peak_bytes, ddp);
  }
  EXPECT_STREQ(budget_baseline_name(reports[0].budget_baseline), "DDP's per-rank step");
}

TEST(GradientBuckets, GroupsParametersInOrderUpToTheBucketSize) {
  run_ranks(1, [](int, ProcessGroup pg) {
    std::vector<at::Tensor> params = {at::zeros({100}), at::zeros({100}), at::zeros({300}),
                                      at::zeros({10})};
    BucketOptions o;
    o.bucket_bytes = 800;  // two of the small ones; the large one alone
    GradientBuckets buckets(params, pg.group, o);
    EXPECT_EQ(buckets.bucket_count(), 3u);
    EXPECT_EQ(buckets.buffer_bytes(), 2 * 1200);
    EXPECT_LE(buckets.buffer_bytes(), GradientBuckets::buffer_bytes(params, o));
    // All of them in one bucket: one buffer, as the estimate says (not for two owners,
    // whose runs are two buckets).
    BucketOptions whole = o;
    whole.bucket_bytes = 4096;
    GradientBuckets single(params, pg.group, whole);
    EXPECT_EQ(single.bucket_count(), 1u);
    EXPECT_EQ(GradientBuckets::buffer_bytes(params, whole), single.buffer_bytes());
    EXPECT_EQ(GradientBuckets::buffer_bytes(params, whole, 2), 2 * single.buffer_bytes());
    for (auto& p : params) p.mutable_grad() = at::ones_like(p);
    buckets.begin_step();
    for (size_t i = 0; i < params.size(); ++i) buckets.gradient_ready(i);
    buckets.finish_step();
    for (auto& p : params) EXPECT_TRUE(p.grad().equal(at::ones_like(p)));  // one rank: unchanged
  });
}

}  // namespace
}  // namespace monet

namespace monet {
namespace {

// Sets environment variables for one scope.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::map<std::string, std::string> vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_[k] = old ? std::optional<std::string>(old) : std::nullopt;
      setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved_) v ? setenv(k.c_str(), v->c_str(), 1) : unsetenv(k.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(Rendezvous, ReadsTorchrunsVariablesAndNamesBadOnes) {
  {
    ScopedEnv env({{"MASTER_ADDR", "10.0.0.7"},
                   {"MASTER_PORT", "29611"},
                   {"WORLD_SIZE", "4"},
                   {"RANK", "3"},
                   {"LOCAL_RANK", "1"}});
    const Rendezvous r = Rendezvous::from_environment();
    EXPECT_EQ(r.master_addr, "10.0.0.7");
    EXPECT_EQ(r.master_port, 29611);
    EXPECT_EQ(r.world_size, 4);
    EXPECT_EQ(r.rank, 3);
    EXPECT_EQ(r.local_rank, 1);
  }
  auto message = [](std::map<std::string, std::string> vars) {
    ScopedEnv env(std::move(vars));
    try {
      Rendezvous::from_environment();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({{"WORLD_SIZE", "2"}, {"RANK", "2"}}).find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(message({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "http"}})
                .find("MASTER_PORT='http'"),
            std::string::npos);
  EXPECT_NE(message({{"WORLD_SIZE", "two"}, {"RANK", "0"}}).find("WORLD_SIZE='two'"),
            std::string::npos);
}

TEST(ProcessGroup, ARankWithoutRankZeroStopsAfterItsTimeoutNamingTheStore) {
  Rendezvous r;
  r.world_size = 2;
  r.rank = 1;
  r.master_port = free_port();  // nobody serves it
  const auto start = std::chrono::steady_clock::now();
  try {
    ProcessGroup::gloo(r, 2);
    ADD_FAILURE() << "a process group formed without rank 0";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(
        std::string(e.what()).find("rank 1: cannot reach rank 0's rendezvous store at 127.0.0.1:"),
        std::string::npos)
        << e.what();
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 30.0);
}

}  // namespace
}  // namespace monet
