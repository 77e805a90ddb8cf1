// The chain chain checkpointing's dynamic program runs over: the graph's nodes cut into
// segments. Cuts are articulation values (nothing produced before one is read after it)
// and, inside the stretch between two kept articulation values, sub-cuts: values that,
// beside the stretch's input, are the only ones the stretch's later nodes read from its
// earlier ones (a residual block's main branch beside the block input its shortcut
// reads). A segment after a sub-cut is interior: the stretch input (its side value) stays
// alive while it is processed. Sub-cuts let the program back-propagate through a block a
// part at a time, so its smallest schedules hold less than one block's activations.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace monet {

struct ChainSegment {
  std::vector<int> nodes;  // node ids; the chain's nodes in this order are topological
  int output = -1;         // the value the next segment starts from (-1: the last segment)
  /// The stretch input that this segment or a later one of its stretch reads, when the
  /// segment starts at a sub-cut (-1: it starts at an articulation value, or none reads it).
  int side = -1;
  int stretch = 0;  // index of its stretch (the segments between two articulation values)
};

/// Where the chain is cut.
enum class ChainCuts {
  /// At every articulation value.
  kArticulations,
  /// At articulation values whose only reader cannot overwrite them (a cut there would
  /// make it copy), and at sub-cuts inside the stretches between them.
  kSubCuts,
};

struct ChainLayoutOptions {
  /// At most this many segments: articulation values are kept first (evenly chosen when
  /// there are more), then sub-cuts split the largest pieces (by the bytes of their
  /// nodes' outputs) at the sub-cut nearest the middle, until the count is reached.
  int max_segments = 64;
  ChainCuts cuts = ChainCuts::kSubCuts;
};

/// The chain's segments, in order; empty for a graph with no nodes.
std::vector<ChainSegment> chain_layout(const Graph& graph, const ChainLayoutOptions& options);

}  // namespace monet
