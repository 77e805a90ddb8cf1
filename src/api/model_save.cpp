// Model::save: trained weights back in the format the model came from.
#include <torch/script.h>
#include <torch/serialize.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "api/atomic_file.h"
#include "api/model_impl.h"

namespace monet {
namespace {

const std::string kRunningMean = "running_mean";

// Batch-norm modules that train (kBatchNorm nodes, by their running_mean buffer) and
// their num_batches_tracked name, once per node: one kept in evaluation mode counts no
// step, one applied twice two.
std::vector<std::string> batch_norm_counters(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& node : g.nodes()) {
    if (node.op != OpKind::kBatchNorm) continue;
    for (int id : node.inputs) {
      const std::string& n = g.value(id).name;
      if (g.value(id).kind == ValueKind::kBuffer && n.size() >= kRunningMean.size() &&
          n.compare(n.size() - kRunningMean.size(), kRunningMean.size(), kRunningMean) == 0)
        out.push_back(n.substr(0, n.size() - kRunningMean.size()) + "num_batches_tracked");
    }
  }
  return out;
}

void save_torchscript(const Model::Impl& m, const std::string& path) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(m.spec.model);
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot reload '" + m.spec.model +
                             "' to save into: " + e.what_without_backtrace());
  }
  std::map<std::string, at::Tensor> file;
  for (const auto& p : module.named_parameters(true)) file[p.name] = p.value;
  for (const auto& b : module.named_buffers(true)) file[b.name] = b.value;
  torch::NoGradGuard no_grad;
  for (const auto& v : m.graph.values()) {
    if (v.kind != ValueKind::kParameter && v.kind != ValueKind::kBuffer) continue;
    file.at(v.name).copy_(m.state.tensor(v.id));
  }
  for (const auto& counter : batch_norm_counters(m.graph)) {
    auto it = file.find(counter);
    if (it != file.end()) it->second.add_(m.steps);
  }
  write_atomically(path, [&](const std::string& tmp) { module.save(tmp); });
}

void save_state_dict(const Model::Impl& m, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& v : m.graph.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      dict.insert(v.name, m.state.tensor(v.id).detach());
  std::map<std::string, int64_t> counts;  // a batch norm applied twice counts two a step
  for (const auto& counter : batch_norm_counters(m.graph)) counts[counter] += m.steps;
  for (const auto& [counter, count] : counts)
    dict.insert(counter, at::scalar_tensor(count, at::kLong));
  const std::vector<char> bytes = torch::pickle_save(dict);
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) throw std::runtime_error("cannot write '" + tmp + "'");
  });
}

}  // namespace

void Model::save(const std::string& path) const {
  if (is_traced_model(impl_->spec))
    save_torchscript(*impl_, path);
  else
    save_state_dict(*impl_, path);
}

}  // namespace monet
