// without_unread_recomputations(): removes from a Plan the recomputations whose results
// nothing reads. A forward instruction of a node that ran before is a recomputation; when
// neither its output nor its intermediate is read before it is computed again, freed or
// overwritten, it only allocates memory and takes time (a segment recomputed whole where
// its backward reads some of its tensors, e.g. a concatenation whose backward needs only
// its output gradient). Removing it can leave the recomputations of its inputs unread in
// turn; the pass repeats until none is, and drops the explicit frees of what it removed.
#pragma once

#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

/// `plan` without its unread recomputations (the same plan when it has none). A valid plan
/// stays valid: every tensor an instruction reads is made by the same instruction as before.
Plan without_unread_recomputations(const Graph& graph, Plan plan);

}  // namespace monet
