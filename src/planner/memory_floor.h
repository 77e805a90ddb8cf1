// The memory floor of a training iteration: a lower bound on the peak of every plan,
// however much it recomputes. It is what is alive before the iteration (parameters,
// buffers, the batch) plus the largest of: every parameter gradient (all alive when the
// backward pass ends); any forward call's least working set over its implementations
// (activation inputs, output, intermediate, workspace); any backward call's least working
// set (what it reads, the output's gradient, the input gradients, workspace) beside the
// parameter gradients that exist whenever it runs (its node's and those of every node
// downstream; under fused updates its node's only, and no moment has every gradient).
// What a call reads is counted by storage: views of one storage once, at the storage's
// bytes (an expanded view's own bytes can be many times more). Planners report it next
// to the budget, so a user sees how far a budget can go.
#pragma once

#include <cstdint>
#include <string>

#include "cost/cost_model.h"
#include "graph/graph.h"

namespace monet {

/// The floor and what sets it.
struct MemoryFloor {
  int64_t bytes = 0;  // the floor (bytes)
  /// What lies above the iteration's start at the floor: "every parameter gradient", or
  /// the call, "the backward of 'rnn'" (its node's name).
  std::string cause;
};

/// The floor for `graph` with profiled `costs`.
MemoryFloor memory_floor(const Graph& graph, const CostModel& costs);
/// memory_floor(graph, costs).bytes.
int64_t memory_floor_bytes(const Graph& graph, const CostModel& costs);

}  // namespace monet
