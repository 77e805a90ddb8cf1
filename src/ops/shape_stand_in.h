// Stand-ins for inputs a backward reads only for their shape (a convolution's or an
// average pool's input gradient, a re-run derivative that does not read an input).
#pragma once

#include <ATen/ATen.h>

namespace monet {

/// A contiguous tensor of zeros of `shape` and `options` that holds no memory. On the CPU
/// a read-only anonymous mapping, released with the tensor: reads see the kernel's shared
/// zero page, no memory is committed and the tracker counts nothing; a write faults.
/// Kernels that take the input only for its sizes and layout (ATen's
/// convolution_backward with only the input gradient requested) then neither copy nor
/// allocate it, where a zero-stride view would be copied into a contiguous tensor and an
/// uninitialised one would allocate the input's bytes. On other devices: an uninitialised
/// tensor.
at::Tensor zero_shape_stand_in(at::IntArrayRef shape, const at::TensorOptions& options);

}  // namespace monet
