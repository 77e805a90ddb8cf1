// Gist's storage encodings of a stashed activation (Jain et al., 2018), which a
// convolution can keep instead of its input for its weight gradient:
//  - sparse storage (SSDC): compressed sparse rows over rows of 256 elements, so each
//    column index fits in 8 bits ("narrow value optimisation"). Its size depends on how
//    many elements are non-zero, so the planner only knows an upper bound.
//  - half storage (delayed precision reduction): a float16 copy. Lossy.
// The sparse encoding lives in one byte tensor, so an executor slot holds it like any
// activation. CPU tensors (the executor's device).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace monet {

/// Elements per CSR row: the largest count whose column index fits in a uint8.
constexpr int64_t kSparseRowWidth = 256;

/// Bytes of the sparse encoding of `numel` elements of `element_size` bytes of which
/// `nonzeros` are non-zero: int32 row offsets (padded to 8 bytes), the values, and a
/// uint8 column index per value.
int64_t sparse_storage_bytes(int64_t numel, int64_t nonzeros, int64_t element_size);

/// Encodes `x` (any shape, floating point) in the sparse form, exactly.
at::Tensor encode_sparse(const at::Tensor& x);
/// The dense tensor of `shape` and `dtype` that encode_sparse() encoded into `encoded`.
at::Tensor decode_sparse(const at::Tensor& encoded, at::IntArrayRef shape, at::ScalarType dtype);

}  // namespace monet
