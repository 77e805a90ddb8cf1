// The autograd node's implementations of a generic ATen operator ("autograd",
// aten_impls.h): the forward runs the call under autograd on leaves of its inputs and
// keeps the autograd graph it records (the output's node, and for composite operators
// the nodes behind it); the backward runs that graph with the autograd engine, as
// PyTorch's own backward does, with no re-run of the operator.
//
// What the graph holds: what PyTorch's derivative saves. Of that, the inputs it saved
// are the plan's own activations, whose memory the plan frees and recomputes as it
// chooses: the graph keeps them by shape only between the forward and the backward (the
// leaves' storage is released after the forward) and the backward points the leaves at
// the live inputs again (BackwardImplInfo::reads_inputs lists them). Offered only where
// probing the call showed that the graph holds its inputs through the leaves alone
// (AtenCall::autograd_keeps_inputs_by_leaf). What it holds of its own (max's indices, a
// mask) is the intermediate, AtenCall::autograd_saved_bytes bytes.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "graph/graph.h"
#include "ops/op_kernels.h"

namespace monet::kernels {

/// The output, and as the intermediate a tensor of no elements that owns the graph.
/// `seed`: the node's random draws (AtenCall::draws_random), as NodeState::seed.
ForwardOutput autograd_node_forward(const Graph& graph, const Node& node,
                                    const std::vector<at::Tensor>& inputs, uint64_t seed);
/// The gradients of node.inputs (zeros where the node gives none but one is needed).
std::vector<at::Tensor> autograd_node_backward(const Graph& graph, const Node& node,
                                               const BackwardArgs& args);

}  // namespace monet::kernels
