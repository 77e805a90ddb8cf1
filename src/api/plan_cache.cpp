#include "api/plan_cache.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "api/atomic_file.h"
#include "api/planning_limit.h"
#include "base/progress.h"
#include "cost/cost_model.h"

namespace monet {

namespace {

// The end of a cache file's name: the loss's working set and the fused update.
std::string loss_and_update_suffix(const Graph& g, int64_t loss_bytes) {
  return (loss_bytes > 0 ? "-loss" + std::to_string(loss_bytes) : "") +
         (g.update_mode() == UpdateMode::kFused ? "-fused" : "");
}

}  // namespace

std::string plan_cache_path(const std::string& dir, const Graph& g, const std::string& planner,
                            int64_t iteration_budget, int64_t loss_bytes) {
  return dir + "/plans/v" + std::to_string(kPlanCacheVersion) + "-" + g.fingerprint() + "-" +
         implementation_set_key(g) + "-" + planner + "-" +
         (iteration_budget > 0 ? std::to_string(iteration_budget) : "none") +
         loss_and_update_suffix(g, loss_bytes) + ".json";
}

std::string smallest_budget_cache_path(const std::string& dir, const Graph& g,
                                       const PlanOptions& o) {
  char limit[64];
  std::snprintf(limit, sizeof limit, "%s-%gs", planning_limit_name(o.planning_limit),
                o.time_limit_seconds);
  return dir + "/budgets/v" + std::to_string(kPlanCacheVersion) + "-" + g.fingerprint() + "-" +
         implementation_set_key(g) + "-" + o.planner + "-" + limit +
         loss_and_update_suffix(g, o.loss_bytes) + ".json";
}

std::optional<int64_t> read_cached_smallest_budget(const Graph& g, const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    std::ifstream f(path);
    const nlohmann::json j = nlohmann::json::parse(f);
    if (j.at("fingerprint").get<std::string>() != g.fingerprint())
      throw std::invalid_argument("made for another model or shape");
    const int64_t bytes = j.at("smallest_bytes").get<int64_t>();
    if (bytes <= 0) throw std::invalid_argument("smallest_bytes is not positive");
    return bytes;
  } catch (const std::exception& e) {
    report_warning("budget: ignoring the cached smallest budget '%s': %s\n", path.c_str(),
                   e.what());
    return std::nullopt;
  }
}

void write_cached_smallest_budget(const Graph& g, const std::string& path, int64_t bytes) {
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    const nlohmann::json j = {{"fingerprint", g.fingerprint()}, {"smallest_bytes", bytes}};
    write_text_atomically(path, j.dump(1) + "\n");
  } catch (const std::exception& e) {
    report_warning("budget: the smallest budget is not cached: %s\n", e.what());
  }
}

}  // namespace monet
