// BatchLoader: batches of an ImageDataset decoded in a background thread, `prefetch`
// batches ahead of the training loop. The order is a seeded permutation per epoch (the
// same on every data-parallel rank, each taking its own shard of it), so a run resumed
// at step s sees exactly the batches an uninterrupted run would.
#pragma once

#include <ATen/ATen.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/data/image_dataset.h"

namespace monet {

struct LoaderOptions {
  int64_t batch = 1;     // samples per batch
  int64_t height = 224;  // image size the samples are resized to (pixels)
  int64_t width = 224;
  uint64_t seed = 0;       // seeds every epoch's permutation
  int prefetch = 2;        // batches decoded ahead (each held in memory)
  int64_t start_step = 0;  // the first batch is this global step's
  /// Data-parallel shard: this process takes samples rank, rank + world_size, ... of
  /// every epoch's permutation (its first size / world_size * world_size entries), as
  /// torch.utils.data.DistributedSampler(shuffle=True, drop_last=True) does.
  int rank = 0;
  int world_size = 1;
  /// Called (from the loader's thread) with a message for every image that cannot be
  /// decoded; the image is skipped and the next one in the order takes its place.
  std::function<void(const std::string&)> warn;
};

class BatchLoader {
 public:
  /// Throws DataError when the dataset has fewer samples than a batch.
  BatchLoader(std::shared_ptr<const ImageDataset> data, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  /// The next step's batch: images float32 [batch, 3, height, width], labels int64
  /// [batch]. Rethrows the loader thread's error (e.g. every image unreadable).
  std::pair<at::Tensor, at::Tensor> next();

  /// Full batches of this rank's shard per epoch (the last partial batch is dropped).
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  /// Bytes one batch holds (images and labels).
  int64_t batch_bytes() const;

 private:
  std::pair<at::Tensor, at::Tensor> make(int64_t step);
  void produce();

  std::shared_ptr<const ImageDataset> data_;
  LoaderOptions options_;
  int64_t shard_size_ = 0;  // samples of an epoch this rank takes
  int64_t steps_per_epoch_ = 0;
  std::set<int64_t> unreadable_;  // dataset indices that failed to decode (loader thread)
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<at::Tensor, at::Tensor>> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace monet
