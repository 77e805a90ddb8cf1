// Training data sources: an ImageFolder (one sub-folder per class, PNG/JPEG files, as
// torchvision.datasets.ImageFolder reads it) and CIFAR-10's binary files. Samples come
// resized to the model's input size and normalised with ImageNet's mean and deviation.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/image_decode.h"

namespace monet {

struct Sample {
  at::Tensor image;   // float32 [3, height, width], normalised
  int64_t label = 0;  // class index
};

class ImageDataset {
 public:
  virtual ~ImageDataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t classes() const = 0;
  /// Sample `index` (0 <= index < size()) at `height` x `width`. Throws DataError naming
  /// the file when it cannot be decoded.
  virtual Sample get(int64_t index, int64_t height, int64_t width) const = 0;
  /// What the data is, for messages ("ImageFolder 'dir': 400 images, 4 classes").
  virtual std::string describe() const = 0;
};

/// `dir`/CLASS/*.{png,jpg,jpeg} (any case); classes in sorted order get labels 0, 1, ...
/// Throws DataError when the folder is missing, has no class folders or no images.
std::unique_ptr<ImageDataset> open_image_folder(const std::string& dir);

/// CIFAR-10's binary version: `dir`/data_batch_{1..5}.bin (whichever exist; at least
/// one), 10,000 records of a label byte and a 3x32x32 image each. Throws DataError.
std::unique_ptr<ImageDataset> open_cifar10(const std::string& dir);

/// uint8 [H, W, 3] -> float32 [3, height, width]: bilinear resize, ImageNet normalisation.
at::Tensor prepare_image(const at::Tensor& rgb, int64_t height, int64_t width);

}  // namespace monet
