// Model::Impl: what a monet::Model holds (the graph, its trainable state, where it came
// from), shared by the API's translation units.
#pragma once

#include <optional>

#include <monet/monet.h>

#include "api/impl_access.h"
#include "api/import_options.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/model_config.h"
#include "runtime/model_state.h"

namespace monet {

struct Model::Impl {
  ModelSpec spec;
  Graph graph;
  ModelState state;
  std::vector<int> input_values;  // the graph's kInput values, in forward's order
  int target_value = -1;          // the graph's kTarget value
  int64_t steps = 0;              // training steps taken

  /// The batch for one step, checked against the graph's shapes and dtypes (converted
  /// to the graph's dtype); throws std::invalid_argument naming what is wrong.
  Batch batch(const std::vector<torch::Tensor>& inputs, const torch::Tensor& target) const;
  /// The batch with only the inputs (for forward passes).
  Batch input_batch(const std::vector<torch::Tensor>& inputs) const;
  /// `t` in the parameters' dtype when both are floating point (parameters may have been
  /// converted, e.g. to float64: inputs and real-valued targets follow them).
  at::Tensor follow_parameters(at::Tensor t) const;
};

/// The graph `spec` describes; throws std::invalid_argument (UnsupportedOperator for a
/// traced operator monet cannot import) naming what is wrong.
Graph build_graph(const ModelSpec& spec);
/// The same for a zoo name or traced file at `config` (a plan file's).
Graph build_graph(const std::string& model, const ModelConfig& config);

/// Whether `model` names a TorchScript file (.pt / .pth) rather than a zoo model.
bool is_traced_model(const ModelSpec& spec);
/// The ModelConfig `spec` describes (zoo defaults filled in); throws std::invalid_argument
/// for an unknown zoo model.
ModelConfig model_config(const ModelSpec& spec);

/// The graph's profiled costs as the planner sees them (options.loss_bytes charged to the
/// loss node: with_loss_working_set), read from `cache_dir`'s cost cache or profiled now
/// (and cached); no cache when `cache_dir` is empty.
CostModel model_costs(const Graph& graph, const PlanOptions& options, const std::string& cache_dir);
/// The same from the cost cache alone: false (and `costs` unchanged) when it has none.
bool cached_model_costs(const Graph& graph, const PlanOptions& options,
                        const std::string& cache_dir, CostModel* costs);
/// budget_range() for profiled `costs`, with `optimizer_bytes` (state and update) and
/// options.reserved_bytes beside each iteration peak. The smallest budget is
/// smallest_budget()'s, read from `cache_dir`'s budget cache (plan_cache.h) when it holds
/// one for these options, else searched and cached there (no cache: `cache_dir` empty).
/// `infeasible_bytes`: an iteration budget already proven to have no plan, which spares
/// the search.
BudgetRange budget_range_of(const Graph& graph, const CostModel& costs, const PlanOptions& options,
                            int64_t optimizer_bytes, const std::string& cache_dir,
                            std::optional<int64_t> infeasible_bytes = std::nullopt);
/// The graph's update mode for `update` (the public enum's twin in graph/).
UpdateMode update_mode_of(OptimizerUpdate update);
/// And back.
OptimizerUpdate optimizer_update_of(UpdateMode mode);
/// The cache directory `options` name: "" when caching is off.
std::string cache_dir_of(const PlanOptions& options);

}  // namespace monet
