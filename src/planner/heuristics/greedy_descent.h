// Greedy descent to a budget: a fast heuristic for plans under budgets that store-all
// exceeds, which recomputes the operators that are cheap per byte (normalisations,
// activations, additions) rather than whole segments, convolutions included, as
// checkpointing does. From store-all under given implementation choices, it makes one move
// at a time: drop an activation after the forward pass (recomputed when the backward needs
// it), or switch an operator to its leaner implementations (less workspace, smaller saved
// tensors). Each move is priced by the simulator: profiled seconds it adds per byte it takes
// off the plan's bytes over the budget, summed over instructions (so a move that lowers one
// of several instructions at the peak counts, and one the peak does not feel never does).
// The cheapest move is made, until the plan fits or no move helps. Prices are kept from
// when they were computed and only the cheapest is recomputed before it is taken (lazy
// greedy), so a descent costs a few simulations per move rather than one per candidate.
#pragma once

#include <cstdint>
#include <functional>

#include "cost/cost_model.h"
#include "graph/graph.h"
#include "plan/schedule_builder.h"

namespace monet {

/// Descends from store-all under `start` (its drop_after_forward is ignored), switching
/// operators only to `leaner`'s implementations, towards a simulated peak of `budget_bytes`
/// (bytes). Returns the choices reached: within the budget, or as near as the moves got
/// before none helped or `out_of_time()` said stop. `start` unchanged when store-all fits.
ScheduleChoices greedy_descent(const Graph& graph, const CostModel& costs,
                               const ScheduleChoices& start, const ScheduleChoices& leaner,
                               int64_t budget_bytes, const std::function<bool()>& out_of_time);

}  // namespace monet
