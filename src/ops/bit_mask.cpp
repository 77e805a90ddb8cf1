#include "ops/bit_mask.h"

namespace monet {
namespace {

at::Tensor bit_weights() {
  return at::tensor({1, 2, 4, 8, 16, 32, 64, 128}, at::TensorOptions().dtype(at::kByte));
}

}  // namespace

at::Tensor pack_bits(const at::Tensor& mask) {
  const int64_t n = mask.numel();
  at::Tensor bytes = mask.reshape({-1}).to(at::kByte);
  if (n % 8) bytes = at::constant_pad_nd(bytes, {0, 8 - n % 8});
  return bytes.view({-1, 8}).mul_(bit_weights()).sum(1, false, at::kByte);
}

at::Tensor unpack_bits(const at::Tensor& packed, at::IntArrayRef shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return packed.unsqueeze(1)
      .bitwise_and(bit_weights())
      .ne(0)
      .view({-1})
      .narrow(0, 0, n)
      .view(shape);
}

}  // namespace monet
