// Plan generators used as baselines and for testing:
//  - store_all_plan: keep every activation, with what LibTorch autograd runs (or every
//    node's default implementation).
//  - chen_plan: Chen et al.'s sqrt(n) checkpointing: keep the outputs of about sqrt(n)
//    evenly spaced articulation points (values no edge jumps over), drop every other
//    activation after the forward pass, and recompute segments during the backward.
//  - random_plan: a random valid plan (implementations, in-place choices, what to drop)
//    for fuzzing the executor, the validator and the simulator.
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/schedule_builder.h"

namespace monet {

/// Which implementations store_all_plan runs.
enum class StoreAllOperators {
  /// What LibTorch autograd runs: the default implementations, except that a
  /// convolution's input gradient reads the kept input ("aten"), as convolution_backward
  /// does (the default, "aten_shape", runs the same kernel on a stand-in of the input),
  /// a ReLU's backward reads its output, as PyTorch saves it, and a node's input gradient
  /// runs before its weight gradient, in ATen's order.
  kAutograd,
  kDefault,  // every node's default implementation (the space of monet-noop)
};
Plan store_all_plan(const Graph& graph, StoreAllOperators ops = StoreAllOperators::kAutograd);
Plan chen_plan(const Graph& graph);
/// Checkpointing with `segments` + 1 segments and implementation choices `c`: keeps the
/// outputs of `segments` evenly spaced articulation points and drops every other
/// activation after the forward pass (c.drop_after_forward is overwritten). chen_plan is
/// default choices with segments = sqrt(n); `planner` names the plan.
Plan checkpoint_schedule(const Graph& graph, ScheduleChoices c, size_t segments,
                         const std::string& planner);
/// What checkpoint_schedule drops after the forward pass (per value): every activation but
/// the outputs of `segments` evenly spaced articulation points.
std::vector<bool> checkpoint_drops(const Graph& graph, size_t segments);
Plan random_plan(const Graph& graph, uint64_t seed);

}  // namespace monet
