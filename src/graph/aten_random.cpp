#include "graph/aten_random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <mutex>
#include <string>

namespace monet {
namespace {

bool is_generator_argument(const c10::Argument& argument) {
  c10::TypePtr type = argument.real_type();
  if (const auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  return type->kind() == c10::TypeKind::GeneratorType;
}

bool takes_generator(const c10::FunctionSchema& schema) {
  const auto& arguments = schema.arguments();
  return std::any_of(arguments.begin(), arguments.end(), is_generator_argument);
}

// A generator of `device` seeded with `seed`: the same seed, the same draws.
at::Generator seeded_generator(c10::Device device, uint64_t seed) {
  if (device.is_cpu()) return at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Generator generator;
  {
    at::Generator shared = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(shared.mutex());
    generator = shared.clone();
  }
  generator.set_current_seed(seed);
  return generator;
}

// The device a call draws on: that of its inputs, the CPU for one that reads none.
c10::Device device_of(const std::vector<at::Tensor>& inputs) {
  c10::Device device = at::kCPU;
  for (const at::Tensor& t : inputs)
    if (t.defined()) device = t.device();
  return device;
}

}  // namespace

bool draws_random(const c10::FunctionSchema& schema) {
  if (takes_generator(schema)) return true;
  // randn_like, rand_like, alpha_dropout: they draw from the default generator.
  const auto op = c10::Dispatcher::singleton().findSchema({schema.name(), schema.overload_name()});
  return op && op->hasTag(at::Tag::nondeterministic_seeded);
}

bool drops_out(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& arguments) {
  bool dropout = false, train = false;
  for (size_t i = 0; i < arguments.size() && i < schema.arguments().size(); ++i) {
    const std::string& name = schema.arguments()[i].name();
    if (name == "dropout" && arguments[i].isDouble()) dropout = arguments[i].toDouble() > 0;
    if (name == "train" && arguments[i].isBool()) train = arguments[i].toBool();
  }
  return dropout && train;
}

SeededDraws::SeededDraws(const c10::FunctionSchema& schema, torch::jit::Stack* stack,
                         const std::vector<at::Tensor>& inputs, uint64_t seed) {
  const c10::Device device = device_of(inputs);
  if (takes_generator(schema)) {
    const auto& arguments = schema.arguments();
    for (size_t i = 0; i < stack->size() && i < arguments.size(); ++i)
      if ((*stack)[i].isNone() && is_generator_argument(arguments[i]))
        (*stack)[i] = seeded_generator(device, seed);
    return;
  }
  default_generator_ = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(default_generator_.mutex());
  saved_state_ = default_generator_.get_state();
  default_generator_.set_current_seed(seed);
}

SeededDraws::~SeededDraws() {
  if (!default_generator_.defined()) return;
  std::lock_guard<std::mutex> lock(default_generator_.mutex());
  default_generator_.set_state(saved_state_);
}

}  // namespace monet
