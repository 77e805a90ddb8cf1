// Instance norm's running statistics, made explicit before translation. ATen's
// instance_norm with use_input_stats and running statistics (nn.InstanceNorm with
// track_running_stats=True, in training) updates them inside the call, a side effect its
// schema does not declare: as a generic node it would be lost (or repeated at every
// recomputation). The pass rewrites each such call into the call without running
// statistics (the same output: it normalises by each instance's own statistics) and the
// update written as ATen does it, in place on the buffers:
//   running_mean = (1 - momentum) * running_mean + momentum * mean_n(mean_hw(x))
//   running_var  = (1 - momentum) * running_var  + momentum * mean_n(var_hw(x, unbiased))
// which the importer translates as any in-place update of a buffer (computed out of place,
// the buffer taking its value once per iteration).
#pragma once

#include <torch/script.h>

namespace monet::torchscript {

/// Rewrites every such call in `jit` (an inlined forward graph). Returns how many.
int expose_instance_norm_statistics(torch::jit::Graph& jit);

}  // namespace monet::torchscript
