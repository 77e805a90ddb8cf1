// What a model is made of, as `monet models` and `monet show` print it: the zoo's models,
// and a model's forward operators with their output shapes and sizes.
// Units: bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "monet/monet.h"

namespace monet {

/// One model of the zoo (ModelSpec::model takes its name).
struct ZooModel {
  std::string name;                    // "resnet50"
  std::string description;             // one line
  int spatial_dims = 2;                // 1 for sequences, 2 for images, 3 for volumes
  std::vector<int64_t> default_image;  // the spatial input size used when none is given
  int64_t default_classes = 0;         // the output classes used when none are given
};

/// Every zoo model, in display order.
std::vector<ZooModel> model_zoo();

/// One forward operator of a model, in execution order.
struct OperatorDescription {
  int id = 0;                         // its index in the model's operators
  std::string name;                   // "layer1.0.conv1"
  std::string kind;                   // the operator: "conv2d", "relu", "aten::einsum", ...
  std::vector<std::string> inputs;    // the names of the values it reads
  std::string attributes;             // its attributes in one line ("k=3 s=1 p=1")
  std::vector<int64_t> output_shape;  // its output's shape
  int64_t output_bytes = 0;           // its output's size
};

/// A model at one size: what it is built from and how much it holds.
struct ModelDescription {
  std::string model;           // zoo name or traced file
  int64_t batch = 0;           // samples per step
  std::vector<int64_t> image;  // spatial input size (empty for a model without one)
  double width = 1.0;          // zoo models' channel width multiplier
  int64_t classes = 0;         // zoo models' output classes (0 for a traced model)
  std::string fingerprint;     // of the graph: what plan and cost files are checked against
  int64_t parameters = 0;      // trainable parameter count
  int64_t parameter_bytes = 0;
  int64_t activation_bytes = 0;   // every operator's output together
  int64_t generic_operators = 0;  // operators on the generic ATen path
  std::vector<OperatorDescription> operators;
};

/// Builds `spec`'s graph (no weights are loaded) and describes it. Throws as Model::load.
ModelDescription describe(const ModelSpec& spec);
/// The same for a loaded model.
ModelDescription describe(const Model& model);

/// Whether ModelSpec::model `model` names a traced file (.pt, .pth) rather than a zoo model.
bool is_traced_model_file(const std::string& model);

/// A spatial size as the CLI's --image takes it: "224" (square; a cube for a model of 3
/// spatial dimensions, a length for one of 1), "416x608" or "64x64x64". Throws
/// std::invalid_argument with a readable message.
std::vector<int64_t> parse_image_size(const std::string& text, int spatial_dims);

/// "[8, 3, 224, 224]": a tensor shape as messages and `monet show` print it.
std::string shape_string(const std::vector<int64_t>& shape);

/// "224x224", "16" or "64x64x64": a spatial size as the CLI's --image takes it.
std::string image_size_string(const std::vector<int64_t>& image);

/// "97.9 MiB" (B, KiB, MiB, GiB or TiB, one decimal above bytes); `exact` adds the byte
/// count: "97.9 MiB (102760448 B)". The library's messages use the same.
std::string format_bytes(int64_t bytes, bool exact);

}  // namespace monet
