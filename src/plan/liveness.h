// Tensor liveness of a Plan: which tensors each instruction reads and writes, and which
// tensors die right after it. The executor frees exactly these; the simulator and the
// validator use the same analysis, so all three agree on what is alive when.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "plan/plan.h"

namespace monet {

/// The tensors a program manipulates, numbered densely: activation of value v is v;
/// intermediate of node n is V + n; gradient of value v is V + N + v.
struct TensorIds {
  int values = 0;
  int nodes = 0;
  /// The program tensors of `g`.
  static TensorIds of(const Graph& g) {
    return {static_cast<int>(g.values().size()), static_cast<int>(g.nodes().size())};
  }
  int activation(int value) const { return value; }
  int intermediate(int node) const { return values + node; }
  int grad(int value) const { return values + nodes + value; }
  int count() const { return 2 * values + nodes; }
};

struct InstrEffects {
  std::vector<int> reads;        // tensors that must be alive before the instruction
  std::vector<int> writes;       // tensors (re)defined by it
  std::vector<int> accumulates;  // gradients it adds into (alive or not yet)
  std::vector<int> kills;        // tensors it destroys (in-place input, explicit free)
};

struct Liveness {
  TensorIds ids;
  std::vector<InstrEffects> effects;         // per instruction
  std::vector<std::vector<int>> free_after;  // per instruction: tensors dead after it
  /// ParameterEvents::update_after for a graph with UpdateMode::kFused; empty lists
  /// otherwise (the analysis then does not look for it).
  std::vector<std::vector<int>> update_after;
  /// Per instruction: the nodes whose per-node state (NodeState: a batch or layer norm's
  /// saved statistics) is released right after it: a node's last instruction, when that
  /// is one of its backward parts. The state of a node whose last instruction is a
  /// forward lives to the end of the iteration.
  std::vector<std::vector<int>> state_free_after;
};

/// When a plan is done with each parameter, per instruction.
struct ParameterEvents {
  /// The parameters (value ids) whose gradient is complete after the instruction (the last
  /// backward instruction that adds to it). Parameters the plan gives no gradient appear
  /// nowhere.
  std::vector<std::vector<int>> gradient_final_after;
  /// For a graph with UpdateMode::kFused: the parameters the optimizer updates right after
  /// the instruction, their gradient then freed: the last instruction of any node that
  /// reads the parameter (so no instruction reads a parameter after its update, and the
  /// update follows the gradient's last contribution). Empty lists otherwise.
  std::vector<std::vector<int>> update_after;
};
/// `needs_grad` is values_needing_grad(graph).
ParameterEvents parameter_events(const Graph& graph, const Plan& plan,
                                 const std::vector<bool>& needs_grad);

/// Effects of one instruction (implementation names must exist for the node);
/// `needs_grad` is values_needing_grad(graph).
InstrEffects instruction_effects(const Graph& graph, const TensorIds& ids,
                                 const std::vector<bool>& needs_grad, const Instruction& in);

/// Liveness of the whole program. Parameter gradients are results: they die only at
/// their update (UpdateMode::kFused), never otherwise.
Liveness analyze_liveness(const Graph& graph, const Plan& plan);

/// Whether each tensor (TensorIds numbering) is alive right before instruction `at` of the
/// program `live` analyses.
std::vector<bool> alive_before(const Liveness& live, int at);

/// Moves `alive` (as alive_before gives it for instruction `i`) past instruction `i`.
void advance_alive(const Liveness& live, int i, std::vector<bool>* alive);

}  // namespace monet
