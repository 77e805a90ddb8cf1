// The articulation values of a graph: activations every path from the input to the loss
// passes through (no edge jumps over them). Checkpointing keeps some of them; chain
// checkpointing cuts the graph into segments at them.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace monet {

/// Activations that are articulation points of the graph, in topological order: every
/// path from the input to the loss passes through them.
std::vector<int> articulation_values(const Graph& graph);

}  // namespace monet
