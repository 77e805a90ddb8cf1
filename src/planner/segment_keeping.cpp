#include "planner/segment_keeping.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "plan/simulator.h"
#include "planner/baseline_plans.h"
#include "planner/lean_plans.h"
#include "planner/schedule_builder.h"

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

}  // namespace

std::vector<Plan> segment_keeping_plans(const Graph& g, const CostModel& costs,
                                        const SegmentKeepingOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto out_of_time = [&] {
    return std::chrono::duration<double>(Clock::now() - t0).count() > o.time_limit_seconds;
  };
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
  std::vector<Plan> best_plans;
  for (const ScheduleChoices& family : {mixed, lean, fastest}) {
    Plan best;
    double best_seconds = 0;
    for (size_t k : checkpoint_counts(g)) {
      if (out_of_time()) break;
      ScheduleChoices c = family;
      c.drop_after_forward = checkpoint_drops(g, k);
      Plan plan = build_schedule(g, c, "segment-keeping");
      SimulationResult sim = simulate(g, plan, costs);
      if (sim.peak_bytes > o.budget_bytes) continue;
      // Whole segments first, then single activations of the segments that did not fit.
      for (const bool single : {false, true})
        for (const Segment& s : segments_of(g, costs, c, single)) {
          if (out_of_time()) break;
          for (int v : s.values) c.drop_after_forward[v] = false;
          Plan kept = build_schedule(g, c, "segment-keeping");
          const SimulationResult ks = simulate(g, kept, costs);
          if (ks.peak_bytes <= o.budget_bytes) {
            plan = std::move(kept), sim = ks;
          } else {
            for (int v : s.values) c.drop_after_forward[v] = true;
          }
        }
      if (best.program.empty() || sim.seconds < best_seconds)
        best = std::move(plan), best_seconds = sim.seconds;
    }
    if (!best.program.empty()) best_plans.push_back(std::move(best));
  }
  return best_plans;
}

}  // namespace monet
