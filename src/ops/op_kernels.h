// Running an operator implementation on real tensors: forward (output and, for some
// implementations, an intermediate tensor) and backward (gradients of the node's inputs),
// without autograd. The executor calls these; tests check each against autograd.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "ops/op_impl.h"

namespace monet {

/// Per-node state of one iteration, not a planned tensor: a batch or layer norm's
/// statistics of the first forward (recomputation reuses them and leaves running
/// statistics alone), released after the node's last backward part
/// (Liveness::state_free_after), and the seed of the node's random numbers (dropout), so
/// recomputation repeats them.
struct NodeState {
  at::Tensor save_mean;    // batch norm
  at::Tensor save_invstd;  // batch norm
  /// The next value of the buffer a generic call writes (AtenCall::writes_buffer), from
  /// the first forward: the executor writes it into the buffer when the iteration ends.
  at::Tensor buffer_write;
  uint64_t seed = 0;
  bool computed = false;  // the node's first forward of this iteration has run
};

/// Dropout's scaled noise, Bernoulli(1 - p) / (1 - p), from a generator seeded with
/// `seed`: the same seed gives the same noise (recomputation, reference, executor).
at::Tensor dropout_noise(at::IntArrayRef shape, double p, uint64_t seed);
/// `kept` (float32, 1 where an element is kept, else 0) made dropout's noise in place:
/// kept / (1 - p), as dropout_noise computes it.
at::Tensor dropout_scale(at::Tensor kept, double p);

/// Seed of `node`'s random numbers in the iteration seeded by `iteration_seed`.
uint64_t node_seed(uint64_t iteration_seed, int node_id);
/// The same for `n`: its id's, or the stream it shares with the other results of its
/// ATen call (AtenCall::random_stream).
uint64_t node_seed(uint64_t iteration_seed, const Node& n);

struct ForwardOutput {
  at::Tensor output;
  at::Tensor intermediate;  // defined iff the implementation emits one
};

/// Forward of `node` with `impl`. `inputs` are ordered as node.inputs. `training`
/// selects batch statistics and active dropout.
ForwardOutput run_forward(const Graph& graph, const Node& node, const ForwardImplInfo& impl,
                          const std::vector<at::Tensor>& inputs, NodeState& state, bool training);

struct BackwardArgs {
  at::Tensor grad_output;
  /// Ordered as node.inputs. Parameters and buffers are always defined; activations
  /// only where the implementation reads them.
  std::vector<at::Tensor> inputs;
  at::Tensor output;        // when the implementation reads it
  at::Tensor intermediate;  // when the implementation reads it
  /// Which inputs need a gradient (false for data, targets, buffers, and for inputs
  /// that do not depend on parameters).
  std::vector<bool> needs_grad;
};

/// Backward of one part of `node` with `impl`: gradients for node.inputs (undefined
/// where not needed or not produced by this part).
std::vector<at::Tensor> run_backward(const Graph& graph, const Node& node,
                                     const BackwardImplInfo& impl, const BackwardArgs& args,
                                     NodeState& state);

namespace kernels {
/// Shape [1, C, 1, ...] for broadcasting a per-channel vector against x [N, C, ...].
std::vector<int64_t> channel_shape(const at::Tensor& x);
/// ShuffleNet's channel shuffle of x [N, C, ...] in `groups` groups: channel g * (C /
/// groups) + i moves to i * groups + g. The inverse is the shuffle in C / groups groups.
/// Differentiable ATen calls (view, transpose, contiguous); returns a new tensor.
at::Tensor channel_shuffle(const at::Tensor& x, int64_t groups);
// One family of operators per file.
ForwardOutput conv_forward(const Node& n, const std::string& impl,
                           const std::vector<at::Tensor>& in);
std::vector<at::Tensor> conv_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& a);
/// Whether ATen's transposed convolution (the "transposed" input gradient), or THNN's
/// slow_conv_transpose2d (`thnn`: the "slow_transpose" one), runs on tensors of `dtype` with
/// `spatial_dims` spatial dimensions (PyTorch 1.13's CPU kernels fail on bfloat16): tried
/// once per kernel, type and dimension count on a tiny call.
bool transposed_convolution_takes(at::ScalarType dtype, size_t spatial_dims, bool thnn);
ForwardOutput batch_norm_forward(const Node& n, const std::vector<at::Tensor>& in, NodeState& state,
                                 bool training);
std::vector<at::Tensor> batch_norm_backward(const Node& n, const BackwardImplInfo& impl,
                                            const BackwardArgs& a, NodeState& state);
ForwardOutput activation_forward(const Node& n, const ForwardImplInfo& impl,
                                 const std::vector<at::Tensor>& in);
std::vector<at::Tensor> activation_backward(const Graph& g, const Node& n,
                                            const BackwardImplInfo& impl, const BackwardArgs& a);
/// Hardswish, hardsigmoid, SiLU, sigmoid: output of the default forward.
at::Tensor smooth_activation_forward(const Node& n, const at::Tensor& x);
/// Their backward from the input, or (sigmoid, hardsigmoid) from the output.
std::vector<at::Tensor> smooth_activation_backward(const Node& n, const BackwardImplInfo& impl,
                                                   const BackwardArgs& a);
ForwardOutput dropout_forward(const Node& n, const ForwardImplInfo& impl, const at::Tensor& x,
                              const NodeState& state, bool training);
std::vector<at::Tensor> dropout_backward(const Node& n, const BackwardImplInfo& impl,
                                         const BackwardArgs& a, const NodeState& state);
ForwardOutput pool_forward(const Node& n, const std::string& impl,
                           const std::vector<at::Tensor>& in);
std::vector<at::Tensor> pool_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& a);
/// `t` itself, or a copy when it shares storage with any of `others` (a result that is a
/// view of an input, a gradient that is a view of the output gradient): the tensors the
/// executor keeps own their storage.
at::Tensor own_storage(at::Tensor t, const std::vector<at::Tensor>& others);
/// An input gradient a generic node's backward returns: owning its storage
/// (own_storage) and contiguous, as the executor hands gradients on and the profiler
/// measures the producers' backward on (einsum's gradient of a permuted operand is a
/// strided view of its batched product; the copy is this backward's workspace).
at::Tensor owned_gradient(const at::Tensor& t, const std::vector<at::Tensor>& others);
/// A generic ATen operator (OpKind::kAten): the dispatcher's call, copied when the
/// result is a view of an input (the memory model gives every output its own storage).
/// The "mask" forward also packs the input's sign (aten_impls.h); "autograd" keeps the
/// operator's autograd node (autograd_node.h).
ForwardOutput aten_forward(const Graph& g, const Node& n, const ForwardImplInfo& impl,
                           const std::vector<at::Tensor>& in, NodeState& state);
/// Its backward: "rerun" re-runs the call under autograd on the inputs it reads
/// (zero_shape_stand_in for the others) and returns autograd's gradients, copied where
/// they are views; the specialised implementations use ATen's derivatives.
std::vector<at::Tensor> aten_backward(const Graph& g, const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& a, const NodeState& state);
/// Attention (attention_kernels.cpp): "materialised" keeps the probabilities, "chunked"
/// and "lse" run the query rows in blocks of AttentionSpec::block_rows (lse also keeps
/// each row's log-sum-exp); the backwards read the probabilities or recompute them block
/// by block. Dropout noise is drawn per query row (seeded by the node's seed and the row),
/// so every implementation and the reference draw the same noise.
ForwardOutput attention_forward(const Node& n, const ForwardImplInfo& impl,
                                const std::vector<at::Tensor>& in, const NodeState& state,
                                bool training);
std::vector<at::Tensor> attention_backward(const Node& n, const BackwardImplInfo& impl,
                                           const BackwardArgs& a, const NodeState& state);
/// The differentiable reference: the unfused computation on whole rows.
at::Tensor attention_reference(const Node& n, const std::vector<at::Tensor>& in, bool training,
                               uint64_t seed);
/// Layer and group norm (norm_kernels.cpp): statistics kept in `state` by the first
/// forward; backward from the input or the output.
ForwardOutput norm_forward(const Node& n, const std::vector<at::Tensor>& in, NodeState& state);
std::vector<at::Tensor> norm_backward(const Node& n, const BackwardImplInfo& impl,
                                      const BackwardArgs& a, const NodeState& state);
}  // namespace kernels

}  // namespace monet
