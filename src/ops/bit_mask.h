// 1-bit packing of boolean masks (the sign masks of intermediate-activated ReLU), bit j
// of byte b holding element 8b + j. CPU tensors (the executor's device).
#pragma once

#include <ATen/ATen.h>

namespace monet {

/// Packs a bool tensor into uint8, 8 elements a byte: ceil(numel / 8) bytes.
at::Tensor pack_bits(const at::Tensor& mask);
/// Inverse of pack_bits for a mask of `shape`.
at::Tensor unpack_bits(const at::Tensor& packed, at::IntArrayRef shape);

}  // namespace monet
