#include "runtime/torchscript_weights.h"

#include <torch/script.h>

#include <set>

namespace monet {

WeightTransfer load_torchscript_weights(const Graph& graph, ModelState& state,
                                        const std::string& path) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot load TorchScript file '" + path +
                             "': " + e.what_without_backtrace());
  }
  std::map<std::string, at::Tensor> file;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) file[p.name] = p.value;
  for (const auto& b : module.named_buffers(/*recurse=*/true)) file[b.name] = b.value;

  // Check everything first so that a failure leaves the state untouched.
  std::set<std::string> used;
  for (const auto& v : graph.values()) {
    if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
    auto it = file.find(v.name);
    if (it == file.end())
      throw std::runtime_error("'" + path + "' has no tensor named '" + v.name + "'");
    if (it->second.sizes().vec() != v.shape)
      throw std::runtime_error("'" + path + "': tensor '" + v.name + "' has shape " +
                               shape_string(it->second.sizes().vec()) + ", the graph expects " +
                               shape_string(v.shape));
    used.insert(v.name);
  }
  WeightTransfer result;
  torch::NoGradGuard no_grad;
  for (const auto& v : graph.values()) {
    if (!used.count(v.name)) continue;
    state.tensor(v.id).copy_(file.at(v.name));
    ++result.copied;
  }
  for (const auto& [name, t] : file)
    if (!used.count(name)) result.unused.push_back(name);
  return result;
}

}  // namespace monet
