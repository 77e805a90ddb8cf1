// Decoding image files for training data: PNG (libpng) and JPEG (libjpeg-turbo), told
// apart by their signature, not their name.
#pragma once

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace monet {

/// Bad or unreadable training data; the message names the file or folder.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The image at `path` as RGB, uint8, [height, width, 3] (grey and palette images are
/// expanded, alpha dropped). Throws DataError naming the file when it cannot be read or
/// decoded.
at::Tensor decode_image(const std::string& path);

}  // namespace monet
