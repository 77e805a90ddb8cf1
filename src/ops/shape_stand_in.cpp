#include "ops/shape_stand_in.h"

#include <c10/util/accumulate.h>
#include <sys/mman.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace monet {

at::Tensor zero_shape_stand_in(at::IntArrayRef shape, const at::TensorOptions& options) {
  if (!options.device().is_cpu()) return at::empty(shape, options);
  // One byte at least: a mapping of zero bytes is refused.
  const size_t bytes =
      std::max<size_t>(1, c10::multiply_integers(shape) * options.dtype().itemsize());
  void* data =
      ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED)
    throw std::runtime_error("zero_shape_stand_in: mmap of " + std::to_string(bytes) +
                             " bytes failed");
  return at::from_blob(
      data, shape, [bytes](void* p) { ::munmap(p, bytes); }, options);
}

}  // namespace monet
