// A LibTorch module written in C++ (a torch::nn::Module) as a model monet plans: what
// torch.jit.trace(module, inputs).save(path) does for a Python module.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "monet/monet.h"

namespace monet {

/// The module's forward on one batch, its inputs in forward's order:
///   [&](const std::vector<torch::Tensor>& in) { return net->forward(in[0]); }
using ModuleForward = std::function<torch::Tensor(const std::vector<torch::Tensor>& inputs)>;

/// Records `forward` on `example_inputs` with LibTorch's tracer, in `module`'s current
/// mode (train() for training), and writes it as a TorchScript file at `path`, the file
/// ModelSpec::model takes. Its parameters and buffers are `module`'s, under the names
/// named_parameters() and named_buffers() give them (undefined ones, a Linear's absent
/// bias, left out). As with torch.jit.trace, what forward decides from values (sizes read
/// into C++ integers, branches) is fixed at the example's. Throws std::invalid_argument
/// when there is no example input, one is undefined, or a training batch norm has no
/// momentum (its cumulative average's factor is computed outside the operators a trace
/// records), and std::runtime_error naming `path` when tracing or writing fails; `path`
/// is then untouched (written atomically).
void save_traced_module(torch::nn::Module& module, const ModuleForward& forward,
                        const std::vector<torch::Tensor>& example_inputs, const std::string& path);

/// save_traced_module(module, forward, example_inputs, path), then Model::load of the
/// file with `spec`'s loss and options (its model and inputs are filled in: `path`, and
/// every example input's shape and element type), its parameters and buffers shared with
/// `module` (Model::share_tensors): a plan of the model trains `module`'s own tensors
/// and updates its batch norms' running statistics (not their num_batches_tracked).
/// Throws std::invalid_argument when `spec` names a model or inputs of its own, and
/// what save_traced_module and Model::load throw.
Model load_traced_module(torch::nn::Module& module, const ModuleForward& forward,
                         const std::vector<torch::Tensor>& example_inputs, const std::string& path,
                         ModelSpec spec = {});

}  // namespace monet
