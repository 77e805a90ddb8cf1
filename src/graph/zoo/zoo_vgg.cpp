// VGG-11/16/19 (without batch norm) as in torchvision.models.vgg.
#include "graph/graph_builder.h"
#include "graph/zoo/zoo_builders.h"

namespace monet::zoo {

Graph vgg(int depth, const ModelConfig& c) {
  constexpr int M = 0;  // max pool marker
  std::vector<int> cfg;
  switch (depth) {
    case 11:
      cfg = {64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
      break;
    case 16:
      cfg = {64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M};
      break;
    case 19:
      cfg = {64,  64,  M,   128, 128, M,   256, 256, 256, 256, M,
             512, 512, 512, 512, M,   512, 512, 512, 512, M};
      break;
    default:
      throw std::invalid_argument("no VGG of depth " + std::to_string(depth));
  }
  const LayerInit conv_init{{InitKind::kKaimingNormalFanOut}, {InitKind::kZeros}};
  const LayerInit linear_init{{InitKind::kNormal, 0.01}, {InitKind::kZeros}};

  GraphBuilder b("vgg" + std::to_string(depth));
  int x = b.input("input", {c.batch, 3, c.image[0], c.image[1]});
  const int target = b.class_target("target", c.batch);
  int index = 0;  // position in nn.Sequential `features`
  for (int v : cfg) {
    const std::string name = "features." + std::to_string(index);
    if (v == M) {
      x = b.max_pool(x, name, 2, 2, 0);
      index += 1;
    } else {
      x = b.conv(x, name, {scale_channels(v, c.width), {3}, 1, 1, 1, true, conv_init});
      x = b.relu(x, "features." + std::to_string(index + 1), true);
      index += 2;
    }
  }
  x = b.adaptive_avg_pool(x, "avgpool", {7, 7});
  x = b.flatten(x, "flatten");
  const int64_t hidden = scale_channels(4096, c.width);
  x = b.linear(x, "classifier.0", hidden, linear_init);
  x = b.relu(x, "classifier.1", true);
  x = b.dropout(x, "classifier.2", 0.5);
  x = b.linear(x, "classifier.3", hidden, linear_init);
  x = b.relu(x, "classifier.4", true);
  x = b.dropout(x, "classifier.5", 0.5);
  x = b.linear(x, "classifier.6", c.classes, linear_init);
  b.cross_entropy(x, target);
  return b.finish();
}

}  // namespace monet::zoo
