// MobileNetV2 as in torchvision.models.mobilenet_v2 (ReLU6 in place, dropout 0.2).
#include "graph/graph_builder.h"
#include "graph/zoo/zoo_builders.h"

namespace monet::zoo {
namespace {

// torchvision's _make_divisible: round to a multiple of 8, never more than 10% down.
int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t out = std::max<int64_t>(divisor, int64_t(v + divisor / 2.0) / divisor * divisor);
  if (out < 0.9 * v) out += divisor;
  return out;
}

// Conv2dNormActivation: conv (no bias) + batch norm + ReLU6 in place, names p.0 / p.1.
int conv_bn_relu6(GraphBuilder& b, int x, const std::string& p, int64_t out, int64_t k,
                  int64_t stride, int64_t groups) {
  x = b.conv(x, p + ".0", {out, {k}, stride, (k - 1) / 2, groups, false, kaiming_fan_out_init()});
  x = b.batch_norm(x, p + ".1");
  return b.relu6(x, p + ".2", true);
}

int inverted_residual(GraphBuilder& b, int x, const std::string& p, int64_t out, int64_t stride,
                      int64_t expand) {
  const int64_t in = b.channels(x);
  const int64_t hidden = static_cast<int64_t>(std::llround(double(in) * expand));
  const bool residual = stride == 1 && in == out;
  int y = x;
  int layer = 0;
  if (expand != 1) y = conv_bn_relu6(b, y, p + ".conv." + std::to_string(layer++), hidden, 1, 1, 1);
  y = conv_bn_relu6(b, y, p + ".conv." + std::to_string(layer++), hidden, 3, stride, hidden);
  y = b.conv(y, p + ".conv." + std::to_string(layer++),
             {out, {1}, 1, 0, 1, false, kaiming_fan_out_init()});
  y = b.batch_norm(y, p + ".conv." + std::to_string(layer++));
  return residual ? b.add(x, y, p + ".add", false) : y;
}

}  // namespace

Graph mobilenet_v2(const ModelConfig& c) {
  struct Stage {
    int64_t t, c, n, s;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  GraphBuilder b("mobilenet_v2");
  int x = b.input("input", {c.batch, 3, c.image[0], c.image[1]});
  const int target = b.class_target("target", c.batch);
  x = conv_bn_relu6(b, x, "features.0", make_divisible(32 * c.width), 3, 2, 1);
  int index = 1;
  for (const auto& st : stages) {
    const int64_t out = make_divisible(double(st.c) * c.width);
    for (int64_t i = 0; i < st.n; ++i)
      x = inverted_residual(b, x, "features." + std::to_string(index++), out, i == 0 ? st.s : 1,
                            st.t);
  }
  const int64_t last = make_divisible(1280 * std::max(1.0, c.width));
  x = conv_bn_relu6(b, x, "features." + std::to_string(index), last, 1, 1, 1);
  x = b.adaptive_avg_pool(x, "avgpool", {1, 1});
  x = b.flatten(x, "flatten");
  x = b.dropout(x, "classifier.0", 0.2);
  x = b.linear(x, "classifier.1", c.classes, {{InitKind::kNormal, 0.01}, {InitKind::kZeros}});
  b.cross_entropy(x, target);
  return b.finish();
}

}  // namespace monet::zoo
