// ScheduleBuilder: turns per-node decisions into a Plan. The forward pass runs every
// node once and frees the activations it is told to drop as soon as their last forward
// consumer has run; the backward pass visits nodes in reverse order and, before each
// backward instruction, recomputes whatever it reads that is no longer alive, from the
// nearest tensors that are (recursively). The store-all, Chen and random generators are
// choices of what to drop and which implementations to use.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

struct ScheduleChoices {
  /// Per node: forward implementation of the forward pass. Recomputations use its
  /// out-of-place counterpart ("inplace" -> "default", "inplace_mask" -> "mask").
  std::vector<std::string> forward;
  /// Per node, per backward part (in backward_parts order): implementation.
  std::vector<std::vector<std::string>> backward;
  /// Per value: free the activation right after its last forward consumer.
  std::vector<bool> drop_after_forward;
};

/// Whether node `reader`'s backward implementations in `choices` read value `v` (an input
/// of it, or its output).
bool backward_reads(const Graph& graph, const ScheduleChoices& choices, const Node& reader, int v);

/// Defaults: every node's default implementations, nothing dropped.
ScheduleChoices default_choices(const Graph& graph);

/// The Plan for `choices`; `planner` names it.
Plan build_schedule(const Graph& graph, const ScheduleChoices& choices, const std::string& planner);

}  // namespace monet
