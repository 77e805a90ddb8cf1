// ImageData and ImageBatches: the runtime's datasets and batch loader (runtime/data/)
// behind the public API.
#include <monet/image_data.h>

#include "runtime/data/batch_loader.h"

namespace monet {

struct ImageData::Impl {
  std::shared_ptr<const ImageDataset> dataset;
};

struct ImageBatches::Impl {
  std::unique_ptr<BatchLoader> loader;
};

ImageDataFormat image_data_format_from_name(const std::string& name) {
  if (name == "imagefolder") return ImageDataFormat::kImageFolder;
  if (name == "cifar10") return ImageDataFormat::kCifar10;
  throw std::invalid_argument("unknown data format '" + name + "' (known: imagefolder, cifar10)");
}

ImageData ImageData::open(const std::string& path, ImageDataFormat format) {
  auto impl = std::make_shared<Impl>();
  try {
    impl->dataset =
        format == ImageDataFormat::kCifar10 ? open_cifar10(path) : open_image_folder(path);
  } catch (const DataError& e) {
    throw std::invalid_argument(e.what());
  }
  ImageData d;
  d.impl_ = std::move(impl);
  return d;
}

int64_t ImageData::size() const { return impl_->dataset->size(); }
int64_t ImageData::classes() const { return impl_->dataset->classes(); }
std::string ImageData::describe() const { return impl_->dataset->describe(); }

ImageBatches::ImageBatches(const ImageData& data, const ImageBatchOptions& o)
    : impl_(std::make_unique<Impl>()) {
  LoaderOptions lo;
  lo.batch = o.batch;
  lo.height = o.height;
  lo.width = o.width;
  lo.seed = o.seed;
  lo.prefetch = o.prefetch;
  lo.start_step = o.start_step;
  lo.rank = o.rank;
  lo.world_size = o.world_size;
  lo.warn = o.warn;
  try {
    impl_->loader = std::make_unique<BatchLoader>(data.impl_->dataset, lo);
  } catch (const DataError& e) {
    throw std::invalid_argument(e.what());
  }
}

ImageBatches::~ImageBatches() = default;
ImageBatches::ImageBatches(ImageBatches&&) noexcept = default;
ImageBatches& ImageBatches::operator=(ImageBatches&&) noexcept = default;

std::pair<torch::Tensor, torch::Tensor> ImageBatches::next() { return impl_->loader->next(); }
int64_t ImageBatches::steps_per_epoch() const { return impl_->loader->steps_per_epoch(); }
int64_t ImageBatches::batch_bytes() const { return impl_->loader->batch_bytes(); }

}  // namespace monet
