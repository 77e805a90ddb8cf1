// node_named: a graph's node by name, for tests that build graphs with named nodes.
#pragma once

#include <stdexcept>
#include <string>

#include "graph/graph.h"

namespace monet::testing {

inline const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes())
    if (n.name == name) return n;
  throw std::logic_error("no node named '" + name + "'");
}

}  // namespace monet::testing
