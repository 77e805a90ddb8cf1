// The TorchScript importer's entry points: a file's inputs checked and its module loaded,
// then translated by the Importer (torchscript_import.cpp).
#include <torch/script.h>

#include "graph/torchscript/torchscript_import.h"
#include "graph/torchscript/torchscript_importer.h"

namespace monet {

namespace {

// Why torch::jit::load refused a file, in one line: an operator no loaded library
// registers is named with where it exists; anything else is the message's first line.
std::string load_failure(const std::string& text) {
  const std::string unknown = "Unknown builtin op: ";
  if (const size_t at = text.find(unknown); at != std::string::npos) {
    std::string op = text.substr(at + unknown.size());
    op = op.substr(0, op.find_first_of(". \n"));
    return "it calls '" + op + "', which no library loaded in this process registers (a " +
           "library's own operators, such as torchvision's, exist where it is loaded: plan "
           "the model from Python with monet.optimize)";
  }
  const size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return "unreadable";
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

bool is_torchscript_path(const std::string& model) {
  for (const std::string suffix : {".pt", ".pth"})
    if (model.size() > suffix.size() && torchscript::ends_with(model, suffix)) return true;
  return false;
}

Graph import_torchscript(const std::string& path, const std::vector<int64_t>& input_shape,
                         const ImportOptions& options) {
  return import_torchscript(path, std::vector<InputSpec>{{input_shape, std::nullopt}}, options);
}

Graph import_torchscript(const std::string& path, const std::vector<InputSpec>& inputs,
                         const ImportOptions& options) {
  if (inputs.empty()) throw ImportError("no input shape given for '" + path + "'");
  for (const InputSpec& in : inputs) {
    // The first input is a batch of samples; a later one may be a batch of labels (a
    // target traced with the loss).
    if (in.shape.size() < (&in == &inputs.front() ? 2u : 1u))
      throw ImportError(&in == &inputs.front()
                            ? "the input shape must give at least the batch and one more "
                              "dimension, got " +
                                  shape_string(in.shape)
                            : "an input shape must give at least the batch, got " +
                                  shape_string(in.shape));
    for (auto d : in.shape)
      if (d < 1)
        throw ImportError("input shape " + shape_string(in.shape) + " has a non-positive size");
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw ImportError("cannot load TorchScript file '" + path +
                      "': " + load_failure(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // torch::jit::ErrorReport: the file's code
    throw ImportError("cannot load TorchScript file '" + path + "': " + load_failure(e.what()));
  }
  return torchscript::Importer(path, std::move(module), inputs, options).run();
}

}  // namespace monet
