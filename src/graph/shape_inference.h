// Shape inference for every OpKind: the output shape a node produces from its input
// values and attributes, with a GraphError naming the node when they do not fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/op_kind.h"

namespace monet {

struct Value;

/// The int64 target of cross-entropy over logits of `logits` shape [N, C, ...]: [N, ...].
std::vector<int64_t> cross_entropy_target_shape(const std::vector<int64_t>& logits);

/// Whether a tensor of shape `from` broadcasts to `to` without changing it: the same rank
/// or lower, each of its trailing dimensions equal to `to`'s or 1.
bool broadcasts_to(const std::vector<int64_t>& from, const std::vector<int64_t>& to);

/// Output shape of `op` applied to `inputs`. `node_name` is used in error messages.
std::vector<int64_t> infer_shape(OpKind op, const std::vector<const Value*>& inputs,
                                 const OpAttrs& attrs, const std::string& node_name);

}  // namespace monet
