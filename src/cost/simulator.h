// Simulator: replays a Plan with tensor sizes and profiled costs, without tensors, and
// predicts what the executor will measure — the memory after every instruction, the
// peak (including each call's workspace) and the total time. It interprets the program
// exactly as the executor does: the same liveness, the same in-place and view aliasing,
// the same gradient accumulation (in place when the slot is exclusively held), and
// parameter gradients freed at their fused update (UpdateMode::kFused). The optimizer's
// state and update temporaries are not in the replay: callers reserve them beside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

struct SimulatedStep {
  int64_t peak_bytes = 0;     // highest bytes during the instruction (workspace included)
  int64_t current_bytes = 0;  // bytes allocated after it (and after the frees it triggers)
  /// Of those, gradient storages (activation and parameter gradients): alive when the
  /// instruction starts, and the most alive at once during it (results, accumulations).
  int64_t gradient_bytes_before = 0;
  int64_t gradient_peak_bytes = 0;
};

struct SimulationResult {
  /// Parameters, buffers, inputs and targets: live before the iteration starts (bytes).
  int64_t start_bytes = 0;
  /// Predicted absolute peak of the iteration (bytes), start_bytes included.
  int64_t peak_bytes = 0;
  /// Sum of the profiled seconds of every forward and backward instruction.
  double seconds = 0;
  /// Same seconds split: forward pass, recomputation, backward.
  double forward_seconds = 0, recompute_seconds = 0, backward_seconds = 0;
  std::vector<SimulatedStep> steps;  // one per instruction
  int64_t peak_above_start() const { return peak_bytes - start_bytes; }
  /// Bytes the instructions' peaks exceed `budget_bytes` by, summed over the instructions:
  /// how far a plan is from a budget when several instructions reach its peak.
  double bytes_over(int64_t budget_bytes) const;
};

/// A plan with its simulator replay.
struct SimulatedPlan {
  Plan plan;
  SimulationResult simulated;
};

/// Bytes live before an iteration: parameters, buffers, inputs and targets, and the
/// graph's constants (allocated when it was imported, under the memory tracker).
int64_t iteration_start_bytes(const Graph& graph);

/// Replays `plan` (validated first; throws PlanError like the executor would) with
/// `costs` (throws CostError when an implementation it uses was not profiled).
SimulationResult simulate(const Graph& graph, const Plan& plan, const CostModel& costs);

}  // namespace monet
