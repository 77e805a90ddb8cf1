// Importer::eliminate_dead_code: JIT's dead-code pass, keeping the batch norms that update
// running statistics and dropping in-place writes no one reads.
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <set>
#include <string>
#include <vector>

#include "graph/torchscript/torchscript_importer.h"

namespace monet {
namespace torchscript {

std::vector<JitNode*> Importer::norms_updating_statistics(torch::jit::Graph& jit) {
  static const std::set<std::string> norms = {"aten::batch_norm", "aten::_batch_norm_impl_index",
                                              "aten::native_batch_norm"};
  std::vector<JitNode*> out;
  for (JitNode* node : jit.nodes()) {
    if (!norms.count(node->kind().toQualString()) || node->inputs().size() < 6) continue;
    const auto training = torch::jit::toIValue(node->inputs()[5]);
    const bool has_statistics = !node->inputs()[3]->type()->cast<c10::NoneType>();
    if (training && training->isBool() && training->toBool() && has_statistics) out.push_back(node);
  }
  return out;
}

namespace {

// Whether `v` is a tensor of its own: the result of an operator whose schema says it
// writes nothing and its result aliases none of its arguments (not a view, not in place).
bool is_fresh(const JitValue* v) {
  const c10::FunctionSchema* schema = v->node()->maybeSchema();
  return schema && !schema->is_mutable() && v->offset() < schema->returns().size() &&
         schema->returns()[v->offset()].alias_info() == nullptr;
}

// Whether `node` writes into its first argument only, a tensor of its own that nothing
// else reads (the keepers aside), and its results are unread: the write is unread too.
bool unread_write(const JitNode* node, const std::set<const JitNode*>& keepers) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema || !schema->is_mutable() || node->inputs().empty()) return false;
  const auto& args = schema->arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const bool writes = args[i].alias_info() && args[i].alias_info()->isWrite();
    if (writes != (i == 0)) return false;
  }
  for (const JitValue* out : node->outputs())
    if (!out->uses().empty()) return false;
  const JitValue* target = node->inputs()[0];
  for (const auto& use : target->uses())
    if (use.user != node && !keepers.count(use.user)) return false;
  return is_fresh(target);
}

}  // namespace

void Importer::eliminate_dead_code(torch::jit::Graph& jit) {
  // Each norm's result is read by a node with a side effect (prim::Print, removed at the
  // end). JIT's pass keeps in-place writes into tensors it cannot prove unread (a ReLU
  // after the norm, or after a Linear of the head): those whose write no one reads go too.
  std::set<const JitNode*> keepers;
  for (JitNode* norm : norms_updating_statistics(jit)) {
    JitNode* keeper = jit.create(c10::prim::Print, {norm->output(0)}, 0);
    keeper->insertAfter(norm);
    keepers.insert(keeper);
  }
  for (bool dropped = true; dropped;) {
    torch::jit::EliminateDeadCode(jit.block());
    std::vector<JitNode*> unread;
    for (JitNode* node : jit.nodes())
      if (unread_write(node, keepers)) unread.push_back(node);
    for (JitNode* node : unread) node->destroy();
    dropped = !unread.empty();
  }
  for (const JitNode* keeper : keepers) const_cast<JitNode*>(keeper)->destroy();
}

}  // namespace torchscript
}  // namespace monet
