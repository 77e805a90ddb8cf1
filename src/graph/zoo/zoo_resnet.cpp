// ResNet-18/34/50/101/152 as in torchvision.models.resnet (v1.5: stride in the 3x3).
#include "graph/graph_builder.h"
#include "graph/zoo/zoo_builders.h"

namespace monet::zoo {
namespace {

int conv_bn(GraphBuilder& b, int x, const std::string& conv_name, const std::string& bn_name,
            int64_t out, int64_t k, int64_t stride, int64_t pad) {
  x = b.conv(x, conv_name, {out, {k}, stride, pad, 1, false, kaiming_fan_out_init()});
  return b.batch_norm(x, bn_name);
}

int basic_block(GraphBuilder& b, int x, const std::string& p, int64_t planes, int64_t stride) {
  const int identity_in = x;
  int out = conv_bn(b, x, p + ".conv1", p + ".bn1", planes, 3, stride, 1);
  out = b.relu(out, p + ".relu1", true);
  out = conv_bn(b, out, p + ".conv2", p + ".bn2", planes, 3, 1, 1);
  int identity = identity_in;
  if (stride != 1 || b.channels(identity_in) != planes)
    identity =
        conv_bn(b, identity_in, p + ".downsample.0", p + ".downsample.1", planes, 1, stride, 0);
  out = b.add(out, identity, p + ".add", true);  // out += identity
  return b.relu(out, p + ".relu2", true);
}

int bottleneck(GraphBuilder& b, int x, const std::string& p, int64_t planes, int64_t stride) {
  const int64_t expansion = 4;
  int out = conv_bn(b, x, p + ".conv1", p + ".bn1", planes, 1, 1, 0);
  out = b.relu(out, p + ".relu1", true);
  out = conv_bn(b, out, p + ".conv2", p + ".bn2", planes, 3, stride, 1);
  out = b.relu(out, p + ".relu2", true);
  out = conv_bn(b, out, p + ".conv3", p + ".bn3", planes * expansion, 1, 1, 0);
  int identity = x;
  if (stride != 1 || b.channels(x) != planes * expansion)
    identity =
        conv_bn(b, x, p + ".downsample.0", p + ".downsample.1", planes * expansion, 1, stride, 0);
  out = b.add(out, identity, p + ".add", true);
  return b.relu(out, p + ".relu3", true);
}

}  // namespace

Graph resnet(int depth, const ModelConfig& c) {
  std::vector<int> blocks;
  bool use_bottleneck = depth >= 50;
  switch (depth) {
    case 18:
      blocks = {2, 2, 2, 2};
      break;
    case 34:
      blocks = {3, 4, 6, 3};
      break;
    case 50:
      blocks = {3, 4, 6, 3};
      break;
    case 101:
      blocks = {3, 4, 23, 3};
      break;
    case 152:
      blocks = {3, 8, 36, 3};
      break;
    default:
      throw std::invalid_argument("no ResNet of depth " + std::to_string(depth));
  }
  GraphBuilder b("resnet" + std::to_string(depth));
  int x = b.input("input", {c.batch, 3, c.image[0], c.image[1]});
  const int target = b.class_target("target", c.batch);
  const int64_t base = scale_channels(64, c.width);
  x = conv_bn(b, x, "conv1", "bn1", base, 7, 2, 3);
  x = b.relu(x, "relu", true);
  x = b.max_pool(x, "maxpool", 3, 2, 1);
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = base << layer;
    for (int i = 0; i < blocks[layer]; ++i) {
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(i);
      const int64_t stride = (i == 0 && layer > 0) ? 2 : 1;
      x = use_bottleneck ? bottleneck(b, x, p, planes, stride)
                         : basic_block(b, x, p, planes, stride);
    }
  }
  x = b.adaptive_avg_pool(x, "avgpool", {1, 1});
  x = b.flatten(x, "flatten");
  x = b.linear(x, "fc", c.classes);
  b.cross_entropy(x, target);
  return b.finish();
}

}  // namespace monet::zoo
