// The writes of a traced forward into part of a tensor it computes, made functional before
// translation: `x[a:b].zero_()` or `x[..., i:] = y` (an in-place operator on a chain of
// slices and selects of a base tensor) becomes the out-of-place operator on the view and
// slice_scatter / select_scatter of the result back into each base of the chain, and every
// later reader of the base (or of a view in the chain) reads the scattered tensor instead.
// Swin V2 zeroes a slice of its cloned qkv bias so; MViT V2 adds relative positions into a
// slice of its attention. Each is then an ordinary generic operator, with autograd's own
// backward. Writes into the model's parameters, buffers or inputs are left as they are
// (the importer refuses them).
#pragma once

#include <torch/script.h>

namespace monet::torchscript {

/// Rewrites every such write in `jit` (an inlined forward graph). Returns how many. A
/// scatter into a base that nothing reads later is left unused (dead code to eliminate).
int functionalize_view_writes(torch::jit::Graph& jit);

}  // namespace monet::torchscript
