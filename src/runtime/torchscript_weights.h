// Loading weights into a ModelState from a TorchScript file saved by Python
// (torch.jit.save of a traced or scripted module), matching parameters and buffers by
// their state_dict names.
#pragma once

#include <string>

#include "graph/graph.h"
#include "runtime/model_state.h"

namespace monet {

struct WeightTransfer {
  int copied = 0;                   // tensors copied
  std::vector<std::string> unused;  // names in the file that the graph does not have
};

/// Copies every parameter and buffer of the graph from the module at `path`. Throws
/// std::runtime_error naming the first graph tensor that is missing from the file or has
/// another shape; the state is left unchanged in that case.
WeightTransfer load_torchscript_weights(const Graph& graph, ModelState& state,
                                        const std::string& path);

}  // namespace monet
