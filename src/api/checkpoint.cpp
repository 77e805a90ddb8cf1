// Training checkpoints (torch::serialize archives): fingerprint, steps, data seed, the
// model's parameters and buffers by name, and the optimizer's own archive.
#include "api/atomic_file.h"
#include "api/model_impl.h"

namespace monet {
namespace {

const char* kMagic = "monet-checkpoint-1";

c10::Dict<std::string, at::Tensor> state_dict(const Model::Impl& m) {
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& v : m.graph.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      d.insert(v.name, m.state.tensor(v.id).detach());
  return d;
}

}  // namespace

void save_checkpoint(const std::string& path, const Model& model,
                     torch::optim::Optimizer& optimizer, uint64_t data_seed) {
  const Model::Impl& m = *impl_of(model);
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string(kMagic)));
  archive.write("fingerprint", c10::IValue(m.graph.fingerprint()));
  archive.write("steps", c10::IValue(m.steps));
  archive.write("data_seed", c10::IValue(static_cast<int64_t>(data_seed)));
  archive.write("tensors", c10::IValue(state_dict(m)));
  torch::serialize::OutputArchive opt;
  optimizer.save(opt);
  archive.write("optimizer", opt);
  write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

uint64_t load_checkpoint(const std::string& path, Model& model,
                         torch::optim::Optimizer& optimizer) {
  Model::Impl& m = *impl_of(model);
  torch::serialize::InputArchive archive;
  c10::IValue format, fingerprint, steps, seed, tensors;
  try {
    archive.load_from(path);
    archive.read("format", format);
    if (!format.isString() || format.toStringRef() != kMagic)
      throw std::invalid_argument("checkpoint '" + path + "' is not a monet checkpoint");
    archive.read("fingerprint", fingerprint);
    archive.read("steps", steps);
    archive.read("data_seed", seed);
    archive.read("tensors", tensors);
  } catch (const c10::Error& e) {
    throw std::invalid_argument("cannot read checkpoint '" + path +
                                "' (truncated or not a checkpoint): " + e.what_without_backtrace());
  }
  if (fingerprint.toStringRef() != m.graph.fingerprint())
    throw std::invalid_argument(
        "checkpoint '" + path + "' is from another model or shape (fingerprint " +
        fingerprint.toStringRef() + ", this model has " + m.graph.fingerprint() + ")");
  const auto saved = c10::impl::toTypedDict<std::string, at::Tensor>(tensors.toGenericDict());
  const auto current = state_dict(m);
  for (const auto& e : current) {
    auto it = saved.find(e.key());
    if (it == saved.end() || it->value().sizes() != e.value().sizes())
      throw std::invalid_argument("checkpoint '" + path + "' lacks tensor '" + e.key() +
                                  "' or has another shape for it");
  }
  torch::serialize::InputArchive opt;
  try {
    archive.read("optimizer", opt);
    optimizer.load(opt);
  } catch (const c10::Error& e) {
    throw std::invalid_argument("checkpoint '" + path + "': its optimizer state does not fit (" +
                                e.what_without_backtrace() + ")");
  }
  torch::NoGradGuard no_grad;
  for (const auto& e : current) e.value().copy_(saved.at(e.key()));
  m.steps = steps.toInt();
  return static_cast<uint64_t>(seed.toInt());
}

}  // namespace monet
