#include "runtime/data/image_decode.h"

#include <png.h>
#include <stdio.h>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>
#include <fstream>
#include <memory>

namespace monet {
namespace {

at::Tensor decode_png(const std::string& path) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw DataError("cannot decode PNG '" + path + "': " + image.message);
  image.format = PNG_FORMAT_RGB;
  at::Tensor out = at::empty({image.height, image.width, 3}, at::kByte);
  if (!png_image_finish_read(&image, nullptr, out.data_ptr<uint8_t>(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    throw DataError("cannot decode PNG '" + path + "': " + why);
  }
  return out;
}

struct JpegErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// Corrupt-data warnings are not printed: an image either decodes or is reported once.
void ignore_jpeg_message(j_common_ptr) {}

void on_jpeg_error(j_common_ptr info) {
  auto* err = reinterpret_cast<JpegErrorManager*>(info->err);
  (*info->err->format_message)(info, err->message);
  std::longjmp(err->jump, 1);
}

at::Tensor decode_jpeg(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw DataError("cannot read image '" + path + "'");
  jpeg_decompress_struct info;
  JpegErrorManager err;
  info.err = jpeg_std_error(&err.base);
  err.base.error_exit = on_jpeg_error;
  err.base.output_message = ignore_jpeg_message;
  at::Tensor out;  // assigned only between setjmp and the end of decoding
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&info);
    throw DataError("cannot decode JPEG '" + path + "': " + err.message);
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file.get());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  out = at::empty({info.output_height, info.output_width, 3}, at::kByte);
  const size_t row_bytes = static_cast<size_t>(info.output_width) * 3;
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out.data_ptr<uint8_t>() + info.output_scanline * row_bytes;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return out;
}

}  // namespace

at::Tensor decode_image(const std::string& path) {
  unsigned char signature[8] = {0};
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw DataError("cannot read image '" + path + "'");
    f.read(reinterpret_cast<char*>(signature), sizeof signature);
  }
  if (png_sig_cmp(signature, 0, 8) == 0) return decode_png(path);
  if (signature[0] == 0xFF && signature[1] == 0xD8) return decode_jpeg(path);
  throw DataError("'" + path + "' is neither a PNG nor a JPEG file");
}

}  // namespace monet
