// Tiny configurations of every zoo model, small enough for unit tests on 2 cores.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "graph/model_config.h"

namespace monet::testing {

struct TinyModel {
  std::string name;
  ModelConfig config;
};

// Test names show the model, not the bytes of the struct.
inline void PrintTo(const TinyModel& m, std::ostream* os) { *os << m.name; }

inline std::vector<TinyModel> tiny_models() {
  auto cfg = [](std::vector<int64_t> image, double width, int64_t classes, int64_t batch = 2) {
    ModelConfig c;
    c.batch = batch;
    c.image = std::move(image);
    c.width = width;
    c.classes = classes;
    return c;
  };
  return {
      {"resnet18", cfg({64, 64}, 0.125, 10, 4)},   {"resnet34", cfg({64, 64}, 0.125, 10, 4)},
      {"resnet50", cfg({64, 64}, 0.125, 10, 4)},   {"resnet101", cfg({64, 64}, 0.0625, 10, 4)},
      {"resnet152", cfg({64, 64}, 0.0625, 10, 4)}, {"vgg11", cfg({32, 32}, 0.0625, 10)},
      {"vgg16", cfg({32, 32}, 0.0625, 10)},        {"vgg19", cfg({32, 32}, 0.0625, 10)},
      {"googlenet", cfg({32, 32}, 0.125, 10)},     {"mobilenet_v2", cfg({64, 64}, 0.25, 10, 4)},
      {"unet", cfg({32, 48}, 0.125, 1)},           {"unet3d", cfg({16, 16, 16}, 0.125, 1)},
  };
}

/// The tiny configurations of the models `names` lists (in zoo order).
inline std::vector<TinyModel> tiny_models_named(const std::vector<std::string>& names) {
  std::vector<TinyModel> out;
  for (const auto& m : tiny_models())
    for (const auto& n : names)
      if (m.name == n) out.push_back(m);
  return out;
}

}  // namespace monet::testing
