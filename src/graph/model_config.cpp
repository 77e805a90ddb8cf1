#include "graph/model_config.h"

#include <stdexcept>

namespace monet {

const char* operator_path_name(OperatorPath path) {
  return path == OperatorPath::kGeneric ? "generic" : "specialised";
}

OperatorPath operator_path_from_name(const std::string& name) {
  for (OperatorPath p : {OperatorPath::kSpecialised, OperatorPath::kGeneric})
    if (name == operator_path_name(p)) return p;
  throw std::invalid_argument("unknown operator path '" + name + "' (known: specialised, generic)");
}

namespace {

// Positive integers separated by `sep`; `what` and `syntax` go into the error message.
std::vector<int64_t> parse_sizes(const std::string& text, char sep, const std::string& what,
                                 const std::string& syntax) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(sep, start), text.size());
    const std::string part = text.substr(start, end - start);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size())
      throw std::invalid_argument("invalid " + what + " '" + text + "': expected " + syntax +
                                  " with positive integers");
    if (v <= 0)
      throw std::invalid_argument("invalid " + what + " '" + text + "': sizes must be positive");
    dims.push_back(v);
    start = end + 1;
  }
  return dims;
}

}  // namespace

std::vector<int64_t> parse_input_shape(const std::string& text) {
  // A shape of one dimension is a value per sample (a diffusion model's timesteps).
  return parse_sizes(text, ',', "input shape", "B,C,H,W (batch first)");
}

namespace {

const std::vector<std::pair<const char*, at::ScalarType>>& input_dtypes() {
  static const std::vector<std::pair<const char*, at::ScalarType>> types = {
      {"float32", at::kFloat},
      {"float64", at::kDouble},
      {"int64", at::kLong},
      {"int32", at::kInt},
      {"bool", at::kBool}};
  return types;
}

}  // namespace

at::ScalarType input_dtype_from_name(const std::string& name) {
  std::string known;
  for (const auto& [type_name, dtype] : input_dtypes()) {
    if (name == type_name) return dtype;
    known += (known.empty() ? "" : ", ") + std::string(type_name);
  }
  throw std::invalid_argument("unknown element type '" + name + "' (known: " + known + ")");
}

std::string input_dtype_name(at::ScalarType dtype) {
  for (const auto& [name, type] : input_dtypes())
    if (type == dtype) return name;
  return c10::toString(dtype);
}

InputSpec parse_input_spec(const std::string& text) {
  const size_t colon = text.find(':');
  InputSpec input;
  input.shape = parse_input_shape(text.substr(0, colon));
  if (colon == std::string::npos) return input;
  try {
    input.dtype = input_dtype_from_name(text.substr(colon + 1));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("invalid input '" + text + "': " + e.what());
  }
  return input;
}

std::string input_spec_string(const InputSpec& input) {
  std::string text;
  for (int64_t d : input.shape) text += (text.empty() ? "" : ",") + std::to_string(d);
  return input.dtype ? text + ":" + input_dtype_name(*input.dtype) : text;
}

std::vector<int64_t> parse_image_size(const std::string& text, int spatial_dims) {
  const auto dims = parse_sizes(text, 'x', "image size", "N, HxW or DxHxW");
  if (dims.size() == 1) return std::vector<int64_t>(spatial_dims, dims[0]);
  if (static_cast<int>(dims.size()) != spatial_dims)
    throw std::invalid_argument("invalid image size '" + text + "': this model takes " +
                                std::to_string(spatial_dims) + " spatial dimensions");
  return dims;
}

std::string image_size_string(const std::vector<int64_t>& image) {
  std::string s;
  for (size_t i = 0; i < image.size(); ++i) s += (i ? "x" : "") + std::to_string(image[i]);
  return s;
}

}  // namespace monet
