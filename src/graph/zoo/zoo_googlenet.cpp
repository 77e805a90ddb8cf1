// GoogLeNet as in torchvision.models.googlenet(aux_logits=False, transform_input=False).
// Like torchvision, the "5x5" branch uses a 3x3 convolution.
#include "graph/graph_builder.h"
#include "graph/zoo/zoo_builders.h"

namespace monet::zoo {
namespace {

const LayerInit kInit{{InitKind::kTruncNormal, 0.01}, {InitKind::kUniformFanIn}};

struct Scaled {
  double width;
  int64_t operator()(int64_t ch) const { return scale_channels(ch, width); }
};

// BasicConv2d: conv (no bias) + batch norm (eps 0.001) + in-place ReLU.
int basic_conv(GraphBuilder& b, int x, const std::string& p, int64_t out, int64_t k,
               int64_t stride = 1, int64_t pad = 0) {
  x = b.conv(x, p + ".conv", {out, {k}, stride, pad, 1, false, kInit});
  x = b.batch_norm(x, p + ".bn", 0.001);
  return b.relu(x, p + ".relu", true);
}

int inception(GraphBuilder& b, int x, const std::string& p, int64_t ch1x1, int64_t ch3x3red,
              int64_t ch3x3, int64_t ch5x5red, int64_t ch5x5, int64_t pool_proj) {
  const int b1 = basic_conv(b, x, p + ".branch1", ch1x1, 1);
  int b2 = basic_conv(b, x, p + ".branch2.0", ch3x3red, 1);
  b2 = basic_conv(b, b2, p + ".branch2.1", ch3x3, 3, 1, 1);
  int b3 = basic_conv(b, x, p + ".branch3.0", ch5x5red, 1);
  b3 = basic_conv(b, b3, p + ".branch3.1", ch5x5, 3, 1, 1);
  int b4 = b.max_pool(x, p + ".branch4.0", 3, 1, 1, true);
  b4 = basic_conv(b, b4, p + ".branch4.1", pool_proj, 1);
  return b.cat({b1, b2, b3, b4}, p + ".cat");
}

}  // namespace

Graph googlenet(const ModelConfig& c) {
  const Scaled s{c.width};
  GraphBuilder b("googlenet");
  int x = b.input("input", {c.batch, 3, c.image[0], c.image[1]});
  const int target = b.class_target("target", c.batch);
  x = basic_conv(b, x, "conv1", s(64), 7, 2, 3);
  x = b.max_pool(x, "maxpool1", 3, 2, 0, true);
  x = basic_conv(b, x, "conv2", s(64), 1);
  x = basic_conv(b, x, "conv3", s(192), 3, 1, 1);
  x = b.max_pool(x, "maxpool2", 3, 2, 0, true);
  x = inception(b, x, "inception3a", s(64), s(96), s(128), s(16), s(32), s(32));
  x = inception(b, x, "inception3b", s(128), s(128), s(192), s(32), s(96), s(64));
  x = b.max_pool(x, "maxpool3", 3, 2, 0, true);
  x = inception(b, x, "inception4a", s(192), s(96), s(208), s(16), s(48), s(64));
  x = inception(b, x, "inception4b", s(160), s(112), s(224), s(24), s(64), s(64));
  x = inception(b, x, "inception4c", s(128), s(128), s(256), s(24), s(64), s(64));
  x = inception(b, x, "inception4d", s(112), s(144), s(288), s(32), s(64), s(64));
  x = inception(b, x, "inception4e", s(256), s(160), s(320), s(32), s(128), s(128));
  x = b.max_pool(x, "maxpool4", 2, 2, 0, true);
  x = inception(b, x, "inception5a", s(256), s(160), s(320), s(32), s(128), s(128));
  x = inception(b, x, "inception5b", s(384), s(192), s(384), s(48), s(128), s(128));
  x = b.adaptive_avg_pool(x, "avgpool", {1, 1});
  x = b.flatten(x, "flatten");
  x = b.dropout(x, "dropout", 0.2);
  x = b.linear(x, "fc", c.classes, kInit);
  b.cross_entropy(x, target);
  return b.finish();
}

}  // namespace monet::zoo
