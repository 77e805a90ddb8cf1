// AttentionSpec: what an attention node (OpKind::kAttention) computes besides its inputs
// q [..., T, D], k [..., S, D] and v [..., S, Dv]:
//   scores = scale * q kᵀ, masked;  P = softmax(scores) over S;  output = dropout(P) v
// (dropout at the node's attrs.p, noise drawn row by row: ops/attention_kernels). The
// importer makes such a node from the unfused pattern (graph/attention_fusion.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace monet {

enum class AttentionMask {
  kNone,
  kFill,  // masked_fill: scores where `mask` (bool) is true become `fill` (a causal mask)
  kAdd,   // `mask` (float) is added to the scores (an additive mask, -inf where masked)
};

struct AttentionSpec {
  double scale = 1.0;  // factor of q kᵀ
  AttentionMask mask = AttentionMask::kNone;
  /// kFill, kAdd: a constant broadcastable to the scores [..., T, S] (its last two
  /// dimensions T or 1, and S or 1).
  at::Tensor mask_values;
  double fill = 0.0;  // kFill: the value masked scores take (-inf for a causal mask)
  /// Query rows the blocked implementations (the chunked forward, the recomputing
  /// backwards) process at once: their scores and probabilities take
  /// batch * block_rows * S elements instead of batch * T * S.
  int64_t block_rows = 1;
};

/// "scale=0.125 mask=fill(tensor[1, 1, 16, 16]Bool#...) fill=-inf block_rows=16":
/// deterministic, part of the graph fingerprint (mask values by hash).
std::string describe_attention(const AttentionSpec& spec);

}  // namespace monet
