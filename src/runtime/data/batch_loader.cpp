#include "runtime/data/batch_loader.h"

#include <ATen/CPUGeneratorImpl.h>

namespace monet {

BatchLoader::BatchLoader(std::shared_ptr<const ImageDataset> data, LoaderOptions options)
    : data_(std::move(data)), options_(std::move(options)) {
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw DataError("rank " + std::to_string(options_.rank) + " of " +
                    std::to_string(options_.world_size) + " is not a data shard");
  shard_size_ = data_->size() / options_.world_size;
  steps_per_epoch_ = shard_size_ / options_.batch;
  if (steps_per_epoch_ == 0)
    throw DataError(data_->describe() + " has fewer images than one batch of " +
                    std::to_string(options_.batch) +
                    (options_.world_size > 1
                         ? " per rank (" + std::to_string(options_.world_size) + " ranks)"
                         : std::string()));
  thread_ = std::thread([this] { produce(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

int64_t BatchLoader::batch_bytes() const {
  return options_.batch * (3 * options_.height * options_.width * 4 + 8);
}

std::pair<at::Tensor, at::Tensor> BatchLoader::make(int64_t step) {
  const int64_t epoch = step / steps_per_epoch_, first = (step % steps_per_epoch_) * options_.batch;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(options_.seed * 1000003 + epoch);
  const at::Tensor order = at::randperm(data_->size(), gen);
  const int64_t* perm = order.data_ptr<int64_t>();
  at::Tensor images = at::empty({options_.batch, 3, options_.height, options_.width});
  at::Tensor labels = at::empty({options_.batch}, at::kLong);
  int64_t pos = first;
  for (int64_t i = 0; i < options_.batch; ++i) {
    for (int64_t tries = 0;; ++tries, ++pos) {
      if (tries >= shard_size_) throw DataError(data_->describe() + ": no image can be decoded");
      const int64_t index = perm[(pos % shard_size_) * options_.world_size + options_.rank];
      if (unreadable_.count(index)) continue;
      try {
        Sample s = data_->get(index, options_.height, options_.width);
        images[i].copy_(s.image);
        labels[i] = s.label;
        ++pos;
        break;
      } catch (const DataError& e) {
        unreadable_.insert(index);
        if (options_.warn) options_.warn(std::string("skipping an image: ") + e.what());
      }
    }
  }
  return {images, labels};
}

void BatchLoader::produce() {
  for (int64_t step = options_.start_step;; ++step) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        return stop_ || static_cast<int>(ready_.size()) < std::max(1, options_.prefetch);
      });
      if (stop_) return;
    }
    std::pair<at::Tensor, at::Tensor> batch;
    try {
      batch = make(step);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.push_back(std::move(batch));
    changed_.notify_all();
  }
}

std::pair<at::Tensor, at::Tensor> BatchLoader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  auto batch = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  return batch;
}

}  // namespace monet
