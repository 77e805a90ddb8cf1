// Importing a model traced in Python (torch.jit.trace(model, x).save(path)) as a Graph:
// the TorchScript forward is inlined, its ATen operators become graph nodes and the
// module's parameters and buffers become graph parameters and buffers under their
// state_dict names (load_torchscript_weights copies their values); a parameter that does
// not require gradients (frozen) becomes a buffer, as PyTorch gives it no gradient.
// The output trained (the model's, or one of the tuple or dict it returns) gets a loss and
// its "target" input: cross-entropy over logits [N, C] or per position over [N, C, ...]
// (int64 targets [N] or [N, ...]), mean squared error or binary cross-entropy with
// logits (float targets of the output's shape), or the output summed (no target).
//
// The imported graph is trained: batch norm uses batch statistics and dropout is active
// at its recorded probability whatever mode the module was traced in. Where the model was
// traced in training mode (its `training` attribute), a batch norm or dropout recorded in
// evaluation mode is of a submodule the user put in eval(): it runs as PyTorch trains it
// (a frozen batch norm: running statistics, not updated; no dropout).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/model_config.h"

namespace monet {

/// A TorchScript file that cannot be imported: unreadable, an operator monet does not
/// support (the message names it and its source location), or a shape that does not fit.
/// `op` and `source` are set when a node of the trace is the cause: its operator (e.g.
/// "aten::argmax") and the Python source line that produced it ("file.py:12").
class ImportError : public std::runtime_error {
 public:
  explicit ImportError(const std::string& what, std::string op = "", std::string source = "")
      : std::runtime_error(what), op(std::move(op)), source(std::move(source)) {}
  std::string op;
  std::string source;
};

/// Whether `model` names a TorchScript file (ends in ".pt" or ".pth") rather than a zoo
/// model.
bool is_torchscript_path(const std::string& model);

/// The graph of the module saved at `path`, fed `inputs` (one per argument of forward, in
/// order; shapes batch first, e.g. {8, 3, 224, 224}). Throws ImportError.
Graph import_torchscript(const std::string& path, const std::vector<InputSpec>& inputs,
                         const ImportOptions& options = {});
/// The same for a model of one input of `input_shape`, its element type inferred.
Graph import_torchscript(const std::string& path, const std::vector<int64_t>& input_shape,
                         const ImportOptions& options = {});

}  // namespace monet
