// Internal to the zoo: one builder per model family. Configs arrive complete (image,
// classes filled in, sizes validated) from build_zoo_model().
#pragma once

#include "graph/graph.h"
#include "graph/model_config.h"

namespace monet::zoo {

Graph resnet(int depth, const ModelConfig& config);
Graph vgg(int depth, const ModelConfig& config);
Graph googlenet(const ModelConfig& config);
Graph mobilenet_v2(const ModelConfig& config);
Graph unet(const ModelConfig& config);
Graph unet3d(const ModelConfig& config);

}  // namespace monet::zoo
