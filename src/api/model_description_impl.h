// The description of a built graph, shared by describe() and PlanFile.
#pragma once

#include <monet/model_description.h>

#include "graph/graph.h"
#include "graph/model_config.h"

namespace monet {

/// `graph`, built for `model` at `config`, as describe() reports it.
ModelDescription describe_graph(const Graph& graph, const std::string& model,
                                const ModelConfig& config);

}  // namespace monet
