// Training images from disk for a Model: an ImageFolder (one sub-folder per class,
// PNG/JPEG files, as torchvision.datasets.ImageFolder reads it) or CIFAR-10's binary
// files, resized to the model's input size and normalised with ImageNet's mean and
// deviation, decoded in a background thread ahead of the training loop (`monet train
// --data`).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace monet {

enum class ImageDataFormat {
  kImageFolder,  // DIR/CLASS/*.{png,jpg,jpeg} (any case); sorted classes get labels 0, 1, ...
  kCifar10,      // DIR/data_batch_{1..5}.bin (whichever exist; at least one)
};
/// "imagefolder" or "cifar10"; throws std::invalid_argument naming them for another.
ImageDataFormat image_data_format_from_name(const std::string& name);

/// An image dataset on disk. Copies share it.
class ImageData {
 public:
  /// Throws std::invalid_argument naming the problem: a missing folder, no class
  /// folders, no images, no CIFAR-10 batch file.
  static ImageData open(const std::string& path, ImageDataFormat format);
  int64_t size() const;     // samples
  int64_t classes() const;  // labels 0 .. classes() - 1
  /// What the data is, for messages ("ImageFolder 'dir': 400 images, 4 classes").
  std::string describe() const;

  struct Impl;

 private:
  friend class ImageBatches;
  std::shared_ptr<const Impl> impl_;
};

struct ImageBatchOptions {
  int64_t batch = 1;     // samples per batch
  int64_t height = 224;  // the size samples are resized to (pixels)
  int64_t width = 224;
  uint64_t seed = 0;       // seeds every epoch's permutation
  int prefetch = 2;        // batches decoded ahead (each held in memory)
  int64_t start_step = 0;  // the first batch is this global step's (resuming)
  /// Data-parallel shard: this process takes samples rank, rank + world_size, ... of
  /// every epoch's permutation, as torch.utils.data.DistributedSampler(shuffle=True,
  /// drop_last=True) does.
  int rank = 0;
  int world_size = 1;
  /// Called (from the loader's thread) with a message for every image that cannot be
  /// decoded; the image is skipped and the next one in the order takes its place.
  std::function<void(const std::string&)> warn;
};

/// Batches of an ImageData in a seeded order per epoch (the same on every data-parallel
/// rank, each taking its own shard), so a run resumed at step s sees exactly the batches
/// an uninterrupted run would.
class ImageBatches {
 public:
  /// Throws std::invalid_argument when the data has fewer samples than a batch.
  ImageBatches(const ImageData& data, const ImageBatchOptions& options);
  ~ImageBatches();
  ImageBatches(ImageBatches&&) noexcept;
  ImageBatches& operator=(ImageBatches&&) noexcept;

  /// The next step's batch: images float32 [batch, 3, height, width], labels int64
  /// [batch]. Rethrows the loader thread's error (e.g. every image unreadable).
  std::pair<torch::Tensor, torch::Tensor> next();
  /// Full batches of this rank's shard per epoch (the last partial batch is dropped).
  int64_t steps_per_epoch() const;
  /// Bytes one batch holds (images and labels).
  int64_t batch_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace monet
