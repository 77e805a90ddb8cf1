// The implementations of generic ATen operators (OpKind::kAten, graph/aten_call.h): for
// every operator, the dispatcher's call forward and a backward that re-runs the call under
// autograd ("rerun"); and where a memory trade-off exists, specialised ones chosen by the
// operator's name, which the planner chooses between like any other:
//  - tanh: backward from the output (what PyTorch keeps);
//  - ELU (alpha >= 0): backward from the input (PyTorch's) or from the output;
//  - leaky ReLU: backward from the input (PyTorch's), from the output (slope >= 0), or
//    from a 1-bit sign mask a "mask" forward leaves (the derivative is 1 or the slope);
//  - GELU: backward from the input with ATen's derivative (no re-run); where lossy
//    implementations are offered, also from a 4-bit code of the input (few_bit_gelu.h);
//  - cross-entropy with class indices, mean reduction, no class weights or smoothing:
//    backward as (softmax(logits) - one-hot) x grad / count in one tensor of the logits'
//    size (ATen's derivative makes the log-probabilities' gradient first: two more);
//  - layer norm and group norm: the first forward keeps the statistics for the iteration
//    (recomputations reuse them, as batch norm's do); backward from the input (ATen's
//    native backward) or from the output (x_hat = (y - bias) / weight: it needs a weight
//    with no zero).
// Operators whose derivative reads no activation (upsampling, padding, permutes) need no
// specialisation: their "rerun" backward reads stand-ins only.
// Every other operator whose derivative keeps no output (and holds its inputs through
// the leaves it ran on alone) also has the autograd node's pair (autograd_node.h): an
// "autograd" forward that runs under autograd and keeps the graph it records (what it
// holds of its own is the intermediate, AtenCall::autograd_saved_bytes), and an
// "autograd" backward that runs it, as PyTorch's backward does: no re-run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op_impl.h"

namespace monet {

std::vector<ForwardImplInfo> aten_forward_impls(const Graph& graph, const Node& node);
/// None where the result is an integer or boolean tensor (it has no gradient).
std::vector<BackwardImplInfo> aten_backward_impls(const Graph& graph, const Node& node);
/// Bytes of the intermediate `forward_impl` leaves (the leaky ReLU's packed sign mask,
/// what an autograd node holds of its own).
int64_t aten_intermediate_bytes(const Graph& graph, const Node& node,
                                const std::string& forward_impl);

/// Bytes of the per-iteration state the first forward keeps (norms' statistics, the next
/// value of a buffer the call writes), else 0.
int64_t aten_state_bytes(const Graph& graph, const Node& node);
/// Layer norm or group norm (the implementations of norm_kernels.cpp).
bool is_aten_norm(const Node& node);
/// matmul or bmm of two tensors of one rank (at least 2) and the same batch dimensions:
/// its backward is two matmuls of the inputs and the output's gradient.
bool is_plain_batched_matmul(const Graph& graph, const Node& node);
/// aten::cross_entropy_loss of logits [N, C, ...] and int64 class indices [N, ...], mean
/// reduction, no class weights, no label smoothing (any ignore_index).
bool is_plain_cross_entropy(const Graph& graph, const Node& node);
/// softmax without a dtype conversion: its backward needs only the output.
bool is_plain_softmax(const Node& node);
/// An operator with the autograd node's forward and backward ("autograd"): a generic
/// one without a specialised backward, no view, whose derivative keeps no output and
/// whose autograd graph holds its inputs by leaf alone.
bool offers_autograd_node(const Graph& graph, const Node& node);
/// The inputs the derivative keeps that are activations (the autograd node's backward
/// reads them; the kept graph holds them by shape only).
std::vector<int> autograd_saved_activations(const Graph& graph, const Node& node);
/// GELU whose lossy 4-bit backward ("lossy_4bit", ops/few_bit_gelu.h) is offered.
bool offers_lossy_gelu(const Node& node);

/// A scalar argument of the call (leaky ReLU's slope, ELU's alpha), by schema position.
double aten_scalar_argument(const Node& node, size_t position);

}  // namespace monet
