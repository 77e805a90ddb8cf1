// Helpers of the data-parallel tests: ranks as threads over a c10d::HashStore, the plain
// CNN in float64, and one process's training on the whole batch that two ranks on its
// halves must equal.
#pragma once

#include <gtest/gtest.h>

#include <monet/distributed.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <functional>
#include <memory>
#include <thread>

#include "api/model_impl.h"
#include "training_equivalence.h"

namespace monet {
namespace testing_dp {

inline const std::string kDir = MONET_TRAINING_FIXTURE_DIR;

// The plain CNN in float64.
inline Model plain_cnn(int64_t batch) {
  ModelSpec s;
  s.model = kDir + "/cnn_plain.pt";
  s.input_shape = {batch, 3, 32, 32};
  Model m = Model::load(s);
  testing::convert_model(m, at::kDouble);
  return m;
}

inline PlanOptions quiet(const std::string& planner, const std::string& budget = "") {
  PlanOptions o;
  o.planner = planner;
  o.budget = budget;
  o.use_cache = false;
  o.progress = false;
  o.planning_limit = PlanningLimit::kWork;
  return o;
}

// Runs fn(rank) on `world` threads, each with its rank's Gloo group; rethrows the first
// exception.
inline void run_ranks(int world, const std::function<void(int, ProcessGroup)>& fn) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(60));
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        ProcessGroup pg;
        pg.store = store;
        pg.group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, r, world, options);
        fn(r, pg);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

inline double max_relative_error(const std::vector<torch::Tensor>& a,
                                 const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(b[i].abs().max().item<double>(), 1e-30);
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

using OptimizerFactory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<torch::Tensor>&)>;

// Batches of 4 for `steps` steps, and the parameters one process trains on them (the
// store-all plan, `make`'s optimizer stepped after the backward): what two ranks on
// halves of each batch must end with.
struct WholeBatchRun {
  std::vector<at::Tensor> xs, ys;
  std::vector<torch::Tensor> trained;
};
inline WholeBatchRun train_on_whole_batches(int steps, const OptimizerFactory& make) {
  WholeBatchRun run;
  for (int s = 0; s < steps; ++s) {
    run.xs.push_back(at::randn({4, 3, 32, 32}, at::kDouble));
    run.ys.push_back(at::randint(0, 4, {4}, at::kLong));
  }
  Model whole = plain_cnn(4);
  PlannedModel one(whole, quiet("storeall"));
  auto opt = make(whole.parameters());
  for (int s = 0; s < steps; ++s) {
    zero_grad(whole.parameters());
    one.step(run.xs[s], run.ys[s]);
    opt->step();
  }
  for (const auto& p : whole.parameters()) run.trained.push_back(p.detach());
  return run;
}

}  // namespace testing_dp
}  // namespace monet
