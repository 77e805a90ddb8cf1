#include "planner/heuristics/greedy_descent.h"

#include <cmath>
#include <limits>
#include <queue>

#include "cost/simulator.h"

namespace monet {
namespace {

// One move: drop activation `value` after the forward pass, or switch node `node` to the
// leaner implementations.
struct Move {
  int value = -1;
  int node = -1;
};

void apply(const Move& m, const ScheduleChoices& leaner, ScheduleChoices* c) {
  if (m.value >= 0) {
    c->drop_after_forward[m.value] = true;
  } else {
    c->forward[m.node] = leaner.forward[m.node];
    c->backward[m.node] = leaner.backward[m.node];
  }
}

}  // namespace

ScheduleChoices greedy_descent(const Graph& g, const CostModel& costs, const ScheduleChoices& start,
                               const ScheduleChoices& leaner, int64_t budget,
                               const std::function<bool()>& out_of_time) {
  ScheduleChoices c = start;
  c.drop_after_forward.assign(g.values().size(), false);
  const auto replay = [&](const ScheduleChoices& choices) {
    return simulate(g, build_schedule(g, choices, "greedy-descent"), costs);
  };
  SimulationResult current = replay(c);
  double over = current.bytes_over(budget);
  if (over <= 0) return c;
  std::vector<Move> moves;
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    const Value& v = g.value(n.output);
    if (v.kind == ValueKind::kActivation && !is_loss(n.op) && v.bytes() > 0)
      moves.push_back({v.id, -1});
    if (c.forward[id] != leaner.forward[id] || c.backward[id] != leaner.backward[id])
      moves.push_back({-1, id});
  }
  std::vector<bool> made(moves.size(), false);
  constexpr double kNever = std::numeric_limits<double>::infinity();
  // Seconds move `i` adds per byte it takes off `over` (kNever: it takes none off); the
  // trial's replay goes to `trial`.
  ScheduleChoices trial_choices;
  const auto price = [&](size_t i, SimulationResult* trial) {
    trial_choices = c;
    apply(moves[i], leaner, &trial_choices);
    *trial = replay(trial_choices);
    const double saved = over - trial->bytes_over(budget);
    if (saved <= 0) return kNever;
    return std::max(0.0, trial->seconds - current.seconds) / saved;
  };
  using Priced = std::pair<double, size_t>;
  std::priority_queue<Priced, std::vector<Priced>, std::greater<Priced>> queue;
  const auto price_all = [&] {
    queue = {};
    SimulationResult trial;
    for (size_t i = 0; i < moves.size() && !out_of_time(); ++i)
      if (!made[i]) queue.push({price(i, &trial), i});
  };
  price_all();
  while (over > 0 && !queue.empty() && !out_of_time()) {
    if (!std::isfinite(queue.top().first)) {
      // No move helped when last priced; the moves made since may have changed that.
      price_all();
      if (queue.empty() || !std::isfinite(queue.top().first)) break;
    }
    const size_t i = queue.top().second;
    queue.pop();
    SimulationResult trial;
    const double p = price(i, &trial);
    if (!queue.empty() && p > queue.top().first) {
      queue.push({p, i});  // dearer now than another's last price: price that one first
      continue;
    }
    if (!std::isfinite(p)) continue;
    apply(moves[i], leaner, &c);
    made[i] = true;
    current = std::move(trial);
    over = current.bytes_over(budget);
  }
  return c;
}

}  // namespace monet
