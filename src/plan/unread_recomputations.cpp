#include "plan/unread_recomputations.h"

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

}  // namespace

Plan without_unread_recomputations(const Graph& g, Plan plan) {
  for (;;) {
    const Liveness l = analyze_liveness(g, plan);
    std::vector<bool> drop = unread_recomputations(g, plan, l);
    bool any = false;
    for (bool d : drop) any = any || d;
    if (!any) return plan;
    // An explicit free of a tensor whose last write was removed frees nothing now.
    std::vector<bool> made(l.ids.count(), false);
    for (size_t i = 0; i < plan.program.size(); ++i) {
      const InstrEffects& e = l.effects[i];
      if (plan.program[i].kind == InstrKind::kFree) {
        for (int t : e.kills) drop[i] = drop[i] || !made[t];
      }
      if (drop[i]) continue;
      for (int t : e.kills) made[t] = false;
      for (int t : e.writes) made[t] = true;
    }
    std::vector<Instruction> kept;
    kept.reserve(plan.program.size());
    for (size_t i = 0; i < plan.program.size(); ++i)
      if (!drop[i]) kept.push_back(plan.program[i]);
    plan.program = std::move(kept);
  }
}

}  // namespace monet
