// Chain checkpointing: a memory-first construction of plans for budgets that
// checkpointing at articulation points cannot reach. The graph is cut into a chain of
// segments (chain_layout.h): at its articulation points, and at sub-cuts inside the
// stretches between them, where a segment is processed beside the stretch input (its side
// value, and that value's gradient once the stretch's end was back-propagated). A dynamic
// program over the chain (persistent checkpointing of heterogeneous chains, as in Rotor:
// Beaumont et al., 2019) chooses, for every sub-chain and every memory level, how to
// back-propagate through it at the least recomputation time: run a segment keeping
// everything its backward reads and go on from its output, or sweep forward through several
// segments keeping only the last output as a checkpoint, back-propagate the rest of the
// chain first, and come back. A segment can be recomputed many times (multi-level
// recomputation), so the smallest plans hold one segment's working set and a few
// checkpoints above the parameters and their gradients. The program runs for each layout
// (articulation points alone; with sub-cuts) and each implementation family: every
// operator's memory-lean implementations and its fastest (implementation_choices), out of
// place where they read a cut (a later sweep starts from it again); each schedule is made
// twice, with recomputations as the forward run (in place where it is) and all out of
// place (as the MONeT program expresses them, for warm starts). The program's memory model
// replays each segment's tensors as the simulator holds them (in-place outputs in their
// input's storage, gradients that are views of an output gradient sharing its storage, a
// gradient added in place into the one before it), but it sums per segment and rounds to
// memory levels, so the simulator replays its schedules and decides
// what fits: the leanest, the highest memory level whose schedule fits (by bisection), then
// the levels around it, nearest first, until the time is up. The fastest schedules a little
// above the budget, and the leanest when none fits, are rematerialized towards it
// (rematerialization.h).
#pragma once

#include <cstdint>
#include <vector>

#include "cost/cost_model.h"
#include "cost/simulator.h"
#include "graph/graph.h"
#include "planner/chain/chain_layout.h"
#include "planner/heuristics/rematerialization.h"

namespace monet {

/// What a schedule does with the recomputations nothing reads (a segment is recomputed
/// whole; the backward of a concatenation or a transposed convolution at its end reads no
/// activation).
enum class UnreadRecomputations {
  kDrop,  // without_unread_recomputations (plan/unread_recomputations.h)
  kKeep,  // every node of the segment runs again
};

struct ChainCheckpointingOptions {
  int64_t budget_bytes = 0;  // simulated peak allowed (bytes)
  /// Memory levels (0 to the sum of every segment's kept bytes) the dynamic program
  /// distinguishes: more levels, more distinct schedules to choose from.
  int memory_levels = 1000;
  /// The chain is cut into no more than this many segments (chain_layout.h): the dynamic
  /// program's time grows with the cube of the segment count.
  int max_segments = 64;
  /// The layouts the dynamic program runs over, each in both implementation families.
  /// Articulation values alone keep whole blocks together, which suits budgets with room;
  /// sub-cuts reach smaller peaks. Each layout's schedules are simulated.
  std::vector<ChainCuts> layouts = {ChainCuts::kArticulations, ChainCuts::kSubCuts};
  /// Wall-clock limit (seconds) of the schedules' simulations and the rematerialization.
  double time_limit_seconds = 10;
  /// Wall-clock limit (seconds) of lowering the leanest schedule into the budget when no
  /// schedule fits it, counted from that step's start: a first fit is sought however long
  /// the schedules before it took (on a loaded machine, all of time_limit_seconds).
  double first_fit_time_limit_seconds = 10;
  /// kWork: neither time limit is read; each layout and family simulates the leanest
  /// schedule, the bisection to the fit and at most work_schedules schedules around it,
  /// and rematerialization makes at most RematerializationOptions::work_moves moves.
  SearchLimit search_limit = SearchLimit::kWallClock;
  int work_schedules = 8;  // distinct schedules around the fit, per layout and family (kWork)
  /// Schedules whose simulated peak is above the budget by at most this fraction of it,
  /// and faster than every schedule within it, are rematerialized towards it.
  double rematerialization_reach = 0.25;
  /// Rematerialization stops once this many schedules were lowered into the budget.
  int rematerialized_plans = 3;
  /// RematerializationOptions::recomputed_input_depth of that lowering.
  int recomputed_input_depth = kRecomputedInputDepth;
  UnreadRecomputations unread_recomputations = UnreadRecomputations::kDrop;
};

struct ChainCheckpointingPlans {
  /// Every distinct schedule whose simulated peak fits the budget, fastest first.
  std::vector<SimulatedPlan> within_budget;
  /// The schedule of smallest simulated peak (empty program when the graph has none).
  SimulatedPlan smallest;
  int segments = 0;        // segments of the chain
  int schedules = 0;       // distinct schedules simulated (each in both variants)
  int rematerialized = 0;  // schedules lowered into the budget by rematerialization
  double seconds = 0;      // wall time of the construction
};

/// The chain's schedules over every memory level, simulated against `options.budget_bytes`.
ChainCheckpointingPlans chain_checkpointing_plans(const Graph& graph, const CostModel& costs,
                                                  const ChainCheckpointingOptions& options);

/// The chain's schedule of smallest simulated peak, searched for at most `time_limit_seconds`
/// (seconds, under `search_limit`) with no rematerialization (empty program when the graph has
/// none): where the smallest budgets (minimum_budget, budget_range) start.
SimulatedPlan leanest_chain_schedule(const Graph& graph, const CostModel& costs,
                                     double time_limit_seconds,
                                     SearchLimit search_limit = SearchLimit::kWallClock);

}  // namespace monet
