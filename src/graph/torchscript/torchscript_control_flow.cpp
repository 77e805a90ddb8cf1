// Control flow inside TorchScript code a traced model calls (a scripted function or
// module): a trace inlines it with its prim::If and prim::Loop. Where the condition and
// the trip count are constants of the import (they follow shapes: `if x.dim() > 2`, `for
// i in range(x.size(1))`), the branch taken is translated in place and the loop unrolled;
// control flow on values the model computes, and the Python numbers it would branch on
// (`int(t)`, `bool(t > 0)`), are refused, since a plan fixes one computation.
#include <string>
#include <vector>

#include "graph/torchscript/torchscript_importer.h"

namespace monet::torchscript {
namespace {

constexpr const char* kTraceInstead =
    ": a plan fixes one computation; trace that code instead of scripting it (torch.jit.trace "
    "records the branch its example takes)";

}  // namespace

void Importer::translate_branch(JitNode* node) {
  const Entry condition = arg(node, 0);
  if (condition.kind != Entry::kConstant || !condition.constant.isBool())
    fail(node, std::string("a branch on a value the model computes (prim::If in scripted "
                           "code)") +
                   kTraceInstead);
  torch::jit::Block* taken = node->blocks()[condition.constant.toBool() ? 0 : 1];
  for (JitNode* inner : taken->nodes()) translate(inner);
  for (size_t i = 0; i < node->outputs().size(); ++i)
    entries_[node->outputs()[i]] = entry(taken->outputs()[i]);
}

void Importer::translate_loop(JitNode* node) {
  const Entry trips = arg(node, 0), initially = arg(node, 1);
  const auto constant_condition = [](const Entry& e) {
    return e.kind == Entry::kConstant && e.constant.isBool();
  };
  if (trips.kind != Entry::kConstant || !trips.constant.isInt() || !constant_condition(initially))
    fail(node, std::string("a loop whose length follows a value the model computes (prim::Loop "
                           "in scripted code)") +
                   kTraceInstead);
  torch::jit::Block* body = node->blocks()[0];
  std::vector<Entry> carried;
  for (size_t i = 2; i < node->inputs().size(); ++i) carried.push_back(arg(node, i));
  bool going = initially.constant.toBool();
  for (int64_t k = 0; going && k < trips.constant.toInt(); ++k) {
    entries_[body->inputs()[0]] = constant_entry(c10::IValue(k));
    for (size_t j = 0; j < carried.size(); ++j) entries_[body->inputs()[j + 1]] = carried[j];
    for (JitNode* inner : body->nodes()) translate(inner);
    const Entry next = entry(body->outputs()[0]);
    if (!constant_condition(next))
      fail(node, std::string("a loop that stops on a value the model computes (prim::Loop in "
                             "scripted code)") +
                     kTraceInstead);
    going = next.constant.toBool();
    for (size_t j = 0; j < carried.size(); ++j) carried[j] = entry(body->outputs()[j + 1]);
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) entries_[node->outputs()[i]] = carried[i];
}

void Importer::translate_number(JitNode* node, const std::string& kind) {
  if (arg(node, 0).kind != Entry::kConstant)
    fail(node, "'" + kind +
                   "' makes a Python number of a tensor the model computes (int(t), bool(t > 0), "
                   "t.item()), which a plan cannot follow: it fixes one computation; keep it a "
                   "tensor (torch.where, a mask)");
  c10::IValue value = constant(node, 0, "value");
  if (value.isTensor() && kind == "aten::Bool") value = value.toTensor().item<bool>();
  if (value.isTensor() && kind == "aten::Float") value = value.toTensor().item<double>();
  entries_[node->output()] = constant_entry(std::move(value));
}

}  // namespace monet::torchscript
