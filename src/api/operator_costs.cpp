// OperatorCosts: a model's profiled costs from a cost file, the cache or the profiler,
// and what they predict for plans.
#include <monet/operator_costs.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "api/atomic_file.h"
#include "api/impl_access.h"
#include "api/model_impl.h"
#include "api/operator_costs_impl.h"
#include "api/plan_file_impl.h"
#include "base/memory_tracker.h"
#include "base/progress.h"
#include "cost/profiler.h"
#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"

namespace monet {
namespace {

std::string cache_dir_of(const CostSource& s) {
  if (!s.use_cache) return "";
  return s.cache_dir.empty() ? default_cost_cache_dir() : s.cache_dir;
}

CostModel read_cost_file(const Graph& g, const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("cannot read cost file '" + path + "'");
  try {
    return cost_model_from_json(g, nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("cost file '" + path + "' is not valid JSON: " + e.what());
  } catch (const CostError& e) {
    throw std::invalid_argument("cost file '" + path + "': " + e.what());
  }
}

// Costs of `model` from `source`, not yet filled in.
std::shared_ptr<OperatorCosts::Impl> costs_for(const Model& model, const CostSource& source) {
  auto impl = std::make_shared<OperatorCosts::Impl>();
  impl->graph = impl_of(model)->graph;
  impl->cache_dir = cache_dir_of(source);
  return impl;
}

OperatorCosts costs_of(std::shared_ptr<OperatorCosts::Impl> impl) {
  OperatorCosts c;
  ImplAccess::set(c, std::move(impl));
  return c;
}

}  // namespace

std::optional<OperatorCosts> OperatorCosts::find(const Model& model, const CostSource& source) {
  std::shared_ptr<Impl> impl = costs_for(model, source);
  impl->from_cache = true;
  if (!source.costs_file.empty()) {
    impl->costs = read_cost_file(impl->graph, source.costs_file);
    return costs_of(std::move(impl));
  }
  if (impl->cache_dir.empty() || !read_cached_costs(impl->graph, impl->cache_dir, &impl->costs))
    return std::nullopt;
  if (source.progress)
    report_progress("costs: from the cache (%s)\n",
                    cost_cache_path(impl->graph, impl->cache_dir).c_str());
  return costs_of(std::move(impl));
}

OperatorCosts OperatorCosts::obtain(const Model& model, const CostSource& source) {
  if (std::optional<OperatorCosts> found = find(model, source)) return *found;
  MemoryTracker::install();  // the profiler measures workspace through it
  std::shared_ptr<Impl> impl = costs_for(model, source);
  ProfileOptions po;
  po.repeats = source.repeats;
  po.warmup = source.warmup;
  po.progress = source.progress;
  impl->costs =
      cached_profile_costs(impl->graph, ModelState::initialize(impl->graph, 0),
                           make_batch(impl->graph, 1), po, impl->cache_dir, &impl->from_cache);
  return costs_of(std::move(impl));
}

void OperatorCosts::save(const std::string& path) const {
  try {
    write_text_atomically(path, cost_model_to_json(impl_->graph, impl_->costs).dump(1) + "\n");
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

bool OperatorCosts::from_cache() const { return impl_->from_cache; }

std::string OperatorCosts::cache_file() const {
  return impl_->cache_dir.empty() ? "" : cost_cache_path(impl_->graph, impl_->cache_dir);
}

int OperatorCosts::implementations() const {
  int n = 0;
  for (const auto& nc : impl_->costs.nodes)
    n += static_cast<int>(nc.forward.size() + nc.backward.size());
  return n;
}

int64_t OperatorCosts::largest_workspace_bytes() const {
  int64_t w = 0;
  for (const auto& nc : impl_->costs.nodes) {
    for (const auto& [k, c] : nc.forward) w = std::max(w, c.workspace_bytes);
    for (const auto& [k, c] : nc.backward) w = std::max(w, c.workspace_bytes);
  }
  return w;
}

int OperatorCosts::threads() const { return impl_->costs.threads; }

Prediction OperatorCosts::predict(const PlanFile& plan) const {
  const PlanFile::Impl& p = impl_of(plan);
  if (p.graph.fingerprint() != impl_->graph.fingerprint())
    throw PlanMismatch("plan '" + p.path + "' is for another model or shape than these costs");
  const SimulationResult r = simulate(p.graph, p.plan, impl_->costs);
  return {r.peak_bytes, r.seconds};
}

Prediction OperatorCosts::predict_store_all() const {
  const SimulationResult r = simulate(impl_->graph, store_all_plan(impl_->graph), impl_->costs);
  return {r.peak_bytes, r.seconds};
}

}  // namespace monet
