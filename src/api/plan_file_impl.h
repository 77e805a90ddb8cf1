// PlanFile::Impl: a loaded plan file's graph and plan, shared by the
// API's translation units (plan_file.cpp, measurement.cpp).
#pragma once

#include <monet/plan_file.h>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/model_state.h"

namespace monet {

struct PlanFile::Impl {
  std::string path;
  Graph graph;
  Plan plan;  // its model and config are the file's
};

/// The plan file at `path` as JSON; throws std::invalid_argument naming the file when it
/// cannot be read or is not JSON.
nlohmann::json read_plan_json(const std::string& path);
/// The plan of `json` (read from `path`) for `graph`, validated; throws
/// std::invalid_argument naming the file for any problem.
Plan plan_for_graph(const Graph& graph, const nlohmann::json& json, const std::string& path);
/// The plan file at `path` for a model's `graph` (PlannedModel's plan_file and plan cache):
/// PlanMismatch when the file names another fingerprint, as plan_for_graph otherwise.
Plan read_plan(const Graph& graph, const std::string& path);

/// The plan's model's initial weights, loaded afresh: a traced file's own, a zoo model's
/// seeded 0.
ModelState initial_weights(const PlanFile::Impl& plan);

/// `plan`'s instructions, recomputations, explicit frees and lossy forwards, as
/// PlanFile::summary() reports them.
PlanSummary summarize(const Graph& graph, const Plan& plan);

}  // namespace monet
