#include "monet/module_trace.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/tracer.h>

#include <cctype>
#include <mutex>
#include <stdexcept>

#include "api/atomic_file.h"

namespace monet {
namespace {

// A C++ module type's name without its namespaces (torch::nn::Conv2dImpl -> Conv2dImpl).
std::string short_name(const torch::nn::Module& module) {
  const std::string& name = module.name();
  const size_t colon = name.rfind(':');
  return colon == std::string::npos ? name : name.substr(colon + 1);
}

// A TorchScript class name from a C++ type's (Conv2dImpl_1): letters, digits and
// underscores, unique within the file's compilation unit.
std::string class_name(const torch::nn::Module& module, int number) {
  std::string name = short_name(module);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return "__torch__.monet_traced." + name + "_" + std::to_string(number);
}

// Tracing runs forward once: the module's buffers (batch-norm statistics and their
// count) and the default generator's state are put back as they were when this ends.
class ModuleStateKept {
 public:
  explicit ModuleStateKept(torch::nn::Module& module) {
    for (const torch::Tensor& b : module.buffers())
      if (b.defined()) buffers_.emplace_back(b, b.detach().clone());
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator_state_ = generator.get_state();
  }
  ~ModuleStateKept() {
    torch::NoGradGuard no_grad;
    for (auto& [buffer, saved] : buffers_) buffer.copy_(saved);
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(generator_state_);
  }
  ModuleStateKept(const ModuleStateKept&) = delete;
  ModuleStateKept& operator=(const ModuleStateKept&) = delete;

 private:
  std::vector<std::pair<torch::Tensor, torch::Tensor>> buffers_;
  torch::Tensor generator_state_;
};

// A TorchScript module holding `module`'s parameters, buffers and children under their
// names: the same tensors, so that the tracer records their reads as attribute reads.
torch::jit::Module scripted_mirror(const torch::nn::Module& module,
                                   const std::shared_ptr<torch::jit::CompilationUnit>& unit,
                                   int& classes) {
  torch::jit::Module mirror(c10::QualifiedName(class_name(module, classes++)), unit);
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    if (p.value().defined()) mirror.register_parameter(p.key(), p.value(), /*is_buffer=*/false);
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    if (b.value().defined()) mirror.register_buffer(b.key(), b.value());
  for (const auto& child : module.named_children())
    mirror.register_module(child.key(), scripted_mirror(*child.value(), unit, classes));
  return mirror;
}

// A training batch norm whose running statistics are a cumulative average (momentum
// none): LibTorch computes its factor, 1 / num_batches_tracked, in C++, so a trace holds
// the factor of the traced call for every step.
template <typename Norm>
bool averages_cumulatively(const torch::nn::Module& module) {
  const auto* norm = dynamic_cast<const Norm*>(&module);
  return norm && norm->is_training() && norm->options.track_running_stats() &&
         !norm->options.momentum().has_value();
}

void refuse_cumulative_averages(const torch::nn::Module& module, const std::string& name) {
  namespace nn = torch::nn;
  if (averages_cumulatively<nn::BatchNorm1dImpl>(module) ||
      averages_cumulatively<nn::BatchNorm2dImpl>(module) ||
      averages_cumulatively<nn::BatchNorm3dImpl>(module))
    throw std::invalid_argument(
        "save_traced_module: '" + name +
        "' averages its running statistics cumulatively (momentum none): LibTorch computes "
        "the factor 1 / num_batches_tracked outside the operators a trace records; give it "
        "a momentum");
  for (const auto& child : module.named_children())
    refuse_cumulative_averages(*child.value(),
                               name.empty() ? child.key() : name + "." + child.key());
}

std::vector<std::string> argument_names(size_t inputs) {
  if (inputs == 1) return {"input"};
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs; ++i) names.push_back("input" + std::to_string(i));
  return names;
}

}  // namespace

void save_traced_module(torch::nn::Module& module, const ModuleForward& forward,
                        const std::vector<torch::Tensor>& example_inputs, const std::string& path) {
  if (example_inputs.empty())
    throw std::invalid_argument("save_traced_module: no example input to trace forward on");
  for (size_t i = 0; i < example_inputs.size(); ++i)
    if (!example_inputs[i].defined())
      throw std::invalid_argument("save_traced_module: example input " + std::to_string(i) +
                                  " is an undefined tensor");
  refuse_cumulative_averages(module, "");
  auto unit = std::make_shared<torch::jit::CompilationUnit>();
  int classes = 0;
  torch::jit::Module mirror = scripted_mirror(module, unit, classes);
  torch::jit::Stack inputs(example_inputs.begin(), example_inputs.end());
  const auto traced_forward = [&](torch::jit::Stack stack) -> torch::jit::Stack {
    std::vector<torch::Tensor> tensors;
    for (const c10::IValue& v : stack) tensors.push_back(v.toTensor());
    torch::Tensor out = forward(tensors);
    if (!out.defined()) throw std::invalid_argument("forward returned an undefined tensor");
    return {std::move(out)};
  };
  std::shared_ptr<torch::jit::Graph> graph;
  const auto failed = [&](const char* why) {
    return std::runtime_error("save_traced_module: tracing " + short_name(module) + " for '" +
                              path + "' failed: " + why);
  };
  try {
    const ModuleStateKept kept(module);
    graph = torch::jit::tracer::trace(
                std::move(inputs), traced_forward,
                [](const torch::autograd::Variable&) { return std::string(); },
                /*strict=*/false, /*force_outplace=*/false, &mirror,
                argument_names(example_inputs.size()))
                .first->graph;
  } catch (const c10::Error& e) {
    throw failed(e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw failed(e.what());
  }
  mirror.type()->addMethod(
      unit->create_function(c10::QualifiedName(*mirror.type()->name(), "forward"), graph));
  write_atomically(path, [&](const std::string& tmp) { mirror.save(tmp); });
}

Model load_traced_module(torch::nn::Module& module, const ModuleForward& forward,
                         const std::vector<torch::Tensor>& example_inputs, const std::string& path,
                         ModelSpec spec) {
  if (!spec.model.empty() || !spec.input_shape.empty() || !spec.inputs.empty())
    throw std::invalid_argument(
        "load_traced_module: the spec's model and inputs come from the path and the example "
        "inputs; leave model, input_shape and inputs empty");
  save_traced_module(module, forward, example_inputs, path);
  spec.model = path;
  for (const torch::Tensor& x : example_inputs) {
    ModelInput in{x.sizes().vec(), std::nullopt};  // floating: the model's own type
    if (!x.is_floating_point()) in.dtype = x.scalar_type();
    spec.inputs.push_back(std::move(in));
  }
  Model model = Model::load(spec);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& p : module.named_parameters())
    if (p.value().defined()) tensors.emplace_back(p.key(), p.value());
  for (const auto& b : module.named_buffers())
    if (b.value().defined()) tensors.emplace_back(b.key(), b.value());
  model.share_tensors(tensors);
  return model;
}

}  // namespace monet
