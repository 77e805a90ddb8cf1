#include "graph/torchscript/instance_norm_statistics.h"

#include <torch/csrc/jit/ir/constants.h>

#include <string>
#include <vector>

namespace monet::torchscript {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool is_none(const Value* v) {
  const auto c = torch::jit::toIValue(v);
  return c && c->isNone();
}

// Operator `name` on `inputs`, inserted before `at`; its schema must match (the pass builds
// only calls ATen has).
Value* call(torch::jit::Graph& jit, const char* name, const std::vector<Value*>& inputs, Node* at) {
  Node* n = jit.create(c10::Symbol::fromQualString(name), inputs, 1);
  n->insertBefore(at);
  TORCH_CHECK(n->maybeSchema(), "no schema of ", name, " for the instance-norm update");
  return n->output();
}

// `statistic` of each instance ([N, C] from x flattened to [N, C, L]) averaged over the
// batch ([C]), folded into `running` in place: running * (1 - m) + mean * m.
void fold_into(torch::jit::Graph& jit, Node* norm, Value* per_instance, Value* running,
               double momentum) {
  Value* over_batch = jit.insertConstant(std::vector<int64_t>{0});
  Value* no = jit.insertConstant(false);
  Value* none = jit.insertConstant(c10::IValue());
  Value* batch = call(jit, "aten::mean", {per_instance, over_batch, no, none}, norm);
  Value* kept = call(jit, "aten::mul_", {running, jit.insertConstant(1.0 - momentum)}, norm);
  call(jit, "aten::add_", {kept, batch, jit.insertConstant(momentum)}, norm);
}

bool expose(torch::jit::Graph& jit, Node* norm) {
  if (std::string(norm->kind().toQualString()) != "aten::instance_norm" ||
      norm->inputs().size() < 8)
    return false;
  const auto use_input_stats = torch::jit::toIValue(norm->inputs()[5]);
  const auto momentum = torch::jit::toIValue(norm->inputs()[6]);
  if (!use_input_stats || !use_input_stats->isBool() || !use_input_stats->toBool() || !momentum ||
      !momentum->isDouble() || is_none(norm->inputs()[3]) || is_none(norm->inputs()[4]))
    return false;
  torch::jit::WithInsertPoint guard(norm);  // constants before the call
  Value* x = norm->inputs()[0];
  Value* flat = call(jit, "aten::flatten",
                     {x, jit.insertConstant(int64_t{2}), jit.insertConstant(int64_t{-1})}, norm);
  Value* over_space = jit.insertConstant(std::vector<int64_t>{2});
  Value* mean =
      call(jit, "aten::mean",
           {flat, over_space, jit.insertConstant(false), jit.insertConstant(c10::IValue())}, norm);
  Value* var = call(jit, "aten::var",
                    {flat, over_space, jit.insertConstant(true), jit.insertConstant(false)}, norm);
  fold_into(jit, norm, mean, norm->inputs()[3], momentum->toDouble());
  fold_into(jit, norm, var, norm->inputs()[4], momentum->toDouble());
  Value* none = jit.insertConstant(c10::IValue());
  norm->replaceInput(3, none);
  norm->replaceInput(4, none);
  return true;
}

}  // namespace

int expose_instance_norm_statistics(torch::jit::Graph& jit) {
  std::vector<Node*> nodes(jit.nodes().begin(), jit.nodes().end());
  int rewritten = 0;
  for (Node* n : nodes) rewritten += expose(jit, n);
  return rewritten;
}

}  // namespace monet::torchscript
