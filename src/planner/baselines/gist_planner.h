// The Gist baseline (Jain et al., ISCA 2018) on our executor: no recomputation; every
// activation the backward pass needs is kept, in Gist's encodings:
//  - Binarize (ReLU followed only by max pooling): the ReLU keeps a 1-bit sign mask and
//    the pooling an 8-bit argmax, so the ReLU output is freed after the pooling reads it;
//  - Sparse storage, dense compute (ReLU whose output one convolution reads, besides
//    readers that keep nothing of it: additions, concatenations): the convolution keeps
//    its input as CSR with 8-bit column indices and the ReLU a 1-bit sign mask, so the
//    dense output is freed after the forward pass reads it. The encoding's size depends
//    on the data: the simulator counts its upper bound (every element non-zero) and the
//    executor measures the real one;
//  - in-place ReLU wherever its input has no other reader;
//  - optionally (the "gist-fp16" planner), delayed precision reduction: every other
//    convolution whose input nothing else keeps for the backward pass keeps a float16
//    copy of it instead. Lossy: gradients differ from autograd's by float16 rounding.
// Gist's own runtime also stores other stashed tensors (batch-norm inputs) in float16;
// here only convolution inputs are.
#pragma once

#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/schedule_builder.h"

namespace monet {

struct GistOptions {
  bool delayed_precision_reduction = false;  // float16 copies of convolution inputs (lossy)
};

/// Gist's implementation choices over `graph` (nothing dropped).
ScheduleChoices gist_choices(const Graph& graph, const GistOptions& options = {});

/// The store-all plan with gist_choices, named "gist" ("gist-fp16" with delayed precision
/// reduction).
Plan gist_plan(const Graph& graph, const GistOptions& options = {});

}  // namespace monet
