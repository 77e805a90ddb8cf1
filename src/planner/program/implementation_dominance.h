// Dominance between implementations of one operator: which can stand in for each other
// in a plan, and which of those are never needed because another is no slower and needs
// no more workspace. The MONeT program leaves dominated implementations out and maps
// them to their dominators when it encodes a plan.
#pragma once

#include <vector>

#include "cost/cost_model.h"
#include "ops/op_impl.h"

namespace monet {

// Implementations that can stand in for each other in a plan: same reads, same
// in-place behaviour, no intermediate; only time and workspace differ.
inline bool same_forward(const ForwardImplInfo& a, const ForwardImplInfo& b) {
  return !a.emits_intermediate && !b.emits_intermediate && a.inplace == b.inplace &&
         a.output_aliases_input == b.output_aliases_input;
}
inline bool same_backward(const BackwardImplInfo& a, const BackwardImplInfo& b) {
  return !a.reads_intermediate && !b.reads_intermediate && a.reads_inputs == b.reads_inputs &&
         a.reads_output == b.reads_output && a.grads_alias_output == b.grads_alias_output;
}
inline bool no_worse(const ImplCost& a, const ImplCost& b) {
  return a.seconds <= b.seconds && a.workspace_bytes <= b.workspace_bytes;
}

// Indices of `items` not dominated by an equivalent item (same `same`) that is no slower
// and needs no more workspace (ties keep the earlier one).
template <typename T, typename Same, typename Cost>
std::vector<size_t> pareto(const std::vector<T>& items, Same same, Cost cost) {
  std::vector<size_t> keep;
  for (size_t i = 0; i < items.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < items.size() && !dominated; ++j) {
      if (i == j || !same(items[i], items[j])) continue;
      const ImplCost a = cost(items[i]), b = cost(items[j]);
      const bool better = b.seconds < a.seconds || b.workspace_bytes < a.workspace_bytes;
      dominated = no_worse(b, a) && (better || j < i);
    }
    if (!dominated) keep.push_back(i);
  }
  return keep;
}

}  // namespace monet
