// Rematerialization: lowers a plan's simulated peak one tensor at a time. At the
// instruction where the simulated peak is reached, an activation alive across it (written
// before, read after) is freed after its last reader before the peak and recomputed, out
// of place, right before its next reader, as XLA's rematerialization pass does for its
// peak, together with those of its inputs that are no longer alive there (a chain of
// producers, each freed after its last reader); or the instruction itself switches to an
// implementation with less workspace (a recomputed convolution whose fastest algorithm
// unfolds its input). Of these moves, the move that lowers most the bytes over the budget
// summed over the instructions (so that a peak reached at several instructions falls one
// instruction at a time) is made, the one adding the fewest profiled seconds among equals,
// until the peak fits the budget, no move lowers the excess, or the time is up. Every
// candidate is replayed by the simulator. Chain checkpointing's plans keep whole segments
// from a forward run until their backward; this pass takes the tensors of a segment that
// the peak does not need back out of it.
#pragma once

#include <cstdint>

#include "cost/cost_model.h"
#include "cost/simulator.h"
#include "graph/graph.h"
#include "planner/solver/search_clock.h"

namespace monet {

/// The default of RematerializationOptions::recomputed_input_depth: deeper than three lowers
/// the leanest chain schedules further and gives faster plans at tight budgets
/// (docs/PLANNER.md, "Why the defaults").
inline constexpr int kRecomputedInputDepth = 8;

struct RematerializationOptions {
  int64_t budget_bytes = 0;        // simulated peak to reach (bytes)
  double time_limit_seconds = 10;  // wall-clock limit of the whole pass (seconds)
  /// kWork: at most work_moves moves, until the budget is reached or none lowers the peak
  /// (no clock read).
  SearchLimit search_limit = SearchLimit::kWallClock;
  int work_moves = 64;           // moves made under SearchLimit::kWork
  int candidates_per_move = 96;  // tensors tried at each move: the largest alive at the peak
  /// How many producers back a move recomputes the inputs of a tensor's recomputation that
  /// are not alive where it runs (0: only tensors whose inputs are alive there).
  int recomputed_input_depth = kRecomputedInputDepth;
};

/// The plan reached from `start` (its simulated peak within the budget, or as low as the
/// moves got) with its simulation; `start` itself when no move lowers its peak.
SimulatedPlan rematerialize(const Graph& graph, const CostModel& costs, SimulatedPlan start,
                            const RematerializationOptions& options);

}  // namespace monet
