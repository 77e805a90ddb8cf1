#include "planner/heuristics/lean_plans.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cost/simulator.h"
#include "graph/articulation_values.h"
#include "planner/baselines/baseline_plans.h"

namespace monet {
namespace {

// Bytes a backward implementation keeps alive until it runs (what it reads).
int64_t read_bytes(const Graph& g, const Node& n, const BackwardImplInfo& b,
                   const std::string& forward) {
  int64_t bytes = 0;
  for (int k : b.reads_inputs) bytes += g.value(n.inputs[k]).bytes();
  if (b.reads_output) bytes += g.value(n.output).bytes();
  if (b.reads_intermediate) bytes += intermediate_bytes(g, n, forward);
  return bytes;
}

// Whether (bytes, seconds) beats (best_bytes, best_seconds) under `preference`.
bool preferred(ImplementationPreference preference, int64_t bytes, double seconds,
               int64_t best_bytes, double best_seconds) {
  if (preference == ImplementationPreference::kLeastMemory)
    return bytes < best_bytes || (bytes == best_bytes && seconds < best_seconds);
  return seconds < best_seconds || (seconds == best_seconds && bytes < best_bytes);
}

// Whether a node other than `reader` has a backward in `c` that reads value `v`.
bool read_by_another_backward(const Graph& g, const ScheduleChoices& c, int v, int reader) {
  const int producer = g.value(v).producer;
  if (producer >= 0 && producer != reader && backward_reads(g, c, g.node(producer), v)) return true;
  for (int consumer : g.value(v).consumers)
    if (consumer != reader && backward_reads(g, c, g.node(consumer), v)) return true;
  return false;
}

}  // namespace

ScheduleChoices implementation_choices(const Graph& g, const CostModel& costs,
                                       ImplementationPreference preference) {
  ScheduleChoices c = default_choices(g);
  const auto needs_backward = nodes_needing_backward(g);
  for (const auto& n : g.nodes()) {
    const bool sole_reader = !n.inputs.empty() &&
                             g.value(n.inputs[0]).kind == ValueKind::kActivation &&
                             g.value(n.inputs[0]).consumers.size() == 1;
    const auto forwards = forward_impls(g, n);
    const auto backwards = backward_impls(g, n);
    // A node no gradient reaches (one that reads only the batch) runs no backward.
    const auto parts = needs_backward[n.id] ? backward_parts(g, n) : std::vector<BackwardPart>{};
    bool found = false;
    int64_t best_bytes = 0;
    double best_seconds = 0;
    for (const auto& f : forwards) {
      if ((f.inplace && !sole_reader) || f.gist_encoding) continue;
      const ForwardImplInfo recompute = find_forward_impl(forwards, n, out_of_place(f.name));
      const ImplCost& fc = costs.forward(g, n.id, f.name);
      int64_t bytes = fc.workspace_bytes + (f.inplace ? 0 : g.value(n.output).bytes());
      double seconds = fc.seconds;
      std::vector<std::string> chosen;
      bool complete = true;
      for (BackwardPart part : parts) {
        const BackwardImplInfo* pick = nullptr;
        int64_t pick_bytes = 0;
        double pick_seconds = 0;
        for (const auto& b : backwards) {
          if (b.part != part || !compatible(f, b) || !compatible(recompute, b)) continue;
          const ImplCost& bc = costs.backward(g, n.id, part, b.name);
          const int64_t nb = read_bytes(g, n, b, f.name) + bc.workspace_bytes;
          if (!pick || preferred(preference, nb, bc.seconds, pick_bytes, pick_seconds))
            pick = &b, pick_bytes = nb, pick_seconds = bc.seconds;
        }
        if (!pick) {
          complete = false;
          break;
        }
        chosen.push_back(pick->name);
        bytes += pick_bytes;
        seconds += pick_seconds;
      }
      if (!complete) continue;
      if (!found || preferred(preference, bytes, seconds, best_bytes, best_seconds)) {
        found = true, best_bytes = bytes, best_seconds = seconds;
        c.forward[n.id] = f.name;
        if (!parts.empty()) c.backward[n.id] = chosen;
      }
    }
  }
  // In place only where no other node's chosen backward reads the overwritten input (a
  // batch norm's output-reading backward after an in-place ReLU).
  for (const auto& n : g.nodes()) {
    if (n.inputs.empty()) continue;
    const ForwardImplInfo f = find_forward_impl(forward_impls(g, n), n, c.forward[n.id]);
    if (f.inplace && read_by_another_backward(g, c, n.inputs[0], n.id))
      c.forward[n.id] = out_of_place(c.forward[n.id]);
  }
  return c;
}

ScheduleChoices lean_choices(const Graph& g, const CostModel& costs) {
  return implementation_choices(g, costs, ImplementationPreference::kLeastMemory);
}

std::vector<size_t> checkpoint_counts(const Graph& g) {
  std::vector<size_t> counts;
  const size_t cuts = articulation_values(g).size();
  for (size_t k = 1; k <= cuts; k = std::max(k + 1, k * 5 / 4)) counts.push_back(k);
  return counts;
}

std::vector<Plan> checkpoint_family(const Graph& g, const ScheduleChoices& choices,
                                    const std::string& planner) {
  std::vector<Plan> plans = {build_schedule(g, choices, planner)};
  for (size_t k : checkpoint_counts(g))
    plans.push_back(checkpoint_schedule(g, choices, k, planner));
  return plans;
}

Plan best_lean_plan(const Graph& g, const CostModel& costs, int64_t budget_bytes) {
  std::vector<Plan> candidates = checkpoint_family(g, lean_choices(g, costs), "lean");
  // Lean choices minimise each operator's own bytes, which need not minimise the peak
  // (an implementation holding less where the peak is not can shift it): store-all with
  // the default implementations keeps every budget at or above its peak within reach.
  candidates.push_back(store_all_plan(g));
  candidates.back().planner = "lean";
  const Plan* fastest = nullptr;
  const Plan* smallest = nullptr;
  double fastest_seconds = 0;
  int64_t smallest_peak = 0;
  for (const Plan& p : candidates) {
    const SimulationResult s = simulate(g, p, costs);
    if (!smallest || s.peak_bytes < smallest_peak) smallest = &p, smallest_peak = s.peak_bytes;
    if (budget_bytes >= 0 && s.peak_bytes <= budget_bytes &&
        (!fastest || s.seconds < fastest_seconds))
      fastest = &p, fastest_seconds = s.seconds;
  }
  return fastest ? *fastest : *smallest;
}

}  // namespace monet
