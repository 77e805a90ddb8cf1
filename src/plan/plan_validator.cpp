#include "plan/plan_validator.h"

#include <algorithm>
#include <map>

#include "plan/liveness.h"

namespace monet {
namespace {

enum class State { kNever, kAlive, kFreed, kOverwritten, kDropped };

std::string tensor_name(const Graph& g, const TensorIds& ids, int t) {
  if (t < ids.values) return "'" + g.value(t).name + "'";
  if (t < ids.values + ids.nodes)
    return "the intermediate of '" + g.node(t - ids.values).name + "'";
  return "the gradient of '" + g.value(t - ids.values - ids.nodes).name + "'";
}

// A backward reading its node's intermediate reads the kind the last forward instruction
// that emitted one left (argmax indices, 8-bit offsets, a mask...). `in` reads it (its
// liveness effects say so).
void check_intermediate_kind(const Graph& g, const Instruction& in,
                             const std::pair<std::string, int>& emitted_by,
                             const std::string& where) {
  const Node& n = g.node(in.node);
  if (emitted_by.second < 0) return;  // never emitted: the read reports it
  const auto b = find_backward_impl(backward_impls(g, n), n, in.part, in.impl);
  const auto& ok = b.requires_forward;
  if (std::find(ok.begin(), ok.end(), emitted_by.first) != ok.end()) return;
  std::string names;
  for (const auto& f : ok) names += (names.empty() ? "'" : ", '") + f + "'";
  throw PlanError(where + " reads the intermediate forward implementation '" + emitted_by.first +
                  "' emitted at instruction " + std::to_string(emitted_by.second) +
                  "; this backward reads the one of " + names);
}

// Why a tensor in `state` (last changed by instruction `by`) cannot be read.
std::string why_unavailable(State state, int by) {
  switch (state) {
    case State::kNever:
      return "which was never computed";
    case State::kFreed:
      return "which instruction " + std::to_string(by) + " freed";
    case State::kOverwritten:
      return "which instruction " + std::to_string(by) + " overwrote in place";
    default:
      return "which is no longer alive";
  }
}

// Gradient contributions owed to each activation: one per consumer with a backward (a
// consumer whose result has no gradient, an integer one, owes none).
std::vector<int> owed_contributions(const Graph& g, const std::vector<bool>& needs_grad,
                                    const std::vector<bool>& needs_backward) {
  std::vector<int> owed(g.values().size(), 0);
  for (const auto& n : g.nodes())
    for (int v : n.inputs)
      if (g.value(v).kind == ValueKind::kActivation && needs_grad[v] && needs_backward[n.id])
        ++owed[v];
  return owed;
}

// Throws naming the first backward part a node needs that the plan never ran.
void check_every_backward_ran(const Graph& g, const std::vector<bool>& needs_backward,
                              const std::map<std::pair<int, BackwardPart>, int>& backward_done) {
  for (const auto& n : g.nodes()) {
    if (!needs_backward[n.id]) continue;
    for (BackwardPart part : backward_parts(g, n)) {
      if (backward_done.count({n.id, part})) continue;
      std::string what = "'" + n.name + "'";
      for (int v : n.inputs)
        if (g.value(v).kind == ValueKind::kParameter) {
          what = "parameter '" + g.value(v).name + "'";
          break;
        }
      throw PlanError("the plan misses a gradient: no " + std::string(backward_part_name(part)) +
                      " backward of node '" + n.name + "' (needed for " + what + ")");
    }
  }
}

}  // namespace

void validate_plan(const Graph& g, const Plan& plan) {
  if (plan.graph_fingerprint != g.fingerprint())
    throw PlanError("the plan was made for another graph (fingerprint " + plan.graph_fingerprint +
                    ", this one has " + g.fingerprint() + ")");
  const Liveness l = analyze_liveness(g, plan);
  const auto needs_backward = nodes_needing_backward(g);
  const auto needs_grad = values_needing_grad(g);
  std::vector<State> state(l.ids.count(), State::kNever);
  std::vector<int> changed_by(l.ids.count(), -1);  // instruction that last changed the state
  std::map<std::pair<int, BackwardPart>, int> backward_done;
  // Gradient contributions still owed to each activation: one per consumer with a
  // backward (a consumer whose result has no gradient, an integer one, owes none).
  std::vector<int> owed = owed_contributions(g, needs_grad, needs_backward);
  const int loss = g.loss_value();
  state[l.ids.grad(loss)] = State::kAlive;
  // By node: the forward implementation that last emitted its intermediate, and where.
  std::vector<std::pair<std::string, int>> emitted_by(g.nodes().size(), {"", -1});

  for (size_t i = 0; i < plan.program.size(); ++i) {
    const Instruction& in = plan.program[i];
    const std::string where =
        "plan instruction " + std::to_string(i) + " (" + describe(g, in) + ")";
    const auto& e = l.effects[i];
    if (in.kind == InstrKind::kBackward) {
      const Node& n = g.node(in.node);
      if (!needs_backward[n.id]) throw PlanError(where + ": this node needs no backward");
      if (backward_done.count({n.id, in.part}))
        throw PlanError(where + ": this backward already ran at instruction " +
                        std::to_string(backward_done[{n.id, in.part}]));
      if (n.output != loss && owed[n.output] > 0)
        throw PlanError(where + ": the gradient of '" + g.value(n.output).name +
                        "' is not complete (" + std::to_string(owed[n.output]) +
                        " consumer backward(s) still to run)");
      const int intermediate = l.ids.intermediate(n.id);
      if (std::count(e.reads.begin(), e.reads.end(), intermediate))
        check_intermediate_kind(g, in, emitted_by[n.id], where);
    } else if (in.kind == InstrKind::kForward &&
               std::count(e.writes.begin(), e.writes.end(), l.ids.intermediate(in.node))) {
      emitted_by[in.node] = {in.impl, static_cast<int>(i)};
    }
    for (int t : e.reads)
      if (state[t] != State::kAlive)
        throw PlanError(where + " reads " + tensor_name(g, l.ids, t) + ", " +
                        why_unavailable(state[t], changed_by[t]));
    for (int t : e.kills) {
      state[t] = in.kind == InstrKind::kFree ? State::kFreed : State::kOverwritten;
      changed_by[t] = static_cast<int>(i);
    }
    for (int t : e.writes) state[t] = State::kAlive, changed_by[t] = static_cast<int>(i);
    for (int t : e.accumulates) state[t] = State::kAlive, changed_by[t] = static_cast<int>(i);
    if (in.kind == InstrKind::kBackward) {
      const Node& n = g.node(in.node);
      backward_done[{n.id, in.part}] = static_cast<int>(i);
      if (in.part != BackwardPart::kWeight)
        for (int v : n.inputs)
          if (g.value(v).kind == ValueKind::kActivation && needs_grad[v]) --owed[v];
    }
    for (int t : l.free_after[i])
      if (state[t] == State::kAlive)
        state[t] = State::kDropped, changed_by[t] = static_cast<int>(i);
  }
  check_every_backward_ran(g, needs_backward, backward_done);
}

}  // namespace monet
