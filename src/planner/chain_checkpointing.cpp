#include "planner/chain_checkpointing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "planner/baseline_plans.h"
#include "planner/lean_plans.h"
#include "planner/rematerialization.h"
#include "planner/schedule_builder.h"

namespace monet {
namespace {

// One segment of the chain: its nodes, what running them costs, and the bytes its steps
// need beyond the checkpoint it starts from and the gradient of its output.
struct Segment {
  std::vector<int> nodes;       // node ids, in topological order
  double forward_seconds = 0;   // one forward of every node (out of place)
  double backward_seconds = 0;  // every backward part of the nodes needing one
  int64_t output_bytes = 0;     // its output, the next segment's checkpoint (0: the last)
  int64_t kept_bytes = 0;       // every output and intermediate: a run that keeps all
  int64_t sweep_bytes = 0;      // the most alive during a run that keeps only its output
  int64_t backward_bytes = 0;   // kept_bytes plus the most one backward call adds
  int64_t gradient_bytes = 0;   // its parameters' gradients, alive once its backward ran
  /// Its side value (chain_layout.h), alive while it is processed; its gradient too once
  /// the stretch's last segment was back-propagated (0: it starts at an articulation value).
  int64_t side_bytes = 0;
  int stretch = 0;      // its stretch
  int stretch_end = 0;  // the last segment of its stretch
};

// How a schedule's recomputations run: as the forward pass (the memory-lean choices,
// in place where they are), or out of place, as the MONeT program expresses them (warm
// starts).
enum class Recomputation { kLean, kOutOfPlace };

// Fills a segment's seconds and bytes from its nodes, replaying the liveness of its
// tensors: a run keeping all holds what the segment's backward reads and its output; a
// sweep holds each output until its last forward reader; the backward frees a tensor
// after its last backward reader.
void measure(const Graph& g, const CostModel& costs, const ScheduleChoices& c,
             const std::vector<bool>& needs_backward, Segment* s) {
  std::vector<int> index(g.nodes().size(), -1);  // place in the segment
  for (size_t i = 0; i < s->nodes.size(); ++i) index[s->nodes[i]] = static_cast<int>(i);
  const int size = static_cast<int>(s->nodes.size());
  std::vector<int64_t> out(size), intermediate(size), workspace(size), backward(size, 0);
  std::vector<int> last_forward(size), last_backward(size, size);  // size: none
  std::vector<bool> kept(size, false), kept_intermediate(size, false);
  for (int i = 0; i < size; ++i) {
    const Node& n = g.node(s->nodes[i]);
    for (int v : n.inputs)
      if (g.value(v).kind == ValueKind::kParameter) s->gradient_bytes += g.value(v).bytes();
    const ForwardImplInfo f = find_forward_impl(forward_impls(g, n), n, c.forward[n.id]);
    const ImplCost& fc = costs.forward(g, n.id, f.name);
    s->forward_seconds += fc.seconds;
    out[i] = f.inplace || f.output_aliases_input ? 0 : g.value(n.output).bytes();
    intermediate[i] = f.emits_intermediate ? intermediate_bytes(g, n, f.name) : 0;
    workspace[i] = fc.workspace_bytes;
    last_forward[i] = i;
    for (int consumer : g.value(n.output).consumers)
      last_forward[i] = std::max(last_forward[i], index[consumer] < 0 ? size : index[consumer]);
    kept[i] = last_forward[i] == size;  // the segment's output
    if (!needs_backward[n.id]) continue;
    int64_t input_grads = 0;
    for (int v : n.inputs)
      if (g.value(v).kind == ValueKind::kActivation) input_grads += g.value(v).bytes();
    const auto impls = backward_impls(g, n);
    const auto parts = backward_parts(g, n);
    for (size_t k = 0; k < parts.size(); ++k) {
      const BackwardImplInfo b = find_backward_impl(impls, n, parts[k], c.backward[n.id][k]);
      const ImplCost& bc = costs.backward(g, n.id, parts[k], b.name);
      s->backward_seconds += bc.seconds;
      backward[i] =
          std::max(backward[i], g.value(n.output).bytes() + input_grads + bc.workspace_bytes);
      // The segment's tensors it reads stay from the forward run until it has run.
      const auto reads = [&](int place) {
        kept[place] = true;
        last_backward[place] = std::min(last_backward[place], i);
      };
      for (int r : b.reads_inputs) {
        const int producer = g.value(n.inputs[r]).producer;
        if (producer >= 0 && index[producer] >= 0) reads(index[producer]);
      }
      if (b.reads_output) reads(i);
      kept_intermediate[i] = kept_intermediate[i] || b.reads_intermediate;
    }
  }
  // Forward runs: keeping all (the segment's backward reads), and sweeping.
  int64_t keeping = 0, sweeping = 0, forward_peak = 0;
  for (int i = 0; i < size; ++i) {
    forward_peak = std::max(forward_peak, keeping + out[i] + intermediate[i] + workspace[i]);
    s->sweep_bytes = std::max(s->sweep_bytes, sweeping + out[i] + intermediate[i] + workspace[i]);
    keeping += out[i] + (kept_intermediate[i] ? intermediate[i] : 0);
    sweeping += out[i];
    for (int j = 0; j <= i; ++j) {
      if (last_forward[j] != i) continue;
      sweeping -= out[j];
      if (!kept[j]) keeping -= out[j];
    }
  }
  s->kept_bytes = keeping;
  // The backward, in reverse: what it reads until its last reader, and each call's own.
  int64_t backward_peak = 0;
  for (int i = size - 1; i >= 0; --i) {
    backward_peak = std::max(backward_peak, keeping + backward[i]);
    if (kept_intermediate[i]) keeping -= intermediate[i];
    for (int j = 0; j <= i; ++j)
      if (last_backward[j] == i && last_forward[j] != size) keeping -= out[j];
  }
  s->backward_bytes = std::max(forward_peak, backward_peak);
}

// The dynamic program over the chain: cost(s, t, m) is the least time to back-propagate
// through segments s..t holding at most m memory levels besides segment s's input
// checkpoint, the gradient of segment t's output and, when s starts inside a stretch, its
// side value and that value's gradient; choice(s, t, m) is 0 for "run s
// keeping all, go on from its output" and k (s < k <= t) for "sweep s..k-1, checkpoint
// segment k-1's output".
class ChainProgram {
 public:
  ChainProgram(const std::vector<Segment>& segments, int levels)
      : seg_(segments), size_(static_cast<int>(segments.size())), levels_(levels) {
    int64_t total = 0;
    later_gradients_.assign(size_ + 1, 0);
    for (int i = size_ - 1; i >= 0; --i)
      later_gradients_[i] = later_gradients_[i + 1] + seg_[i].gradient_bytes;
    for (const Segment& s : seg_) total += s.backward_bytes;
    unit_ = std::max<double>(1.0, static_cast<double>(total + later_gradients_[0]) / levels_);
    cost_.assign(static_cast<size_t>(size_) * size_ * (levels_ + 1), kNone);
    choice_.assign(cost_.size(), -1);
    for (int length = 0; length < size_; ++length)
      for (int s = 0; s + length < size_; ++s)
        for (int m = 0; m <= levels_; ++m) solve(s, s + length, m);
  }

  int levels() const { return levels_; }
  bool feasible(int m) const { return size_ > 0 && at(0, size_ - 1, m) < kNone; }

  /// The schedule at memory level m as (segment, forward) steps: `forward` true runs the
  /// segment's nodes forward, false its backward.
  std::vector<std::pair<int, bool>> schedule(int m) const {
    std::vector<std::pair<int, bool>> steps;
    emit(0, size_ - 1, m, &steps);
    return steps;
  }

 private:
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  size_t index(int s, int t, int m) const {
    return (static_cast<size_t>(s) * size_ + t) * (levels_ + 1) + m;
  }
  double at(int s, int t, int m) const {
    return m < 0 ? kNone : cost_[index(s, t, std::min(m, levels_))];
  }
  int level(int64_t bytes) const { return static_cast<int>(std::ceil(bytes / unit_)); }
  int gradient(int t) const { return level(seg_[t].output_bytes); }

  // Bytes the problem of segment k holds beyond what that of s (s < k) holds: k's side
  // value, and its gradient, unless s's problem holds them (s inside the same stretch; at
  // its start, the side value is s's own input).
  int64_t side_added(int s, int k) const {
    const Segment& b = seg_[k];
    if (b.side_bytes == 0) return 0;
    if (seg_[s].stretch != b.stretch) return 2 * b.side_bytes;
    return seg_[s].side_bytes > 0 ? 0 : b.side_bytes;
  }
  // The gradient of k's side value, made when k..t was back-propagated (t ends k's stretch),
  // alive while s..k-1 are, unless s's problem holds it already.
  int64_t side_gradient_left(int s, int k, int t) const {
    const Segment& b = seg_[k];
    if (b.side_bytes == 0 || t < b.stretch_end) return 0;
    return seg_[s].stretch == b.stretch && seg_[s].side_bytes > 0 ? 0 : b.side_bytes;
  }
  // Memory levels of the rest s+1..t after running s keeping all.
  int rest_levels(int s, int t, int m) const {
    return m - level(seg_[s].kept_bytes) - level(side_added(s, s + 1));
  }
  // Memory levels of k..t after sweeping s..k-1, and of s..k-1 afterwards.
  int later_levels(int s, int k, int m) const {
    return m - level(seg_[k - 1].output_bytes) - level(side_added(s, k));
  }
  int earlier_levels(int s, int k, int t, int m) const {
    return m + gradient(t) - level(seg_[k - 1].output_bytes) - level(side_gradient_left(s, k, t));
  }

  void solve(int s, int t, int m) {
    const Segment& a = seg_[s];
    double best = kNone;
    int pick = -1;
    // Run s keeping all; its backward runs once the rest is done (the gradient of its
    // output then replaces that of t's), beside the parameter gradients of every later
    // segment and its own.
    const int64_t backward =
        a.backward_bytes + later_gradients_[s] + (s < t ? side_gradient_left(s, s + 1, t) : 0);
    if (level(backward) <= m + (s < t ? gradient(t) - gradient(s) : 0)) {
      const double rest = s < t ? at(s + 1, t, rest_levels(s, t, m)) : 0;
      if (rest < kNone) best = a.forward_seconds + rest + a.backward_seconds, pick = 0;
    }
    // Sweep s..k-1 keeping only segment k-1's output (and the side values the sweep enters).
    double sweep = 0;
    int sweep_level = 0;
    for (int k = s + 1; k <= t; ++k) {
      const Segment& swept = seg_[k - 1];
      const int64_t side = swept.stretch != a.stretch ? swept.side_bytes : 0;
      sweep += swept.forward_seconds;
      sweep_level =
          std::max(sweep_level, level(swept.sweep_bytes + side + later_gradients_[t + 1]));
      if (sweep_level > m) break;
      const double later = at(k, t, later_levels(s, k, m));
      if (later == kNone) continue;
      const double earlier = at(s, k - 1, earlier_levels(s, k, t, m));
      if (sweep + later + earlier < best) best = sweep + later + earlier, pick = k;
    }
    cost_[index(s, t, m)] = best;
    choice_[index(s, t, m)] = pick;
  }

  void emit(int s, int t, int m, std::vector<std::pair<int, bool>>* steps) const {
    m = std::min(m, levels_);
    const int k = choice_[index(s, t, m)];
    if (k == 0) {
      steps->push_back({s, true});
      if (s < t) emit(s + 1, t, rest_levels(s, t, m), steps);
      steps->push_back({s, false});
      return;
    }
    for (int i = s; i < k; ++i) steps->push_back({i, true});
    emit(k, t, later_levels(s, k, m), steps);
    emit(s, k - 1, earlier_levels(s, k, t, m), steps);
  }

  const std::vector<Segment>& seg_;
  int size_, levels_;
  double unit_ = 1;  // bytes per memory level
  // By segment: the parameter gradients of the segments from it on (bytes).
  std::vector<int64_t> later_gradients_;
  std::vector<double> cost_;
  std::vector<int> choice_;
};

// The plan of a schedule of (segment, forward) steps.
Plan schedule_plan(const Graph& g, const std::vector<Segment>& segments,
                   const ScheduleChoices& choices, const std::vector<bool>& needs_backward,
                   const std::vector<std::pair<int, bool>>& steps, Recomputation recomputation) {
  Plan plan;
  plan.graph_fingerprint = g.fingerprint();
  plan.planner = "chain";
  std::vector<bool> computed(g.nodes().size(), false);
  for (const auto& [segment, forward] : steps) {
    const std::vector<int>& nodes = segments[segment].nodes;
    if (forward) {
      for (int id : nodes) {
        const bool out_of_place_now = computed[id] && recomputation == Recomputation::kOutOfPlace;
        plan.program.push_back(
            {InstrKind::kForward, id,
             out_of_place_now ? out_of_place(choices.forward[id]) : choices.forward[id],
             BackwardPart::kAll, Slot::kOutput});
        computed[id] = true;
      }
      continue;
    }
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (!needs_backward[*it]) continue;
      const auto parts = backward_parts(g, g.node(*it));
      for (size_t k = 0; k < parts.size(); ++k)
        plan.program.push_back(
            {InstrKind::kBackward, *it, choices.backward[*it][k], parts[k], Slot::kOutput});
    }
  }
  return plan;
}

// Rematerialization towards the budget: the fastest schedules above it (within
// rematerialization_reach of it) that are faster than every schedule within it, fastest
// first, until rematerialized_plans fit or the time is up; then, when none fits, the
// leanest schedule.
template <typename Elapsed>
void rematerialize_towards_budget(const Graph& g, const CostModel& costs,
                                  const ChainCheckpointingOptions& o,
                                  std::vector<SimulatedPlan> over, const Elapsed& elapsed,
                                  ChainCheckpointingPlans* out) {
  double fastest = std::numeric_limits<double>::infinity();
  for (const SimulatedPlan& p : out->within_budget)
    fastest = std::min(fastest, p.simulated.seconds);
  std::sort(over.begin(), over.end(), [](const SimulatedPlan& a, const SimulatedPlan& b) {
    return a.simulated.seconds < b.simulated.seconds;
  });
  RematerializationOptions r;
  r.budget_bytes = o.budget_bytes;
  const auto lower = [&](const SimulatedPlan& start, double seconds) {
    r.time_limit_seconds = seconds;
    SimulatedPlan lowered = rematerialize(g, costs, start, r);
    if (lowered.simulated.peak_bytes > o.budget_bytes) return lowered;
    ++out->rematerialized;
    out->within_budget.push_back(lowered);
    return lowered;
  };
  const double reach = static_cast<double>(o.budget_bytes) * (1 + o.rematerialization_reach);
  for (const SimulatedPlan& p : over) {
    if (p.simulated.seconds >= fastest || out->rematerialized >= o.rematerialized_plans ||
        elapsed() > o.time_limit_seconds)
      break;
    if (static_cast<double>(p.simulated.peak_bytes) <= reach)
      lower(p, std::max(0.0, o.time_limit_seconds - elapsed()));
  }
  if (!out->within_budget.empty() || out->smallest.plan.program.empty()) return;
  SimulatedPlan lowered = lower(out->smallest, o.first_fit_time_limit_seconds);
  if (lowered.simulated.peak_bytes < out->smallest.simulated.peak_bytes)
    out->smallest = std::move(lowered);
}

// The implementations of a family, out of place where the input is a cut (later sweeps
// start from it again).
ScheduleChoices chain_choices(const Graph& g, const CostModel& costs,
                              ImplementationPreference preference, const std::vector<int>& cuts) {
  ScheduleChoices c = implementation_choices(g, costs, preference);
  std::vector<bool> cut(g.values().size(), false);
  for (int v : cuts) cut[v] = true;
  for (const Node& n : g.nodes()) {
    if (n.inputs.empty()) continue;
    const ForwardImplInfo f = find_forward_impl(forward_impls(g, n), n, c.forward[n.id]);
    if (f.inplace && cut[n.inputs[0]]) c.forward[n.id] = out_of_place(c.forward[n.id]);
  }
  return c;
}

// The dynamic program's segments from the chain's layout (bytes filled in by measure).
std::vector<Segment> chain_segments(const Graph& g, const std::vector<ChainSegment>& layout) {
  std::vector<Segment> segments(layout.size());
  for (size_t i = 0; i < layout.size(); ++i) {
    const ChainSegment& c = layout[i];
    segments[i].nodes = c.nodes;
    segments[i].output_bytes = c.output < 0 ? 0 : g.value(c.output).bytes();
    segments[i].side_bytes = c.side < 0 ? 0 : g.value(c.side).bytes();
    segments[i].stretch = c.stretch;
  }
  for (int i = static_cast<int>(segments.size()) - 1; i >= 0; --i) {
    const bool last = i + 1 == static_cast<int>(segments.size()) ||
                      segments[i + 1].stretch != segments[i].stretch;
    segments[i].stretch_end = last ? i : segments[i + 1].stretch_end;
  }
  return segments;
}

// Simulates the schedules of one layout's dynamic program, in both implementation
// families: memory-lean (the smallest peaks) and fastest (the least time where the budget
// has room), out of place where the input is a cut, which later sweeps start from again.
// Schedules within the budget go to `out`, those above it (recomputing as the forward
// run) to `over`.
template <typename Elapsed>
void add_layout_schedules(const Graph& g, const CostModel& costs,
                          const ChainCheckpointingOptions& o,
                          const std::vector<ChainSegment>& layout,
                          const std::vector<bool>& needs_backward, const Elapsed& elapsed,
                          std::vector<SimulatedPlan>* over, ChainCheckpointingPlans* out) {
  std::vector<int> cuts;
  for (const ChainSegment& c : layout)
    if (c.output >= 0) cuts.push_back(c.output);
  for (ImplementationPreference preference :
       {ImplementationPreference::kLeastMemory, ImplementationPreference::kFastest}) {
    const ScheduleChoices choices = chain_choices(g, costs, preference, cuts);
    std::vector<Segment> segments = chain_segments(g, layout);
    for (Segment& s : segments) measure(g, costs, choices, needs_backward, &s);
    const ChainProgram program(segments, std::max(1, o.memory_levels));
    // Each distinct schedule simulated once (levels repeat schedules), in both variants;
    // its smallest simulated peak.
    std::map<std::vector<std::pair<int, bool>>, int64_t> peaks;
    const auto visit = [&](int m) {
      std::vector<std::pair<int, bool>> steps = program.schedule(m);
      const auto known = peaks.find(steps);
      if (known != peaks.end()) return known->second;
      int64_t peak = std::numeric_limits<int64_t>::max();
      for (Recomputation r : {Recomputation::kLean, Recomputation::kOutOfPlace}) {
        SimulatedPlan p;
        p.plan = schedule_plan(g, segments, choices, needs_backward, steps, r);
        p.simulated = simulate(g, p.plan, costs);
        peak = std::min(peak, p.simulated.peak_bytes);
        if (out->smallest.plan.program.empty() ||
            p.simulated.peak_bytes < out->smallest.simulated.peak_bytes)
          out->smallest = p;
        if (p.simulated.peak_bytes <= o.budget_bytes)
          out->within_budget.push_back(std::move(p));
        else if (r == Recomputation::kLean)
          over->push_back(std::move(p));
      }
      ++out->schedules;
      peaks.emplace(std::move(steps), peak);
      return peak;
    };
    const auto time_left = [&] { return elapsed() <= o.time_limit_seconds; };
    // The leanest schedule first (so that it is simulated however short the time); then
    // the highest level whose schedule fits, by bisection (peaks grow with the level,
    // roughly); then the levels around it, nearest first: the fastest schedules that fit
    // and those just above the budget, which rematerialization lowers into it.
    int leanest = 0;
    while (leanest <= program.levels() && !program.feasible(leanest)) ++leanest;
    if (leanest > program.levels()) continue;
    int fits = leanest, above = program.levels();
    if (visit(leanest) <= o.budget_bytes) {
      while (fits < above && time_left()) {
        const int middle = fits + (above - fits + 1) / 2;
        if (visit(middle) <= o.budget_bytes)
          fits = middle;
        else
          above = middle - 1;
      }
    }
    for (int d = 1; time_left() && (fits + d <= program.levels() || fits - d >= leanest); ++d) {
      if (fits + d <= program.levels()) visit(fits + d);
      if (fits - d >= leanest) visit(fits - d);
    }
  }
}

}  // namespace

ChainCheckpointingPlans chain_checkpointing_plans(const Graph& g, const CostModel& costs,
                                                  const ChainCheckpointingOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  ChainCheckpointingPlans out;
  const auto needs_backward = nodes_needing_backward(g);
  std::vector<SimulatedPlan> over;  // schedules above the budget (recomputing as forward)
  for (ChainCuts cut_kind : o.layouts) {
    ChainLayoutOptions layout_options;
    layout_options.max_segments = o.max_segments;
    layout_options.cuts = cut_kind;
    const std::vector<ChainSegment> layout = chain_layout(g, layout_options);
    out.segments = std::max(out.segments, static_cast<int>(layout.size()));
    add_layout_schedules(g, costs, o, layout, needs_backward, elapsed, &over, &out);
  }
  rematerialize_towards_budget(g, costs, o, std::move(over), elapsed, &out);
  std::sort(out.within_budget.begin(), out.within_budget.end(),
            [](const SimulatedPlan& a, const SimulatedPlan& b) {
              return a.simulated.seconds < b.simulated.seconds;
            });
  out.seconds = elapsed();
  return out;
}

}  // namespace monet
