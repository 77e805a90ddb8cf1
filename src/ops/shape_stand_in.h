// Stand-ins for inputs a backward reads only for their shape (a convolution's or an
// average pool's input gradient, a re-run derivative that does not read an input).
#pragma once

#include <ATen/ATen.h>

namespace monet {

/// A contiguous tensor of zeros of `shape` and `options` that holds no memory: on the CPU
/// a read-only anonymous mapping (every page the kernel's shared zero page until read,
/// and reads never allocate; a write faults), released with the tensor. Kernels that take
/// the input only for its sizes and layout (ATen's convolution_backward with only the
/// input gradient requested) then neither copy nor allocate it: a zero-stride view makes
/// ATen materialise a contiguous copy (the input's bytes of workspace, filled), and an
/// uninitialised tensor allocates them. On other devices: an uninitialised tensor.
at::Tensor zero_shape_stand_in(at::IntArrayRef shape, const at::TensorOptions& options);

}  // namespace monet
