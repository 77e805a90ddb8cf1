#include "ops/sparse_storage.h"

#include <ATen/Dispatch.h>
#include <c10/util/accumulate.h>

#include <algorithm>
#include <stdexcept>

namespace monet {
namespace {

int64_t rows_of(int64_t numel) { return (numel + kSparseRowWidth - 1) / kSparseRowWidth; }

// Bytes before the values: rows + 1 int32 offsets, padded so float64 values stay aligned.
int64_t header_bytes(int64_t rows) { return (4 * (rows + 1) + 7) / 8 * 8; }

void check_cpu_storage(const at::Tensor& t, const char* what) {
  if (!t.is_cpu())
    throw std::invalid_argument(std::string(what) + ": sparse storage is implemented for CPU " +
                                "tensors (the executor's device)");
}

}  // namespace

int64_t sparse_storage_bytes(int64_t numel, int64_t nonzeros, int64_t element_size) {
  return header_bytes(rows_of(numel)) + nonzeros * (element_size + 1);
}

// Plain loops over the elements: no temporary beyond the encoding itself (ATen's
// masked_select would allocate two int64 prefix sums the size of the input).
at::Tensor encode_sparse(const at::Tensor& x) {
  check_cpu_storage(x, "encode_sparse");
  const at::Tensor c = x.contiguous();
  const int64_t numel = c.numel(), rows = rows_of(numel), header = header_bytes(rows);
  const int64_t element = static_cast<int64_t>(c.element_size());
  at::Tensor encoded;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, c.scalar_type(), "encode_sparse", [&] {
    const scalar_t* in = c.data_ptr<scalar_t>();
    int64_t nnz = 0;
    for (int64_t i = 0; i < numel; ++i) nnz += in[i] != scalar_t(0);
    encoded = at::empty({sparse_storage_bytes(numel, nnz, element)}, c.options().dtype(at::kByte));
    uint8_t* base = encoded.data_ptr<uint8_t>();
    auto* offsets = reinterpret_cast<int32_t*>(base);
    auto* values = reinterpret_cast<scalar_t*>(base + header);
    uint8_t* columns = base + header + nnz * element;
    int64_t k = 0;
    offsets[0] = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t begin = r * kSparseRowWidth, end = std::min(numel, begin + kSparseRowWidth);
      for (int64_t i = begin; i < end; ++i) {
        if (in[i] == scalar_t(0)) continue;
        values[k] = in[i];
        columns[k++] = static_cast<uint8_t>(i - begin);
      }
      offsets[r + 1] = static_cast<int32_t>(k);
    }
  });
  return encoded;
}

at::Tensor decode_sparse(const at::Tensor& encoded, at::IntArrayRef shape, at::ScalarType dtype) {
  check_cpu_storage(encoded, "decode_sparse");
  const int64_t numel = c10::multiply_integers(shape);
  const int64_t rows = rows_of(numel), header = header_bytes(rows);
  const int64_t element = static_cast<int64_t>(c10::elementSize(dtype));
  if (encoded.scalar_type() != at::kByte || encoded.dim() != 1 || !encoded.is_contiguous() ||
      encoded.numel() < header || (encoded.numel() - header) % (element + 1) != 0)
    throw std::invalid_argument("decode_sparse: not a sparse encoding of this shape and dtype");
  const int64_t nnz = (encoded.numel() - header) / (element + 1);
  const uint8_t* base = encoded.data_ptr<uint8_t>();
  const auto* offsets = reinterpret_cast<const int32_t*>(base);
  if (offsets[0] != 0 || offsets[rows] != nnz)
    throw std::invalid_argument("decode_sparse: row offsets do not match the encoding's size");
  at::Tensor dense = at::zeros(shape, encoded.options().dtype(dtype));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "decode_sparse", [&] {
    const auto* values = reinterpret_cast<const scalar_t*>(base + header);
    const uint8_t* columns = base + header + nnz * element;
    scalar_t* out = dense.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = offsets[r]; k < offsets[r + 1]; ++k) {
        const int64_t i = r * kSparseRowWidth + columns[k];
        if (i >= numel) throw std::invalid_argument("decode_sparse: column index out of range");
        out[i] = values[k];
      }
  });
  return dense;
}

}  // namespace monet
