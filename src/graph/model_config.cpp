#include "graph/model_config.h"

#include <stdexcept>

namespace monet {

std::vector<int64_t> parse_image_size(const std::string& text, int spatial_dims) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('x', start), text.size());
    const std::string part = text.substr(start, end - start);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size())
      throw std::invalid_argument("invalid image size '" + text +
                                  "': expected N, HxW or DxHxW with positive integers");
    if (v <= 0)
      throw std::invalid_argument("invalid image size '" + text + "': sizes must be positive");
    dims.push_back(v);
    start = end + 1;
  }
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
