// ModelState: the tensors behind a graph's parameters and buffers; Batch: the data fed
// to its inputs and targets for one iteration. Both are indexed by graph value id.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace monet {

class ModelState {
 public:
  /// Materialises every parameter and buffer per its InitSpec, seeded by `seed`.
  static ModelState initialize(const Graph& graph, uint64_t seed);

  const at::Tensor& tensor(int value_id) const;
  at::Tensor& tensor(int value_id);
  /// Value id of the parameter or buffer called `name`, or -1.
  int find(const std::string& name) const;
  /// Deep copy (independent storage, no autograd state).
  ModelState clone() const;
  /// Bytes held by parameters and buffers.
  int64_t bytes() const;

 private:
  std::map<int, at::Tensor> tensors_;
  std::map<std::string, int> by_name_;
};

/// Inputs and targets of one iteration, by value id.
using Batch = std::map<int, at::Tensor>;

/// The tensor of a value that is not computed by a node: a parameter or buffer from
/// `state`, an input or target from `batch`. Throws std::invalid_argument when the batch
/// lacks it.
at::Tensor fixed_tensor(const Graph& graph, const ModelState& state, const Batch& batch, int value);

/// A reproducible synthetic batch: inputs ~ N(0, 1) (integer inputs: token ids uniform
/// below the row count of the embeddings reading them), class targets uniform over the
/// classes, mask targets Bernoulli(0.5).
Batch make_batch(const Graph& graph, uint64_t seed);

}  // namespace monet
