#include "planner/heuristics/fastest_convolutions.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cost/simulator.h"

namespace monet {
namespace {

// The simulated peak of `plan`, or -1 when it does not validate.
int64_t peak_or_invalid(const Graph& g, const CostModel& costs, const Plan& plan) {
  try {
    return simulate(g, plan, costs).peak_bytes;
  } catch (const PlanError&) {
    return -1;
  }
}

// Implementation names of `in`'s kind for its node, fastest first.
std::vector<std::string> fastest_first(const Graph& g, const CostModel& costs,
                                       const Instruction& in) {
  const Node& n = g.node(in.node);
  std::vector<std::pair<double, std::string>> ranked;
  if (in.kind == InstrKind::kForward) {
    for (const auto& f : forward_impls(g, n))
      if (!f.inplace && !f.gist_encoding)
        ranked.emplace_back(costs.forward(g, n.id, f.name).seconds, f.name);
  } else {
    for (const auto& b : backward_impls(g, n))
      if (b.part == in.part && !b.gist_encoding)
        ranked.emplace_back(costs.backward(g, n.id, b.part, b.name).seconds, b.name);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (auto& r : ranked) names.push_back(std::move(r.second));
  return names;
}

}  // namespace

int choose_fastest_convolutions(const Graph& g, const CostModel& costs, int64_t budget,
                                Plan* plan) {
  int64_t peak = peak_or_invalid(g, costs, *plan);
  if (peak < 0) throw PlanError("choose_fastest_convolutions: the plan does not validate");
  int switches = 0;
  for (auto& in : plan->program) {
    if (in.kind == InstrKind::kFree || !is_convolution(g.node(in.node).op)) continue;
    const std::string original = in.impl;
    const int64_t limit = std::max(budget, peak);
    for (const std::string& name : fastest_first(g, costs, in)) {
      if (name == original) break;  // nothing faster fits
      in.impl = name;
      const int64_t p = peak_or_invalid(g, costs, *plan);
      if (p >= 0 && p <= limit) {
        peak = p;
        ++switches;
        break;
      }
      in.impl = original;
    }
  }
  return switches;
}

}  // namespace monet
