// The Checkmate baseline (Jain et al., MLSys 2020) on our executor: a 0-1 program over the
// topological order that chooses which activations every backward stage keeps (S) and
// recomputes (R), with Checkmate's memory model — operator workspace is not counted and
// every operator runs its default implementation. It is the schedule part of the MONeT
// program (MonetMode::kNoOp) solved over a cost model whose workspace is zero, so the two
// differ exactly in what the paper says they differ in.
//
// Checkmate-D runs that plan as solved (default convolution algorithms); its real peak
// (workspace included) can exceed the budget Checkmate believed it met. Checkmate-O
// post-optimises it: each convolution, in topological order, switches to the fastest
// algorithm whose plan still fits the budget with workspace counted.
#pragma once

#include <cstdint>

#include "cost/cost_model.h"
#include "cost/simulator.h"
#include "plan/plan.h"
#include "planner/heuristics/fastest_convolutions.h"
#include "planner/monet_planner.h"
#include "planner/solver/milp.h"

namespace monet {

struct CheckmateOptions {
  int64_t budget_bytes = 0;    // absolute peak allowed for the iteration (bytes)
  bool post_optimise = false;  // Checkmate-O: the fastest convolution algorithms that fit
  SearchOptions solver;
};

struct CheckmateResult {
  bool found = false;  // Checkmate's program found a plan (within its own memory model)
  Plan plan;
  /// Peak as Checkmate's model sees it (no workspace), and as the simulator predicts the
  /// executor will measure it (workspace included), in bytes.
  int64_t checkmate_peak_bytes = 0;
  SimulationResult predicted;
  MonetResult solve;           // the schedule program's solve
  int algorithm_switches = 0;  // Checkmate-O: convolution instructions given another algorithm
};

/// `costs` with every workspace set to 0: what Checkmate's memory model sees.
CostModel without_workspace(const CostModel& costs);

/// Checkmate-D (or -O with options.post_optimise) for `options.budget_bytes`.
CheckmateResult plan_checkmate(const Graph& graph, const CostModel& costs,
                               const CheckmateOptions& options);

}  // namespace monet
