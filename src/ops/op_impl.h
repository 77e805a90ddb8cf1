// What the planner can choose for each operator: its forward implementations and its
// backward implementations, each declaring what it reads from the forward pass, whether
// it works in place, and whether it leaves an intermediate tensor behind (a packed sign
// mask, a compact argmax, a dropout noise tensor) for an intermediate-activated backward.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace monet {

/// A backward pass may be split so the forward input can be freed between parts:
/// convolution and linear run kWeight (parameter gradients, reads the input) and then
/// kInput (input gradient, reads only parameters). Other operators run one kAll part.
enum class BackwardPart { kAll, kWeight, kInput };
const char* backward_part_name(BackwardPart part);
BackwardPart backward_part_from_name(const std::string& name);

struct ForwardImplInfo {
  std::string name;
  bool inplace = false;             // overwrites input 0 and returns it as the output
  bool emits_intermediate = false;  // also produces the node's intermediate tensor
  /// The output is a view of input 0 (shares its storage, allocates nothing): flatten.
  bool output_aliases_input = false;
  /// A Gist storage encoding of the input kept for the backward pass (convolution
  /// "sparse_input", "half_input"). Only the Gist planners choose these: the sparse
  /// encoding's size depends on the data (intermediate_bytes() is its upper bound, so
  /// no plan built on exact memory may use it) and the half one is lossy.
  bool gist_encoding = false;
  bool size_is_bound = false;  // intermediate_bytes() is an upper bound (data-dependent)
  bool lossy = false;          // the backward pass sees a rounded copy: gradients differ slightly
  std::string description;
};

struct BackwardImplInfo {
  std::string name;
  BackwardPart part = BackwardPart::kAll;
  /// Positions in node.inputs of the activations this backward reads (parameters and
  /// buffers are always available and not listed).
  std::vector<int> reads_inputs;
  bool reads_output = false;
  bool reads_intermediate = false;
  /// When it reads the intermediate: the forward implementations that leave the
  /// intermediate in the format it expects.
  std::vector<std::string> requires_forward;
  /// The input gradients it returns are views of the output gradient (add, cat,
  /// flatten) rather than new tensors.
  bool grads_alias_output = false;
  /// Reads a Gist storage encoding (see ForwardImplInfo::gist_encoding).
  bool gist_encoding = false;
  std::string description;
};

/// Entries of the implementation tables.
ForwardImplInfo make_forward_impl(std::string name, bool inplace, bool intermediate,
                                  std::string description);
BackwardImplInfo make_backward_impl(std::string name, BackwardPart part, std::vector<int> inputs,
                                    bool reads_output, bool reads_intermediate,
                                    std::string description,
                                    std::vector<std::string> requires_forward = {});

/// Forward implementations available for `node`; the first is the default (what
/// PyTorch would run). In-place ones are left out where the input's storage is shared
/// with a view (storage_shared).
std::vector<ForwardImplInfo> forward_impls(const Graph& graph, const Node& node);
/// Whether `value`'s storage is, or may be, another value's too: it is the output of a
/// node that always returns a view of its input (flatten, an ATen view), or such a node's
/// input.
bool storage_shared(const Graph& graph, int value);
/// Backward implementations for `node`, grouped by part; for each part the first is the
/// default. Empty for operators without a backward (none today).
std::vector<BackwardImplInfo> backward_impls(const Graph& graph, const Node& node);

/// The parts a node's backward consists of, in execution order.
std::vector<BackwardPart> backward_parts(const Graph& graph, const Node& node);

/// Whether backward `b` can follow forward `f` of the same node (intermediate format,
/// input not overwritten in place when b reads it).
bool compatible(const ForwardImplInfo& f, const BackwardImplInfo& b);

/// Lookups by name; throw std::invalid_argument naming the node and the unknown name.
ForwardImplInfo find_forward_impl(const std::vector<ForwardImplInfo>& impls, const Node& node,
                                  const std::string& name);
BackwardImplInfo find_backward_impl(const std::vector<BackwardImplInfo>& impls, const Node& node,
                                    BackwardPart part, const std::string& name);

/// The out-of-place counterpart of a forward implementation name ("inplace" ->
/// "default", "inplace_mask" -> "mask"); recomputations use it.
std::string out_of_place(const std::string& forward_impl);

/// Which of node.inputs get a gradient from backward part `part`, given
/// values_needing_grad(graph): parameters in the weight part, activations in the input
/// part, everything needing one in a single-part backward.
std::vector<bool> backward_grad_mask(const Graph& graph, const Node& node, BackwardPart part,
                                     const std::vector<bool>& needs_grad);

/// Bytes of per-iteration state the node's first forward allocates and keeps until the
/// iteration ends (batch norm's saved mean and inverse standard deviation), 0 for most.
int64_t node_state_bytes(const Graph& graph, const Node& node);

/// Bytes a forward call leaves allocated when it returns: its output (unless it is a
/// view or written in place), its intermediate, and on the node's first forward of the
/// iteration its per-iteration state. The executor's allocations, as the profiler checks.
int64_t forward_result_bytes(const Graph& graph, const Node& node, const ForwardImplInfo& impl,
                             bool first_forward);
/// Bytes of the new gradient tensors a backward call returns for the inputs in `mask`
/// (backward_grad_mask); 0 when its gradients are views of the output gradient.
int64_t backward_result_bytes(const Graph& graph, const Node& node, const BackwardImplInfo& impl,
                              const std::vector<bool>& mask);

/// Bytes of the intermediate tensor that `forward_impl` (one with emits_intermediate)
/// leaves for `node`; for the sparse encoding (data-dependent), its upper bound.
int64_t intermediate_bytes(const Graph& graph, const Node& node, const std::string& forward_impl);

/// The shape of dropout node `node`'s noise for an input of `shape`: the input's own, or
/// [N, C, 1, ...] for channel-wise dropout (one draw per sample and channel).
std::vector<int64_t> dropout_noise_shape(const Node& node, std::vector<int64_t> shape);

}  // namespace monet
