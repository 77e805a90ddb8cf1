#include "planner/memory_floor.h"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "cost/simulator.h"
#include "graph/aten_call.h"

namespace monet {
namespace {

// Per node: bytes of the parameter gradients alive whenever its backward runs: its own
// and those of every node downstream of it (whose backward must have run before); under
// fused updates only its own (the others' may be updated already).
std::vector<int64_t> gradients_at_backward(const Graph& g, const std::vector<bool>& needs_grad) {
  std::vector<int64_t> out(g.nodes().size(), 0);
  for (const Node& n : g.nodes()) {
    std::set<int> seen = {n.id}, parameters;
    if (g.update_mode() == UpdateMode::kFused) {
      for (int v : n.inputs)
        if (g.value(v).kind == ValueKind::kParameter && needs_grad[v]) parameters.insert(v);
      for (int v : parameters) out[n.id] += g.value(v).bytes();
      continue;
    }
    std::vector<int> stack = {n.id};
    while (!stack.empty()) {
      const Node& m = g.node(stack.back());
      stack.pop_back();
      for (int v : m.inputs)
        if (g.value(v).kind == ValueKind::kParameter && needs_grad[v]) parameters.insert(v);
      for (int c : g.value(m.output).consumers)
        if (seen.insert(c).second) stack.push_back(c);
    }
    for (int v : parameters) out[n.id] += g.value(v).bytes();
  }
  return out;
}

// Bytes of the distinct activation storages behind `values` (storage_base: a view's
// bytes() (an expand's) can be far more than its storage's; a view of a parameter, buffer
// or input is counted in the iteration's start).
int64_t storage_bytes(const Graph& g, const std::vector<int>& values) {
  std::set<int> storages;
  for (int v : values) {
    const int base = storage_base(g, v);
    if (g.value(base).kind == ValueKind::kActivation) storages.insert(base);
  }
  int64_t bytes = 0;
  for (int s : storages) bytes += g.value(s).bytes();
  return bytes;
}

// The least working set of one forward call of `n` over its implementations (bytes).
int64_t forward_call_bytes(const Graph& g, const CostModel& costs, const Node& n, int64_t inputs) {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const ForwardImplInfo& f : forward_impls(g, n)) {
    if (f.gist_encoding) continue;
    const int64_t output = f.inplace || f.output_aliases_input ? 0 : g.value(n.output).bytes();
    const int64_t intermediate = f.emits_intermediate ? intermediate_bytes(g, n, f.name) : 0;
    least = std::min(least, output + intermediate + costs.forward(g, n.id, f.name).workspace_bytes);
  }
  return inputs + (least == std::numeric_limits<int64_t>::max() ? 0 : least);
}

// The least working set of one backward part of `n` over its implementations (bytes):
// the storages it reads, the output's gradient, the input gradients it returns
// (`input_gradients` bytes) and its workspace.
int64_t backward_call_bytes(const Graph& g, const CostModel& costs, const Node& n,
                            BackwardPart part, int64_t input_gradients) {
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const BackwardImplInfo& b : backward_impls(g, n)) {
    if (b.part != part || b.gist_encoding) continue;
    int64_t bytes = costs.backward(g, n.id, part, b.name).workspace_bytes;
    std::vector<int> read;  // the batch and the parameters are alive from the start
    for (int i : b.reads_inputs) read.push_back(n.inputs[i]);
    if (b.reads_output) read.push_back(n.output);
    bytes += storage_bytes(g, read);
    if (!b.grads_alias_output && part != BackwardPart::kWeight) bytes += input_gradients;
    least = std::min(least, bytes);  // an intermediate read counts as nothing: a lower bound
  }
  return g.value(n.output).bytes() + (least == std::numeric_limits<int64_t>::max() ? 0 : least);
}

}  // namespace

MemoryFloor memory_floor(const Graph& g, const CostModel& costs) {
  const auto needs_backward = nodes_needing_backward(g);
  const std::vector<bool> needs_grad = values_needing_grad(g);
  const std::vector<int64_t> gradients = gradients_at_backward(g, needs_grad);
  int64_t all_gradients = 0;  // all alive at once unless each is freed at its update
  if (g.update_mode() == UpdateMode::kAfterBackward)
    for (int v : g.parameters())
      if (needs_grad[v]) all_gradients += g.value(v).bytes();
  int64_t above_start = all_gradients;
  std::string cause = "every parameter gradient";
  const auto consider = [&](int64_t bytes, const char* pass, const Node& n) {
    if (bytes <= above_start) return;
    above_start = bytes;
    cause = std::string("the ") + pass + " of '" + n.name + "'";
  };
  for (const Node& n : g.nodes()) {
    consider(forward_call_bytes(g, costs, n, storage_bytes(g, n.inputs)), "forward", n);
    if (!needs_backward[n.id]) continue;
    int64_t input_gradients = 0;  // dense tensors of their inputs' shapes
    for (int v : std::set<int>(n.inputs.begin(), n.inputs.end()))
      if (g.value(v).kind == ValueKind::kActivation && needs_grad[v])
        input_gradients += g.value(v).bytes();
    // A part that adds to no parameter's gradient and runs before any that does (an
    // input part first) has none of the node's own parameter gradients alive.
    bool parameter_gradients = g.update_mode() == UpdateMode::kAfterBackward;
    for (BackwardPart part : backward_parts(g, n)) {
      parameter_gradients = parameter_gradients || part != BackwardPart::kInput;
      consider((parameter_gradients ? gradients[n.id] : 0) +
                   backward_call_bytes(g, costs, n, part, input_gradients),
               "backward", n);
    }
  }
  return {iteration_start_bytes(g) + above_start, cause};
}

int64_t memory_floor_bytes(const Graph& g, const CostModel& costs) {
  return memory_floor(g, costs).bytes;
}

}  // namespace monet
