// Attention fusion: the importer's pass that finds scaled dot-product attention among
// generic operators and makes each occurrence one attention node (OpKind::kAttention,
// graph/attention_spec.h), so that the planner can choose how it keeps what its backward
// needs. The pattern, as nn.MultiheadAttention and hand-written attention trace:
//
//   [q * c | q / c]  @  kᵀ  [* c | / c]  [masked_fill(constant bool, value) | + constant]
//   -> softmax(-1)  [-> dropout]  @ v
//
// (matmul or bmm; kᵀ a transpose of k's last two dimensions; every intermediate read by
// the next step alone). Anything else stays as it is.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace monet {

struct AttentionFusionOptions {
  /// Bytes of one block of float32 scores [..., rows, S] that the blocked implementations
  /// (chunked forward, recomputing backwards) hold at once; a node's block_rows is the
  /// most query rows that fit (at least 1, at most T).
  int64_t block_score_bytes = int64_t{4} << 20;
};

/// `graph` with every attention pattern replaced by one attention node (named after its
/// softmax's module, "blocks.0.attn.attention"); other nodes and all values keep their
/// names. `fused`, when given, receives the number of nodes made.
Graph fuse_attention(const Graph& graph, const AttentionFusionOptions& options = {},
                     int* fused = nullptr);

}  // namespace monet
