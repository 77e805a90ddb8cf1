// 1-bit packing of boolean masks (the sign masks of intermediate-activated ReLU), bit j
// of byte b holding element 8b + j. CPU tensors (the executor's device).
#pragma once

#include <ATen/ATen.h>

namespace monet {

/// Bytes of `numel` packed bits: ceil(numel / 8).
inline int64_t packed_bits_bytes(int64_t numel) { return (numel + 7) / 8; }
/// Packs a bool tensor into uint8, 8 elements a byte: packed_bits_bytes(numel) bytes.
at::Tensor pack_bits(const at::Tensor& mask);
/// Inverse of pack_bits for a mask of `shape`.
at::Tensor unpack_bits(const at::Tensor& packed, at::IntArrayRef shape);

}  // namespace monet
