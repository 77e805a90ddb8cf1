// ModelSpecs of the tests, field by field (an aggregate initializer would leave the later
// fields to -Wmissing-field-initializers).
#pragma once

#include <monet/monet.h>

#include <string>
#include <vector>

namespace monet::testing {

/// A zoo model: `batch` samples of `image` (empty: the model's own size), channel width
/// multiplier `width`, `classes` outputs (0: the model's own).
inline ModelSpec zoo_spec(const std::string& name, int64_t batch, std::vector<int64_t> image,
                          double width, int64_t classes) {
  ModelSpec s;
  s.model = name;
  s.batch = batch;
  s.image = std::move(image);
  s.width = width;
  s.classes = classes;
  return s;
}

/// A TorchScript model at `path` fed one input of `input_shape` (batch first), its loss
/// `loss`.
inline ModelSpec traced_spec(const std::string& path, std::vector<int64_t> input_shape,
                             LossKind loss = LossKind::kCrossEntropy) {
  ModelSpec s;
  s.model = path;
  s.batch = input_shape.empty() ? 1 : input_shape[0];
  s.input_shape = std::move(input_shape);
  s.loss = loss;
  return s;
}

}  // namespace monet::testing
