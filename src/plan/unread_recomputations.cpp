#include "plan/unread_recomputations.h"

#include <algorithm>
#include <vector>

#include "plan/liveness.h"

namespace monet {
namespace {

// Per instruction, whether it is a recomputation whose results nothing reads; the scan runs
// backwards, so a removed recomputation's own reads count for nothing.
std::vector<bool> unread_recomputations(const Graph& g, const Plan& plan, const Liveness& l) {
  const size_t count = plan.program.size();
  std::vector<bool> recomputation(count, false), seen(g.nodes().size(), false);
  for (size_t i = 0; i < count; ++i) {
    const Instruction& in = plan.program[i];
    if (in.kind != InstrKind::kForward) continue;
    recomputation[i] = seen[in.node];
    seen[in.node] = true;
  }
  std::vector<bool> unread(count, false), read_later(l.ids.count(), false);
  for (size_t i = count; i-- > 0;) {
    const InstrEffects& e = l.effects[i];
    if (recomputation[i]) {
      bool read = false;
      for (int t : e.writes) read = read || read_later[t];
      if (!read) {
        unread[i] = true;
        continue;
      }
    }
    for (int t : e.writes) read_later[t] = false;
    for (int t : e.kills) read_later[t] = false;
    for (int t : e.reads) read_later[t] = true;
  }
  return unread;
}

// `program` without its explicit frees of tensors that are not alive there (their last
// write was removed, or they died after their last reader before it).
std::vector<Instruction> without_frees_of_the_dead(const Graph& g,
                                                   std::vector<Instruction> program) {
  Plan plan;
  plan.program = std::move(program);
  const Liveness l = analyze_liveness(g, plan);
  std::vector<Instruction> kept;
  kept.reserve(plan.program.size());
  std::vector<bool> alive(l.ids.count(), false);  // before instruction i
  for (size_t i = 0; i < plan.program.size(); ++i) {
    bool keep = plan.program[i].kind != InstrKind::kFree;  // or a free of a live tensor
    for (int t : l.effects[i].kills) keep = keep || alive[t];
    if (keep) kept.push_back(plan.program[i]);
    advance_alive(l, static_cast<int>(i), &alive);  // a dropped free changes nothing
  }
  return kept;
}

}  // namespace

Plan without_unread_recomputations(const Graph& g, Plan plan) {
  for (;;) {
    const std::vector<bool> drop = unread_recomputations(g, plan, analyze_liveness(g, plan));
    if (std::find(drop.begin(), drop.end(), true) == drop.end()) return plan;
    std::vector<Instruction> kept;
    kept.reserve(plan.program.size());
    for (size_t i = 0; i < plan.program.size(); ++i)
      if (!drop[i]) kept.push_back(plan.program[i]);
    plan.program = without_frees_of_the_dead(g, std::move(kept));
  }
}

}  // namespace monet
