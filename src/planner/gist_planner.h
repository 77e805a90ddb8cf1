// The Gist baseline (Jain et al., ISCA 2018) on our executor: no recomputation; every
// activation the backward pass needs is kept, in Gist's lossless encodings where our
// operator library has them:
//  - Binarize (ReLU followed only by max pooling): the ReLU keeps a 1-bit sign mask and
//    the pooling an 8-bit argmax, so the ReLU output is freed after the pooling reads it;
//  - in-place ReLU wherever its input has no other reader (backward from the output).
// Sparse storage of ReLU outputs read by convolutions (SSDC) and delayed precision
// reduction (fp16 storage, lossy) are not implemented.
#pragma once

#include "graph/graph.h"
#include "plan/plan.h"
#include "planner/schedule_builder.h"

namespace monet {

/// Gist's implementation choices over `graph` (nothing dropped).
ScheduleChoices gist_choices(const Graph& graph);

/// The store-all plan with gist_choices, named "gist".
Plan gist_plan(const Graph& graph);

}  // namespace monet
