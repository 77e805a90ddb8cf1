#include "planner/heuristics/rematerialization.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "plan/liveness.h"
#include "plan/plan_validator.h"

namespace monet {
namespace {

// A tensor alive across the peak: the activation of `value`, last read before the peak
// at `last_read` (or written there), next read after it at `next_read`.
struct AliveAcross {
  int value = -1;
  int last_read = -1, next_read = -1;
  int64_t bytes = 0;
};

// The activations alive across instruction `peak` whose recomputation can be placed: read
// after the peak in the backward pass (a forward instruction there is a recomputation).
std::vector<AliveAcross> alive_across(const Graph& g, const Liveness& live, int peak,
                                      int first_backward) {
  std::vector<AliveAcross> out;
  std::vector<int> written(live.ids.values, -1), last_read(live.ids.values, -1);
  std::vector<bool> done(live.ids.values, false);
  for (int i = 0; i < static_cast<int>(live.effects.size()); ++i) {
    const InstrEffects& e = live.effects[i];
    for (int t : e.reads) {
      if (t >= live.ids.values || done[t] || written[t] < 0) continue;
      if (i <= peak) {
        last_read[t] = i;
      } else if (written[t] < peak && i > first_backward) {
        out.push_back({t, std::max(written[t], last_read[t]), i, g.value(t).bytes()});
        done[t] = true;
      }
    }
    for (int t : e.writes)
      if (t < live.ids.values && i <= peak) written[t] = i, last_read[t] = -1;
    for (int t : e.kills)
      if (t < live.ids.values && i <= peak) written[t] = -1;
  }
  std::sort(out.begin(), out.end(),
            [](const AliveAcross& a, const AliveAcross& b) { return a.bytes > b.bytes; });
  return out;
}

// Whether a forward implementation makes its output alone: out of place, no intermediate,
// not a view, no encoding.
bool makes_output_alone(const ForwardImplInfo& f) {
  return !f.inplace && !f.emits_intermediate && !f.output_aliases_input && !f.gist_encoding;
}

// The fastest forward implementation of `n` that makes its output alone.
std::optional<std::string> recompute_impl(const Graph& g, const CostModel& costs, const Node& n) {
  std::optional<std::string> best;
  double best_seconds = 0;
  for (const ForwardImplInfo& f : forward_impls(g, n)) {
    if (!makes_output_alone(f)) continue;
    const double seconds = costs.forward(g, n.id, f.name).seconds;
    if (!best || seconds < best_seconds) best = f.name, best_seconds = seconds;
  }
  return best;
}

// The implementations instruction `in` could switch to with less workspace than its own:
// for a forward that makes its output alone, others that do; for a backward, of the same
// part. The validator and the simulator reject what does not fit
// the rest of the plan.
std::vector<std::string> leaner_impls(const Graph& g, const CostModel& costs,
                                      const Instruction& in) {
  std::vector<std::string> out;
  const Node& n = g.node(in.node);
  if (in.kind == InstrKind::kForward) {
    const int64_t own = costs.forward(g, n.id, in.impl).workspace_bytes;
    const std::vector<ForwardImplInfo> impls = forward_impls(g, n);
    if (!makes_output_alone(find_forward_impl(impls, n, in.impl))) return out;
    for (const ForwardImplInfo& f : impls)
      if (makes_output_alone(f) && costs.forward(g, n.id, f.name).workspace_bytes < own)
        out.push_back(f.name);
  } else if (in.kind == InstrKind::kBackward) {
    const int64_t own = costs.backward(g, n.id, in.part, in.impl).workspace_bytes;
    for (const BackwardImplInfo& b : backward_impls(g, n))
      if (b.part == in.part && costs.backward(g, n.id, b.part, b.name).workspace_bytes < own)
        out.push_back(b.name);
  }
  return out;
}

int peak_instruction(const SimulationResult& s) {
  int peak = 0;
  for (size_t i = 0; i < s.steps.size(); ++i)
    if (s.steps[i].peak_bytes > s.steps[peak].peak_bytes) peak = static_cast<int>(i);
  return peak;
}

// Appends to `order` the forward instructions that recompute node `n`'s output where the
// activations `alive` holds are alive: first its inputs that are not (their producers,
// recursively, at most `depth` producers back), then `n`. `made` marks the values the
// order makes. False when an input cannot be made within the depth.
bool recomputation_order(const Graph& g, const CostModel& costs, const std::vector<bool>& alive,
                         const Node& n, int depth, std::vector<bool>* made,
                         std::vector<Instruction>* order) {
  for (int v : n.inputs) {
    if (g.value(v).kind != ValueKind::kActivation || alive[v] || (*made)[v]) continue;
    if (depth == 0) return false;
    const Node& producer = g.node(g.value(v).producer);
    if (!recomputation_order(g, costs, alive, producer, depth - 1, made, order)) return false;
  }
  const std::optional<std::string> impl = recompute_impl(g, costs, n);
  if (!impl) return false;
  order->push_back({InstrKind::kForward, n.id, *impl, BackwardPart::kAll, Slot::kOutput});
  (*made)[n.output] = true;
  return true;
}

}  // namespace

SimulatedPlan rematerialize(const Graph& g, const CostModel& costs, SimulatedPlan current,
                            const RematerializationOptions& o) {
  const SearchClock clock(o.search_limit);
  const auto out_of_time = [&] { return clock.past(o.time_limit_seconds); };
  const bool counted = o.search_limit == SearchLimit::kWork;
  for (int moves = 0; current.simulated.peak_bytes > o.budget_bytes && !out_of_time() &&
                      (!counted || moves < o.work_moves);
       ++moves) {
    const Plan& plan = current.plan;
    int first_backward = 0;
    while (first_backward < static_cast<int>(plan.program.size()) &&
           plan.program[first_backward].kind != InstrKind::kBackward)
      ++first_backward;
    const Liveness live = analyze_liveness(g, plan);
    const int peak = peak_instruction(current.simulated);
    std::vector<AliveAcross> candidates = alive_across(g, live, peak, first_backward);
    if (static_cast<int>(candidates.size()) > o.candidates_per_move)
      candidates.resize(o.candidates_per_move);
    // The move that lowers the bytes over the budget, summed over the instructions, the
    // most: a peak reached at several instructions falls one instruction at a time.
    const double current_over = current.simulated.bytes_over(o.budget_bytes);
    std::optional<SimulatedPlan> best;
    double best_over = 0;
    const auto consider = [&](SimulatedPlan moved) {
      const double over = moved.simulated.bytes_over(o.budget_bytes);
      if (over >= current_over) return;
      if (!best || over < best_over ||
          (over == best_over && moved.simulated.seconds < best->simulated.seconds))
        best = std::move(moved), best_over = over;
    };
    // The peak instruction at an implementation with less workspace.
    for (const std::string& impl : leaner_impls(g, costs, plan.program[peak])) {
      SimulatedPlan moved;
      moved.plan = plan;
      moved.plan.program[peak].impl = impl;
      try {
        validate_plan(g, moved.plan);
        moved.simulated = simulate(g, moved.plan, costs);
      } catch (const PlanError&) {
        continue;  // the rest of the plan needs what the implementation does not keep
      }
      consider(std::move(moved));
    }
    for (const AliveAcross& c : candidates) {
      if (out_of_time()) break;
      const Node& n = g.node(g.value(c.value).producer);
      std::vector<bool> made(live.ids.values, false);
      std::vector<Instruction> recomputation;
      if (!recomputation_order(g, costs, alive_before(live, c.next_read), n,
                               o.recomputed_input_depth, &made, &recomputation))
        continue;
      SimulatedPlan moved;
      moved.plan = plan;
      std::vector<Instruction>& p = moved.plan.program;
      // The recomputation first (the later position), then the free. Inputs it recomputes
      // die after their last reader, as every tensor does.
      p.insert(p.begin() + c.next_read, recomputation.begin(), recomputation.end());
      p.insert(p.begin() + c.last_read + 1,
               {InstrKind::kFree, n.id, "", BackwardPart::kAll, Slot::kOutput});
      try {
        moved.simulated = simulate(g, moved.plan, costs);
      } catch (const PlanError&) {
        continue;  // the recomputation reads a tensor that is no longer alive
      }
      consider(std::move(moved));
    }
    if (!best) break;
    current = std::move(*best);
  }
  return current;
}

}  // namespace monet
