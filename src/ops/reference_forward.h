// The reference semantics of every operator: its forward pass written with
// differentiable ATen calls, exactly as PyTorch's nn modules call them. The autograd
// baseline runs it; every scheduled implementation must agree with it.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "graph/graph.h"

namespace monet {

/// Output of `node` for `inputs` (ordered as node.inputs). Honours node.attrs.inplace
/// (the first input is overwritten and returned). `training` selects batch statistics
/// and active dropout; batch norm then updates its running-statistic buffers in place.
/// Dropout draws its noise from node_seed(iteration_seed, node.id), as the executor does,
/// with the computation PyTorch's CPU dropout uses (input * noise, noise saved); so do the
/// generic operators that draw random numbers (AtenCall::draws_random).
at::Tensor reference_forward(const Node& node, const std::vector<at::Tensor>& inputs, bool training,
                             uint64_t iteration_seed = 0);

}  // namespace monet
