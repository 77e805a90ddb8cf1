// rotated_plan: a store-all plan whose implementation choices rotate through every
// compatible option, so a few variants exercise the whole operator library.
#pragma once

#include <set>
#include <stdexcept>
#include <string>

#include "planner/baselines/baseline_plans.h"

namespace monet::testing {

// A plan like store-all but with implementation choices rotated by `variant`: no in-place
// forwards, no Gist encodings (gist_test covers those), and for each node the
// ((variant + node) mod k)-th compatible choice. Records every (operator, implementation)
// it uses in `used`.
inline Plan rotated_plan(const Graph& g, int variant, std::set<std::string>* used) {
  Plan plan = store_all_plan(g);
  std::vector<std::string> forward_choice(g.nodes().size());
  for (auto& in : plan.program) {
    const Node& n = g.node(in.node);
    const int r = variant + n.id;
    if (in.kind == InstrKind::kForward) {
      std::vector<ForwardImplInfo> options;
      for (const auto& f : forward_impls(g, n))
        if (!f.inplace && !f.gist_encoding) options.push_back(f);
      if (options.empty()) throw std::logic_error("no forward for " + n.name);
      in.impl = options[r % options.size()].name;
      forward_choice[n.id] = in.impl;
      used->insert(std::string(op_name(n.op)) + " forward " + in.impl);
    } else if (in.kind == InstrKind::kBackward) {
      const auto& f = find_forward_impl(forward_impls(g, n), n, forward_choice[n.id]);
      std::vector<BackwardImplInfo> options;
      for (const auto& b : backward_impls(g, n))
        if (b.part == in.part && compatible(f, b)) options.push_back(b);
      if (options.empty()) throw std::logic_error("no backward for " + n.name + " after " + f.name);
      in.impl = options[r % options.size()].name;
      used->insert(std::string(op_name(n.op)) + " backward " + backward_part_name(in.part) + " " +
                   in.impl);
    }
  }
  return plan;
}

}  // namespace monet::testing
