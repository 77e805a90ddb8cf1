#include "graph/zoo/model_zoo.h"

#include <cmath>
#include <functional>
#include <stdexcept>

#include "graph/zoo/zoo_builders.h"

namespace monet {
namespace {

struct Entry {
  ModelInfo info;
  std::function<Graph(const ModelConfig&)> build;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = [] {
    std::vector<Entry> e;
    for (int d : {18, 34, 50, 101, 152})
      e.push_back({{"resnet" + std::to_string(d),
                    "ResNet-" + std::to_string(d) + " (torchvision)",
                    2,
                    {224, 224},
                    1000},
                   [d](const ModelConfig& c) { return zoo::resnet(d, c); }});
    for (int d : {11, 16, 19})
      e.push_back({{"vgg" + std::to_string(d),
                    "VGG-" + std::to_string(d) + " without batch norm",
                    2,
                    {224, 224},
                    1000},
                   [d](const ModelConfig& c) { return zoo::vgg(d, c); }});
    e.push_back(
        {{"googlenet", "GoogLeNet without auxiliary heads", 2, {224, 224}, 1000}, zoo::googlenet});
    e.push_back({{"mobilenet_v2", "MobileNetV2", 2, {224, 224}, 1000}, zoo::mobilenet_v2});
    e.push_back({{"unet", "UNet, 3 input channels, 1 class (paper: 416x608)", 2, {416, 608}, 1},
                 zoo::unet});
    e.push_back({{"unet3d", "3D-UNet for volumes, 1 input channel, 1 class", 3, {64, 64, 64}, 1},
                 zoo::unet3d});
    return e;
  }();
  return all;
}

const Entry& find(const std::string& name) {
  std::string known;
  for (const auto& e : entries()) {
    if (e.info.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.info.name;
  }
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace

const std::vector<ModelInfo>& zoo_models() {
  static const std::vector<ModelInfo> infos = [] {
    std::vector<ModelInfo> v;
    for (const auto& e : entries()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

const ModelInfo& zoo_model_info(const std::string& name) { return find(name).info; }

Graph build_zoo_model(const std::string& name, ModelConfig config) {
  const Entry& e = find(name);
  if (config.batch <= 0)
    throw std::invalid_argument("batch size must be positive, got " + std::to_string(config.batch));
  if (!(config.width > 0) || !std::isfinite(config.width))
    throw std::invalid_argument("width multiplier must be positive");
  if (config.classes < 0) throw std::invalid_argument("class count must be positive");
  if (config.image.empty()) config.image = e.info.default_image;
  if (static_cast<int>(config.image.size()) != e.info.spatial_dims)
    throw std::invalid_argument(name + " takes " + std::to_string(e.info.spatial_dims) +
                                " spatial dimensions, got image size " +
                                image_size_string(config.image));
  for (auto d : config.image)
    if (d <= 0) throw std::invalid_argument("image sizes must be positive");
  if (config.classes == 0) config.classes = e.info.default_classes;
  return e.build(config);
}

}  // namespace monet
