#include "planner/chain/chain_checkpointing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "plan/schedule_builder.h"
#include "plan/unread_recomputations.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/chain/chain_program.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/heuristics/rematerialization.h"

namespace monet {
namespace {

// How a schedule's recomputations run: as the forward pass (the memory-lean choices,
// in place where they are), or out of place, as the MONeT program expresses them (warm
// starts).
enum class Recomputation { kLean, kOutOfPlace };

// The gradient storages of a segment's backward, held as the simulator holds them: each
// value's gradient slot names a storage, views of an output gradient (add, cat) share its
// storage, and a later gradient adds in place into a slot that holds its storage alone.
// Storages made during the walk count while a slot holds them; those that exist before it
// (a side value's gradient) are counted by the dynamic program.
class GradientStorages {
 public:
  int make(int64_t bytes, bool counts) {
    storages_.push_back({bytes, 0, counts});
    return static_cast<int>(storages_.size()) - 1;
  }
  int slot(int value) const {
    const auto it = slots_.find(value);
    return it == slots_.end() ? -1 : it->second;
  }
  int holders(int storage) const { return storages_[storage].holders; }
  void assign(int value, int storage) {
    release(value);
    slots_[value] = storage;
    ++storages_[storage].holders;
  }
  void release(int value) {
    const auto it = slots_.find(value);
    if (it == slots_.end()) return;
    --storages_[it->second].holders;
    slots_.erase(it);
  }
  int64_t counted_bytes() const {
    int64_t bytes = 0;
    for (const Storage& s : storages_)
      if (s.counts && s.holders > 0) bytes += s.bytes;
    return bytes;
  }

 private:
  struct Storage {
    int64_t bytes;
    int holders;
    bool counts;
  };
  std::vector<Storage> storages_;
  std::map<int, int> slots_;  // value -> storage
};

// A segment's tensors, by place in the segment: what a forward run leaves and when the
// backward last reads it.
struct SegmentTensors {
  std::vector<int> index;  // per node id: place in the segment (-1: outside)
  std::vector<int64_t> out, intermediate, workspace;
  std::vector<int> last_forward, last_backward;  // place of the last reader (size: none)
  std::vector<bool> kept, kept_intermediate;
};

// The most bytes a segment's backward holds (ScheduledSegment::backward_bytes), starting from
// `keeping` bytes of kept tensors. `gradient_made` (per value) tells whose gradient an
// earlier backward made (later segments of the chain run their backward first); the
// values this segment gives a gradient are added to it.
int64_t backward_peak(const Graph& g, const CostModel& costs, const ScheduleChoices& c,
                      const std::vector<bool>& needs_backward, const std::vector<bool>& needs_grad,
                      const ScheduledSegment& s, const SegmentTensors& t, int64_t keeping,
                      std::vector<bool>* gradient_made) {
  const int size = static_cast<int>(s.nodes.size());
  GradientStorages grads;
  const int output = g.node(s.nodes.back()).output;
  grads.assign(output, grads.make(g.value(output).bytes(), true));
  // Gradients of values from outside that exist already (a side value's): added into.
  for (int id : s.nodes)
    for (int v : g.node(id).inputs) {
      const int producer = g.value(v).producer;
      const bool outside = producer < 0 || t.index[producer] < 0;
      if (outside && (*gradient_made)[v] && grads.slot(v) < 0)
        grads.assign(v, grads.make(g.value(v).bytes(), false));
    }
  int64_t peak = 0;
  for (int i = size - 1; i >= 0; --i) {
    const Node& n = g.node(s.nodes[i]);
    if (needs_backward[n.id]) {
      const auto impls = backward_impls(g, n);
      const auto parts = backward_parts(g, n);
      for (size_t k = 0; k < parts.size(); ++k) {
        const BackwardImplInfo b = find_backward_impl(impls, n, parts[k], c.backward[n.id][k]);
        const auto mask = backward_grad_mask(g, n, parts[k], needs_grad);
        const int64_t workspace = costs.backward(g, n.id, parts[k], b.name).workspace_bytes;
        peak = std::max(peak, keeping + grads.counted_bytes() +
                                  backward_result_bytes(g, n, b, mask) + workspace);
        for (size_t j = 0; j < n.inputs.size(); ++j) {
          const int v = n.inputs[j];
          if (!mask[j] || g.value(v).kind != ValueKind::kActivation) continue;
          (*gradient_made)[v] = true;
          const int made = b.grads_alias_output ? grads.slot(n.output) : -1;
          const int slot = grads.slot(v);
          if (slot < 0)
            grads.assign(v, made >= 0 ? made : grads.make(g.value(v).bytes(), true));
          else if (grads.holders(slot) > 1)
            grads.assign(v, grads.make(g.value(v).bytes(), true));
        }
      }
      grads.release(n.output);
    }
    if (t.kept_intermediate[i]) keeping -= t.intermediate[i];
    for (int j = 0; j <= i; ++j)
      if (t.last_backward[j] == i && t.last_forward[j] != size) keeping -= t.out[j];
  }
  return peak;
}

// Fills a segment's seconds and bytes from its nodes, replaying the liveness of its
// tensors: a run keeping all holds what the segment's backward reads and its output; a
// sweep holds each output until its last forward reader; the backward frees a tensor
// after its last backward reader and holds gradients as the simulator does. Segments are
// measured last first (the order of their backward).
void measure(const Graph& g, const CostModel& costs, const ScheduleChoices& c,
             const std::vector<bool>& needs_backward, const std::vector<bool>& needs_grad,
             std::vector<bool>* gradient_made, ScheduledSegment* s) {
  SegmentTensors t;
  t.index.assign(g.nodes().size(), -1);
  for (size_t i = 0; i < s->nodes.size(); ++i) t.index[s->nodes[i]] = static_cast<int>(i);
  const int size = static_cast<int>(s->nodes.size());
  t.out.assign(size, 0), t.intermediate.assign(size, 0), t.workspace.assign(size, 0);
  t.last_forward.assign(size, 0), t.last_backward.assign(size, size);
  t.kept.assign(size, false), t.kept_intermediate.assign(size, false);
  for (int i = 0; i < size; ++i) {
    const Node& n = g.node(s->nodes[i]);
    for (int v : n.inputs)
      if (g.value(v).kind == ValueKind::kParameter && needs_grad[v])
        s->gradient_bytes += g.value(v).bytes();
    const ForwardImplInfo f = find_forward_impl(forward_impls(g, n), n, c.forward[n.id]);
    const ImplCost& fc = costs.forward(g, n.id, f.name);
    s->forward_seconds += fc.seconds;
    // An output in its input's storage carries that storage on (the input is freed at its
    // last reader), unless the input is outside the segment (its checkpoint, which the
    // dynamic program counts).
    const int input_producer = n.inputs.empty() ? -1 : g.value(n.inputs[0]).producer;
    const bool in_checkpoint = (f.inplace || f.output_aliases_input) &&
                               (input_producer < 0 || t.index[input_producer] < 0);
    t.out[i] = in_checkpoint ? 0 : g.value(n.output).bytes();
    t.intermediate[i] = f.emits_intermediate ? intermediate_bytes(g, n, f.name) : 0;
    t.workspace[i] = fc.workspace_bytes;
    t.last_forward[i] = i;
    for (int consumer : g.value(n.output).consumers)
      t.last_forward[i] =
          std::max(t.last_forward[i], t.index[consumer] < 0 ? size : t.index[consumer]);
    t.kept[i] = t.last_forward[i] == size;  // the segment's output
    if (!needs_backward[n.id]) continue;
    const auto impls = backward_impls(g, n);
    const auto parts = backward_parts(g, n);
    for (size_t k = 0; k < parts.size(); ++k) {
      const BackwardImplInfo b = find_backward_impl(impls, n, parts[k], c.backward[n.id][k]);
      s->backward_seconds += costs.backward(g, n.id, parts[k], b.name).seconds;
      // The segment's tensors it reads stay from the forward run until it has run.
      const auto reads = [&](int place) {
        t.kept[place] = true;
        t.last_backward[place] = std::min(t.last_backward[place], i);
      };
      for (int r : b.reads_inputs) {
        const int producer = g.value(n.inputs[r]).producer;
        if (producer >= 0 && t.index[producer] >= 0) reads(t.index[producer]);
      }
      if (b.reads_output) reads(i);
      t.kept_intermediate[i] = t.kept_intermediate[i] || b.reads_intermediate;
    }
  }
  // Forward runs: keeping all (the segment's backward reads), and sweeping.
  int last_input_read = -1;
  for (int i = 0; i < size; ++i)
    for (int v : g.node(s->nodes[i]).inputs)
      if (v == s->input) last_input_read = i;
  const int64_t input_bytes = s->input < 0 ? 0 : g.value(s->input).bytes();
  int64_t keeping = 0, sweeping = 0;
  for (int i = 0; i < size; ++i) {
    const int64_t made = t.out[i] + t.intermediate[i] + t.workspace[i];
    s->forward_bytes = std::max(s->forward_bytes, keeping + made);
    s->sweep_bytes = std::max(s->sweep_bytes, sweeping + made);
    s->sweep_input_bytes =
        std::max(s->sweep_input_bytes, sweeping + made + (i <= last_input_read ? input_bytes : 0));
    keeping += t.out[i] + (t.kept_intermediate[i] ? t.intermediate[i] : 0);
    sweeping += t.out[i];
    for (int j = 0; j <= i; ++j) {
      if (t.last_forward[j] != i) continue;
      sweeping -= t.out[j];
      if (!t.kept[j]) keeping -= t.out[j];
    }
  }
  s->kept_bytes = keeping;
  s->backward_bytes =
      backward_peak(g, costs, c, needs_backward, needs_grad, *s, t, keeping, gradient_made);
}

// The plan of a schedule of (segment, forward) steps.
Plan schedule_plan(const Graph& g, const std::vector<ScheduledSegment>& segments,
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
  r.search_limit = o.search_limit;
  r.recomputed_input_depth = o.recomputed_input_depth;
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
std::vector<ScheduledSegment> chain_segments(const Graph& g,
                                             const std::vector<ChainSegment>& layout) {
  std::vector<ScheduledSegment> segments(layout.size());
  for (size_t i = 0; i < layout.size(); ++i) {
    const ChainSegment& c = layout[i];
    segments[i].nodes = c.nodes;
    segments[i].input = i == 0 ? -1 : layout[i - 1].output;
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

// Simulates the schedules of one layout's dynamic program (`layout`, its `cuts`) in one
// implementation family, `preference`, out of place where the input is a cut. Schedules
// within the budget go to `out`, those above it (recomputing as the forward run) to `over`.
template <typename Elapsed>
void add_family_schedules(const Graph& g, const CostModel& costs,
                          const ChainCheckpointingOptions& o,
                          const std::vector<ChainSegment>& layout, const std::vector<int>& cuts,
                          ImplementationPreference preference,
                          const std::vector<bool>& needs_backward, const Elapsed& elapsed,
                          int* families_left, std::vector<SimulatedPlan>* over,
                          ChainCheckpointingPlans* out) {
  const ScheduleChoices choices = chain_choices(g, costs, preference, cuts);
  std::vector<ScheduledSegment> segments = chain_segments(g, layout);
  const std::vector<bool> needs_grad = values_needing_grad(g);
  std::vector<bool> gradient_made(g.values().size(), false);
  for (auto s = segments.rbegin(); s != segments.rend(); ++s)
    measure(g, costs, choices, needs_backward, needs_grad, &gradient_made, &*s);
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
      if (o.unread_recomputations == UnreadRecomputations::kDrop)
        p.plan = without_unread_recomputations(g, std::move(p.plan));
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
  // The levels around the fit get an equal share of the time left with the families
  // after this one (what one leaves goes to the next): on GPT-2-small, searched to its
  // end, the memory-lean family would leave the fastest one no time.
  const double share_end =
      elapsed() + (o.time_limit_seconds - elapsed()) / std::max(1, (*families_left)--);
  // The leanest schedule first (so that it is simulated however short the time); then
  // the highest level whose schedule fits, by bisection (peaks grow with the level,
  // roughly); then the levels around it, nearest first: the fastest schedules that fit
  // and those just above the budget, which rematerialization lowers into it.
  int leanest = 0;
  while (leanest <= program.levels() && !program.feasible(leanest)) ++leanest;
  if (leanest > program.levels()) return;
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
  // Under SearchLimit::kWork: at most work_schedules distinct schedules around the fit.
  const int around_start = out->schedules;
  const auto more_around = [&] {
    return o.search_limit != SearchLimit::kWork || out->schedules - around_start < o.work_schedules;
  };
  for (int d = 1; elapsed() <= share_end && more_around() &&
                  (fits + d <= program.levels() || fits - d >= leanest);
       ++d) {
    if (fits + d <= program.levels()) visit(fits + d);
    if (fits - d >= leanest) visit(fits - d);
  }
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
                          int* families_left, std::vector<SimulatedPlan>* over,
                          ChainCheckpointingPlans* out) {
  std::vector<int> cuts;
  for (const ChainSegment& c : layout)
    if (c.output >= 0) cuts.push_back(c.output);
  for (ImplementationPreference preference :
       {ImplementationPreference::kLeastMemory, ImplementationPreference::kFastest})
    add_family_schedules(g, costs, o, layout, cuts, preference, needs_backward, elapsed,
                         families_left, over, out);
}

}  // namespace

ChainCheckpointingPlans chain_checkpointing_plans(const Graph& g, const CostModel& costs,
                                                  const ChainCheckpointingOptions& o) {
  const SearchClock clock(o.search_limit);
  const auto elapsed = [&] { return clock.elapsed(); };
  ChainCheckpointingPlans out;
  const auto needs_backward = nodes_needing_backward(g);
  std::vector<SimulatedPlan> over;  // schedules above the budget (recomputing as forward)
  // Layouts times implementation families still to search.
  int families_left = 2 * static_cast<int>(o.layouts.size());
  for (ChainCuts cut_kind : o.layouts) {
    ChainLayoutOptions layout_options;
    layout_options.max_segments = o.max_segments;
    layout_options.cuts = cut_kind;
    const std::vector<ChainSegment> layout = chain_layout(g, layout_options);
    out.segments = std::max(out.segments, static_cast<int>(layout.size()));
    add_layout_schedules(g, costs, o, layout, needs_backward, elapsed, &families_left, &over, &out);
  }
  rematerialize_towards_budget(g, costs, o, std::move(over), elapsed, &out);
  std::sort(out.within_budget.begin(), out.within_budget.end(),
            [](const SimulatedPlan& a, const SimulatedPlan& b) {
              return a.simulated.seconds < b.simulated.seconds;
            });
  out.seconds = clock.wall_seconds();
  return out;
}

SimulatedPlan leanest_chain_schedule(const Graph& g, const CostModel& costs,
                                     double time_limit_seconds, SearchLimit search_limit) {
  ChainCheckpointingOptions chain;
  chain.search_limit = search_limit;
  chain.budget_bytes = 1;  // lowered towards nothing
  chain.time_limit_seconds = chain.first_fit_time_limit_seconds = time_limit_seconds;
  chain.rematerialized_plans = 0;
  return chain_checkpointing_plans(g, costs, chain).smallest;
}

}  // namespace monet
