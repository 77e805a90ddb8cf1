#include "graph/articulation_values.h"

#include <algorithm>

namespace monet {

std::vector<int> articulation_values(const Graph& g) {
  const auto order = g.topological_order();
  std::vector<int> position(g.nodes().size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  std::vector<int> cuts;
  int reach = -1;  // furthest position reading a value produced before the current one
  for (size_t p = 0; p < order.size(); ++p) {
    const Node& n = g.node(order[p]);
    if (reach <= static_cast<int>(p) && !is_loss(n.op)) cuts.push_back(n.output);
    for (int c : g.value(n.output).consumers) reach = std::max(reach, position[c]);
  }
  return cuts;
}

}  // namespace monet
