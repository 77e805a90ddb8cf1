// The search layer over the 0-1 solver: how a whole program is searched once it is built.
// Branch and cut (solve_milp: CBC over the whole program) or, for programs too large for
// CBC's tree search in the time given, the neighbourhood search (neighbourhood_search.h)
// from a warm start, with the LP relaxation (the certified bound) on a thread of its own
// beside it, as the program's SearchPolicy (search_policy.h) says.
#pragma once

#include "planner/search/search_policy.h"
#include "planner/solver/milp.h"

namespace monet {

/// Searches `milp` under `options` by `policy` (search_policy(), decided when the stage
/// began); a neighbourhood search given no warm start is a branch and cut.
MilpResult search_program(const Milp& milp, const SearchOptions& options,
                          const SearchPolicy& policy);
/// A search that is a stage of its own: search_program(milp, options,
/// search_policy(milp.columns(), options)).
MilpResult search_program(const Milp& milp, const SearchOptions& options);

}  // namespace monet
