// The model zoo: the paper's networks built directly as Graphs, with torchvision's
// structure, parameter names and initialisation.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"

namespace monet {

struct ModelInfo {
  std::string name;                    // "resnet50"
  std::string description;             // one line
  int spatial_dims = 2;                // 2 for images, 3 for volumes
  std::vector<int64_t> default_image;  // spatial input size used when none is given
  int64_t default_classes = 1000;
};

/// Every zoo model, in display order.
const std::vector<ModelInfo>& zoo_models();
/// Throws std::invalid_argument("unknown model 'x' (known: ...)").
const ModelInfo& zoo_model_info(const std::string& name);

/// Builds `name` at `config` (defaults filled from zoo_model_info). Throws
/// std::invalid_argument for an unknown model or non-positive sizes, GraphError when the
/// input is too small for the network.
Graph build_zoo_model(const std::string& name, ModelConfig config);

}  // namespace monet
