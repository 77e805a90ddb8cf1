#include "planner/heuristics/segment_keeping.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "plan/schedule_builder.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/greedy_descent.h"
#include "planner/heuristics/lean_plans.h"

namespace monet {
namespace {

struct Segment {
  std::vector<int> values;  // dropped activations between two kept ones
  double seconds = 0;       // forward time of their producers: what keeping them saves
  int64_t bytes = 0;
};

// The dropped activations of `c`, grouped by the last kept activation before them in
// topological order (`single`: each alone), the most seconds per byte first.
std::vector<Segment> segments_of(const Graph& g, const CostModel& costs, const ScheduleChoices& c,
                                 bool single) {
  std::map<int, Segment> by_start;
  int start = -1;
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    const int v = n.output;
    if (g.value(v).kind != ValueKind::kActivation || is_loss(n.op)) continue;
    if (!c.drop_after_forward[v]) {
      start = v;
      continue;
    }
    Segment& s = by_start[single ? v : start];
    s.values.push_back(v);
    s.seconds += costs.forward(g, id, out_of_place(c.forward[id])).seconds;
    s.bytes += g.value(v).bytes();
  }
  std::vector<Segment> segments;
  for (auto& [first, s] : by_start) segments.push_back(std::move(s));
  std::stable_sort(segments.begin(), segments.end(), [](const Segment& a, const Segment& b) {
    return a.seconds * static_cast<double>(b.bytes) > b.seconds * static_cast<double>(a.bytes);
  });
  return segments;
}

// Profiled seconds of node `id`'s forward and, when it `needs_backward`, its backward
// under `c`.
double node_seconds(const Graph& g, const CostModel& costs, const ScheduleChoices& c, int id,
                    bool needs_backward) {
  double seconds = costs.forward(g, id, c.forward[id]).seconds;
  if (!needs_backward) return seconds;
  const auto parts = backward_parts(g, g.node(id));
  for (size_t k = 0; k < parts.size() && k < c.backward[id].size(); ++k)
    seconds += costs.backward(g, id, parts[k], c.backward[id][k]).seconds;
  return seconds;
}

// Switches nodes of `c` to the implementations of `fastest`, the most seconds saved first,
// each only where the simulated peak stays within `budget` (bytes) and the plan gets
// faster. `plan` and `sim` are `c`'s and are replaced by the result's.
void upgrade_implementations(const Graph& g, const CostModel& costs, const ScheduleChoices& fastest,
                             int64_t budget, const std::function<bool()>& out_of_time,
                             ScheduleChoices* c, Plan* plan, SimulationResult* sim) {
  const int64_t peak_allowed = std::max(budget, sim->peak_bytes);
  double excess = sim->bytes_over(budget);
  std::vector<std::pair<double, int>> savings;
  const auto needs_backward = nodes_needing_backward(g);
  for (const auto& n : g.nodes()) {
    if (c->forward[n.id] == fastest.forward[n.id] && c->backward[n.id] == fastest.backward[n.id])
      continue;
    const bool backward = needs_backward[n.id];
    const double saved = node_seconds(g, costs, *c, n.id, backward) -
                         node_seconds(g, costs, fastest, n.id, backward);
    if (saved > 0) savings.push_back({saved, n.id});
  }
  std::stable_sort(savings.begin(), savings.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [saved, id] : savings) {
    if (out_of_time()) break;
    ScheduleChoices trial = *c;
    trial.forward[id] = fastest.forward[id];
    trial.backward[id] = fastest.backward[id];
    Plan p = build_schedule(g, trial, plan->planner);
    const SimulationResult s = simulate(g, p, costs);
    if (s.peak_bytes > peak_allowed || s.seconds >= sim->seconds) continue;
    const double e = s.bytes_over(budget);
    if (e > excess) continue;
    excess = e, *c = std::move(trial), *plan = std::move(p), *sim = s;
  }
}

// Segment keeping from `starts` (choices of one implementation family), then implementation
// upgrading towards `fastest`: adds to `out` the fastest plan within `budget`, or when none
// of the starts fits, the one of smallest peak.
void search_from(const Graph& g, const CostModel& costs, const ScheduleChoices& fastest,
                 int64_t budget, std::vector<ScheduleChoices> starts,
                 const std::function<bool()>& out_of_time, SegmentKeepingPlans* out) {
  Plan best, smallest;
  ScheduleChoices best_choices, smallest_choices;
  SimulationResult best_sim, smallest_sim;
  for (ScheduleChoices& c : starts) {
    if (out_of_time()) break;
    Plan plan = build_schedule(g, c, "segment-keeping");
    SimulationResult sim = simulate(g, plan, costs);
    if (smallest.program.empty() || sim.peak_bytes < smallest_sim.peak_bytes)
      smallest = plan, smallest_choices = c, smallest_sim = sim;
    if (sim.peak_bytes > budget) continue;
    // Whole segments first, then single activations of the segments that did not fit.
    for (const bool single : {false, true})
      for (const Segment& s : segments_of(g, costs, c, single)) {
        if (out_of_time()) break;
        for (int v : s.values) c.drop_after_forward[v] = false;
        Plan kept = build_schedule(g, c, "segment-keeping");
        const SimulationResult ks = simulate(g, kept, costs);
        if (ks.peak_bytes <= budget) {
          plan = std::move(kept), sim = ks;
        } else {
          for (int v : s.values) c.drop_after_forward[v] = true;
        }
      }
    if (best.program.empty() || sim.seconds < best_sim.seconds)
      best = std::move(plan), best_choices = c, best_sim = sim;
  }
  if (best.program.empty()) {
    if (smallest.program.empty()) return;
    upgrade_implementations(g, costs, fastest, budget, out_of_time, &smallest_choices, &smallest,
                            &smallest_sim);
    out->over_budget.push_back(std::move(smallest));
    return;
  }
  upgrade_implementations(g, costs, fastest, budget, out_of_time, &best_choices, &best, &best_sim);
  out->within_budget.push_back({std::move(best), std::move(best_sim)});
}

}  // namespace

SegmentKeepingPlans segment_keeping_plans(const Graph& g, const CostModel& costs,
                                          const SegmentKeepingOptions& o) {
  const TimeBudget time(o.search_limit, o.time_limit_seconds);
  const auto out_of_time = [&] { return time.over(); };
  const auto first_out_of_time = [&] { return time.clock().past(time.of(o.checkpointing_share)); };
  const ScheduleChoices lean = lean_choices(g, costs);
  const ScheduleChoices fastest =
      implementation_choices(g, costs, ImplementationPreference::kFastest);
  // Memory-lean implementations except for convolutions (the operators whose algorithms
  // differ most in time), which take their fastest.
  ScheduleChoices mixed = lean;
  for (const auto& n : g.nodes())
    if (is_convolution(n.op)) {
      mixed.forward[n.id] = fastest.forward[n.id];
      mixed.backward[n.id] = fastest.backward[n.id];
    }
  SegmentKeepingPlans out;
  const std::vector<const ScheduleChoices*> families = {&mixed, &lean, &fastest};
  const auto store_all = [&](const ScheduleChoices& family) {
    ScheduleChoices c = family;
    c.drop_after_forward.assign(g.values().size(), false);
    return c;
  };
  // Store-all (nothing dropped) and checkpointing at each count, per family.
  for (const ScheduleChoices* family : families) {
    std::vector<ScheduleChoices> starts = {store_all(*family)};
    for (size_t k : checkpoint_counts(g)) {
      starts.push_back(*family);
      starts.back().drop_after_forward = checkpoint_drops(g, k);
    }
    search_from(g, costs, fastest, o.budget_bytes, starts, first_out_of_time, &out);
  }
  // Then greedy descent from store-all, per family, in a share of the time left.
  for (size_t f = 0; f < families.size() && !out_of_time(); ++f) {
    const TimeBudget family(o.search_limit, time.left() / double(families.size() - f));
    int simulations = 0;  // the descent asks once per simulation
    const auto stop = [&] {
      return o.search_limit == SearchLimit::kWork ? ++simulations > o.work_simulations
                                                  : family.over();
    };
    ScheduleChoices descent = greedy_descent(g, costs, *families[f], lean, o.budget_bytes, stop);
    const ScheduleChoices start = store_all(*families[f]);
    if (descent.forward != start.forward || descent.backward != start.backward ||
        descent.drop_after_forward != start.drop_after_forward)
      search_from(g, costs, fastest, o.budget_bytes, {descent}, out_of_time, &out);
  }
  return out;
}

}  // namespace monet
