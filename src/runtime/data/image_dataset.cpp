#include "runtime/data/image_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace monet {
namespace fs = std::filesystem;
namespace {

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

class ImageFolder : public ImageDataset {
 public:
  explicit ImageFolder(const std::string& dir) : dir_(dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw DataError("data folder '" + dir + "' does not exist");
    std::vector<fs::path> class_dirs;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_directory()) class_dirs.push_back(e.path());
    std::sort(class_dirs.begin(), class_dirs.end());
    if (class_dirs.empty())
      throw DataError("data folder '" + dir + "' has no class folders (expected DIR/CLASS/IMAGE)");
    for (size_t c = 0; c < class_dirs.size(); ++c) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(class_dirs[c], ec))
        if (e.is_regular_file() && is_image_name(e.path())) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        files_.push_back(f.string());
        labels_.push_back(static_cast<int64_t>(c));
      }
    }
    classes_ = static_cast<int64_t>(class_dirs.size());
    if (files_.empty())
      throw DataError("data folder '" + dir + "' has no .png/.jpg/.jpeg images in its " +
                      std::to_string(classes_) + " class folders");
  }
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  int64_t classes() const override { return classes_; }
  Sample get(int64_t i, int64_t height, int64_t width) const override {
    return {prepare_image(decode_image(files_[i]), height, width), labels_[i]};
  }
  std::string describe() const override {
    return "ImageFolder '" + dir_ + "': " + std::to_string(size()) + " images, " +
           std::to_string(classes_) + " classes";
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
  int64_t classes_ = 0;
};

constexpr int64_t kCifarRecord = 1 + 3 * 32 * 32;

class Cifar10 : public ImageDataset {
 public:
  explicit Cifar10(const std::string& dir) : dir_(dir) {
    for (int b = 1; b <= 5; ++b) {
      const std::string path = dir + "/data_batch_" + std::to_string(b) + ".bin";
      std::ifstream f(path, std::ios::binary);
      if (!f) continue;
      std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
      if (bytes.empty() || bytes.size() % kCifarRecord != 0)
        throw DataError("'" + path + "' is not a CIFAR-10 binary batch (" +
                        std::to_string(bytes.size()) + " bytes, not a multiple of " +
                        std::to_string(kCifarRecord) + ")");
      records_.insert(records_.end(), bytes.begin(), bytes.end());
    }
    if (records_.empty())
      throw DataError("'" + dir + "' has no CIFAR-10 binary batches (data_batch_1.bin ...)");
    for (int64_t i = 0; i < size(); ++i)
      if (static_cast<unsigned char>(records_[i * kCifarRecord]) > 9)
        throw DataError("'" + dir + "': record " + std::to_string(i) + " has label " +
                        std::to_string(static_cast<unsigned char>(records_[i * kCifarRecord])) +
                        " (CIFAR-10 labels are 0-9)");
  }
  int64_t size() const override { return static_cast<int64_t>(records_.size()) / kCifarRecord; }
  int64_t classes() const override { return 10; }
  Sample get(int64_t i, int64_t height, int64_t width) const override {
    const char* r = records_.data() + i * kCifarRecord;
    // Stored channel-major (3 x 32 x 32); prepare_image takes [H, W, 3].
    at::Tensor chw = at::from_blob(const_cast<char*>(r + 1), {3, 32, 32}, at::kByte);
    return {prepare_image(chw.permute({1, 2, 0}), height, width),
            static_cast<int64_t>(static_cast<unsigned char>(r[0]))};
  }
  std::string describe() const override {
    return "CIFAR-10 '" + dir_ + "': " + std::to_string(size()) + " images, 10 classes";
  }

 private:
  std::string dir_;
  std::vector<char> records_;
};

}  // namespace

std::unique_ptr<ImageDataset> open_image_folder(const std::string& dir) {
  return std::make_unique<ImageFolder>(dir);
}
std::unique_ptr<ImageDataset> open_cifar10(const std::string& dir) {
  return std::make_unique<Cifar10>(dir);
}

at::Tensor prepare_image(const at::Tensor& rgb, int64_t height, int64_t width) {
  at::Tensor x = rgb.permute({2, 0, 1}).unsqueeze(0).to(at::kFloat).div_(255.0);
  if (x.size(2) != height || x.size(3) != width)
    x = at::upsample_bilinear2d(x, {height, width}, /*align_corners=*/false);
  const at::Tensor mean = at::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1});
  const at::Tensor std = at::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
  return x.sub_(mean).div_(std).squeeze(0).contiguous();
}

}  // namespace monet
