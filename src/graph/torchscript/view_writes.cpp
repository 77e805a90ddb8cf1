#include "graph/torchscript/view_writes.h"

#include <string>
#include <vector>

namespace monet::torchscript {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool is_view_of_part(const Node* n) {
  const std::string kind = n->kind().toQualString();
  return kind == "aten::slice" || kind == "aten::select";
}

// A base the importer may write into: a tensor the forward computes (not the module, a
// parameter or buffer read by prim::GetAttr, nor a graph input).
bool computed(const Value* v) {
  const Node* n = v->node();
  return n->kind() != torch::jit::prim::Param && n->kind() != torch::jit::prim::GetAttr &&
         n->kind() != torch::jit::prim::Constant;
}

// The out-of-place operator of in-place `n` on the same inputs (copy_ -> copy), inserted
// before `n`; null when ATen has none.
Value* out_of_place(torch::jit::Graph& jit, Node* n) {
  std::string name = n->kind().toQualString();
  name.pop_back();
  // Its output is a Tensor (a new value's type); no setType: that inline function casts to
  // c10::DynamicType, whose typeinfo LibTorch does not export (UBSan's vptr check links it).
  Node* o = jit.create(c10::Symbol::fromQualString(name), n->inputs(), 1);
  o->insertBefore(n);
  if (!o->maybeSchema()) {
    o->destroy();
    return nullptr;
  }
  return o->output();
}

// `base` with `part` written where view node `view` (a slice or select of `base`) reads,
// inserted before `at`.
Value* scatter(torch::jit::Graph& jit, Node* view, Value* part, Node* at) {
  const bool slice = std::string(view->kind().toQualString()) == "aten::slice";
  std::vector<Value*> inputs{view->inputs()[0], part};
  for (size_t i = 1; i < view->inputs().size(); ++i) inputs.push_back(view->inputs()[i]);
  Node* s = jit.create(
      c10::Symbol::fromQualString(slice ? "aten::slice_scatter" : "aten::select_scatter"), inputs,
      1);
  s->insertBefore(at);
  return s->output();
}

// Makes in-place node `n` functional when it writes into a chain of views of a computed
// tensor. Returns whether it did.
bool functionalize(torch::jit::Graph& jit, Node* n) {
  const std::string kind = n->kind().toQualString();
  if (kind.rfind("aten::", 0) != 0 || kind.back() != '_' || n->inputs().empty() ||
      n->outputs().size() != 1 || !n->maybeSchema() || !n->schema().is_mutable())
    return false;
  std::vector<Node*> chain;  // the views, innermost first
  Value* base = n->inputs()[0];
  while (is_view_of_part(base->node())) {
    chain.push_back(base->node());
    base = base->node()->inputs()[0];
  }
  if (chain.empty() || !computed(base)) return false;
  Value* written = out_of_place(jit, n);
  if (!written) return false;
  // The written view, then each base up the chain, as its later readers see it.
  n->output()->replaceAllUsesWith(written);
  Value* part = written;
  for (Node* view : chain) {
    view->output()->replaceAllUsesAfterNodeWith(n, part);
    part = scatter(jit, view, part, n);
  }
  base->replaceAllUsesAfterNodeWith(n, part);
  n->destroy();
  return true;
}

}  // namespace

int functionalize_view_writes(torch::jit::Graph& jit) {
  std::vector<Node*> nodes(jit.nodes().begin(), jit.nodes().end());
  int rewritten = 0;
  for (Node* n : nodes) rewritten += functionalize(jit, n);
  return rewritten;
}

}  // namespace monet::torchscript
