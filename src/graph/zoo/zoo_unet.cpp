// UNet (Ronneberger et al.) in the widely used PyTorch layout (DoubleConv = 2 x (conv
// without bias, batch norm, ReLU in place); transposed-convolution upsampling), the
// paper's configuration being 3 input channels, 1 output class, 416x608 input; and a
// volumetric 3D-UNet (Cicek et al.) of the same structure with 3-D operators.
#include "graph/graph_builder.h"
#include "graph/zoo/zoo_builders.h"

namespace monet::zoo {
namespace {

int double_conv(GraphBuilder& b, int x, const std::string& p, int64_t out) {
  for (int i = 0; i < 2; ++i) {
    const std::string idx = p + ".double_conv.";
    x = b.conv(x, idx + std::to_string(3 * i), {out, {3}, 1, 1, 1, false, default_init()});
    x = b.batch_norm(x, idx + std::to_string(3 * i + 1));
    x = b.relu(x, idx + std::to_string(3 * i + 2), true);
  }
  return x;
}

// Encoder-decoder with `levels` resolutions, `base` features at the top.
Graph build_unet(const std::string& model, int64_t in_channels, int64_t base, int levels,
                 const ModelConfig& c) {
  const int64_t divisor = int64_t{1} << (levels - 1);
  for (auto d : c.image)
    if (d % divisor != 0)
      throw std::invalid_argument(model + " needs every input dimension to be a multiple of " +
                                  std::to_string(divisor) + ", got " + image_size_string(c.image));
  GraphBuilder b(model);
  std::vector<int64_t> shape = {c.batch, in_channels};
  shape.insert(shape.end(), c.image.begin(), c.image.end());
  int x = b.input("input", shape);
  shape[1] = c.classes;
  const int target = b.mask_target("target", shape);

  std::vector<int> skips;
  x = double_conv(b, x, "inc", base);
  for (int level = 1; level < levels; ++level) {
    skips.push_back(x);
    const std::string p = "down" + std::to_string(level);
    x = b.max_pool(x, p + ".maxpool_conv.0", 2, 2, 0);
    x = double_conv(b, x, p + ".maxpool_conv.1", base << level);
  }
  for (int level = levels - 1; level >= 1; --level) {
    const std::string p = "up" + std::to_string(levels - level);
    const int64_t out = base << (level - 1);
    x = b.conv_transpose(x, p + ".up", out, 2, 2);
    x = b.cat({skips[level - 1], x}, p + ".cat");
    x = double_conv(b, x, p + ".conv", out);
  }
  x = b.conv(x, "outc.conv", {c.classes, {1}, 1, 0, 1, true, default_init()});
  b.bce_with_logits(x, target);
  return b.finish();
}

}  // namespace

Graph unet(const ModelConfig& c) {
  return build_unet("unet", 3, scale_channels(64, c.width), 5, c);
}

Graph unet3d(const ModelConfig& c) {
  return build_unet("unet3d", 1, scale_channels(32, c.width), 4, c);
}

}  // namespace monet::zoo
