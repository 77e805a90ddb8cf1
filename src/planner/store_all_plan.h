// The store-all plan: what LibTorch autograd does. Every node runs forward once with its
// default implementation, everything the backward reads is kept, and the backward runs
// in reverse order with default implementations.
#pragma once

#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

Plan store_all_plan(const Graph& graph);

/// The backward instructions of `node` (every part, default implementations), in order.
std::vector<Instruction> default_backward(const Graph& graph, const Node& node);

}  // namespace monet
