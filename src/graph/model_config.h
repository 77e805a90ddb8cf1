// ModelConfig: the size of a zoo model instance, and parsing of the user-facing
// "--image 224", "--image 416x608", "--image 64x64x64" syntax.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/op_kind.h"

namespace monet {

/// Which implementations a traced model's activations (ReLU, ReLU6, hardswish,
/// hardsigmoid, SiLU, sigmoid), batch norms and attention get.
enum class OperatorPath {
  kSpecialised,  // their own operators, with several implementations each (op_impl.h);
                 // attention patterns become attention nodes (graph/attention_fusion.h)
  kGeneric,      // generic ATen nodes (aten_call.h): measures what the specialised ones
                 // save; batch norm then normalises with batch statistics and leaves its
                 // running statistics alone; attention stays unfused
};

const char* operator_path_name(OperatorPath path);  // "specialised", "generic"
/// Parses operator_path_name()'s names; throws std::invalid_argument naming them.
OperatorPath operator_path_from_name(const std::string& name);

/// Where a cross-entropy loss finds the classes in the logits.
enum class ClassDim {
  kSecond,  // [N, C] or [N, C, ...], as torch.nn.functional.cross_entropy takes them
  kLast,    // [N, T, C]: a language model's logits at every position of a sequence
};

/// What a traced model is trained on.
struct ImportOptions {
  /// The output trained when the model returns a tuple (its index, "0") or a dict (its
  /// key, "out"); empty: the first.
  std::string output;
  /// The loss appended: kCrossEntropyLoss, kMSELoss, kBCEWithLogitsLoss or kSumLoss.
  OpKind loss = OpKind::kCrossEntropyLoss;
  /// kCrossEntropyLoss: where the classes are (kLast: the logits are transposed to
  /// [N, C, T] by a view node before the loss).
  ClassDim classes = ClassDim::kSecond;
  OperatorPath activations_and_norms = OperatorPath::kSpecialised;
  /// Whether GELU nodes offer their lossy few-bit backward (ops/few_bit_gelu.h).
  LossyOffer lossy = LossyOffer::kExcluded;
};

/// One input of a traced model's forward: its shape, batch first, and element type.
struct InputSpec {
  std::vector<int64_t> shape;
  /// The element type fed; none: inferred (int64 token ids where an embedding reads the
  /// input, float32 otherwise).
  std::optional<at::ScalarType> dtype;
};

/// Parses "2,3,224,224" or "2,16:int64": a shape, batch first, and optionally an element
/// type (float32, float64, int64, int32 or bool). Throws std::invalid_argument.
InputSpec parse_input_spec(const std::string& text);
/// "2,16" or "2,16:int64", as parse_input_spec() reads it.
std::string input_spec_string(const InputSpec& input);
/// An input element type's name ("float32", "int64", "bool"...).
std::string input_dtype_name(at::ScalarType dtype);
/// The element type of one of those names; throws std::invalid_argument naming the known.
at::ScalarType input_dtype_from_name(const std::string& name);

struct ModelConfig {
  int64_t batch = 1;           // samples per iteration
  std::vector<int64_t> image;  // spatial input size (H, W) or (D, H, W); empty = model default
  double width = 1.0;          // channel width multiplier (1.0 = the published model)
  int64_t classes = 0;         // output classes; 0 = model default (1000 / 1 for UNets)
  /// Imported TorchScript models only: every input of forward, in order (the first one's
  /// shape gives batch and image); empty for zoo models.
  std::vector<InputSpec> inputs;
  ImportOptions import;  // imported TorchScript models only
};

/// Parses "224" (square; cube for 3-D models when `spatial_dims` is 3), "416x608" or
/// "64x64x64". Throws std::invalid_argument with a readable message on bad input.
std::vector<int64_t> parse_image_size(const std::string& text, int spatial_dims);

std::string image_size_string(const std::vector<int64_t>& image);

/// Parses "2,3,224,224" (an input shape, batch first). Throws std::invalid_argument.
std::vector<int64_t> parse_input_shape(const std::string& text);

}  // namespace monet
