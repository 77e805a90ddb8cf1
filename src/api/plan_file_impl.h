// PlanFile::Impl: a loaded plan file's graph and plan, shared by the
// API's translation units (plan_file.cpp, measurement.cpp).
#pragma once

#include <monet/plan_file.h>

#include "graph/graph.h"
#include "plan/plan.h"
#include "runtime/model_state.h"

namespace monet {

struct PlanFile::Impl {
  std::string path;
  Graph graph;
  Plan plan;  // its model and config are the file's
};

/// The plan's model's initial weights, loaded afresh: a traced file's own, a zoo model's
/// seeded 0.
ModelState initial_weights(const PlanFile::Impl& plan);

/// `plan`'s instructions, recomputations, explicit frees and lossy forwards, as
/// PlanFile::summary() reports them.
PlanSummary summarize(const Graph& graph, const Plan& plan);

}  // namespace monet
