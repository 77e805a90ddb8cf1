#include "planner/chain/chain_layout.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "graph/articulation_values.h"
#include "ops/op_impl.h"

namespace monet {
namespace {

// The stretch between two kept articulation values: its nodes in an order in which every
// sub-cut of the chosen chain ends a prefix, and the positions of those sub-cuts.
struct Stretch {
  int input = -1;               // the articulation value it starts from (-1: none)
  std::vector<int> nodes;       // node ids
  std::vector<int> sub_cuts;    // positions p: a sub-cut is nodes[p]'s output, ascending
  std::vector<int> chosen;      // the sub-cuts taken, ascending
  std::vector<int64_t> prefix;  // prefix[p + 1]: output bytes of nodes[0..p]
};

// Whether the value's only reader can overwrite it (a cut there would make it copy).
bool read_in_place(const Graph& g, int value) {
  const std::vector<int>& consumers = g.value(value).consumers;
  if (consumers.size() != 1) return false;
  const Node& n = g.node(consumers[0]);
  if (n.inputs.empty() || n.inputs[0] != value) return false;  // in place overwrites input 0
  for (const ForwardImplInfo& f : forward_impls(g, n))
    if (f.inplace) return true;
  return false;
}

// Articulation values (for sub-cuts, those whose only reader cannot overwrite them), at
// most `max_segments` - 1 of them, evenly chosen.
std::vector<int> kept_articulations(const Graph& g, const ChainLayoutOptions& o) {
  std::vector<int> all;
  for (int v : articulation_values(g))
    if (o.cuts == ChainCuts::kArticulations || !read_in_place(g, v)) all.push_back(v);
  const size_t most = static_cast<size_t>(std::max(1, o.max_segments - 1));
  if (all.size() <= most) return all;
  std::vector<int> cuts;
  for (size_t i = 0; i < most; ++i) cuts.push_back(all[(i + 1) * all.size() / (most + 1)]);
  return cuts;
}

// Orders a stretch's nodes along its longest chain of sub-cuts and records their
// positions; a shortcut branch comes before the nodes after the last sub-cut. A node's output v is
// a sub-cut when every other value its ancestors in the stretch produce is read only by those
// ancestors: past it, only v and the stretch input are read. A value read in place is left to the
// in-place output (same bytes, no copy).
void find_sub_cuts(const Graph& g, std::vector<int>* place, Stretch* s) {
  const int n = static_cast<int>(s->nodes.size());
  for (int i = 0; i < n; ++i) (*place)[s->nodes[i]] = i;
  std::vector<std::vector<bool>> ancestors(n, std::vector<bool>(n, false));
  for (int i = 0; i < n; ++i) {
    ancestors[i][i] = true;
    for (int v : g.node(s->nodes[i]).inputs) {
      const int p = g.value(v).producer;
      if (p < 0 || (*place)[p] < 0) continue;
      const std::vector<bool>& from = ancestors[(*place)[p]];
      for (int j = 0; j < n; ++j) ancestors[i][j] = ancestors[i][j] || from[j];
    }
  }
  const auto is_sub_cut = [&](int i) {
    const int v = g.node(s->nodes[i]).output;
    if (g.value(v).consumers.empty() || read_in_place(g, v)) return false;
    for (int u = 0; u <= i; ++u) {
      if (!ancestors[i][u] || g.node(s->nodes[u]).output == v) continue;
      for (int c : g.value(g.node(s->nodes[u]).output).consumers)
        if ((*place)[c] < 0 || !ancestors[i][(*place)[c]]) return false;
    }
    return true;
  };
  std::vector<int> candidates;
  for (int i = 0; i + 1 < n; ++i)
    if (is_sub_cut(i)) candidates.push_back(i);
  // The longest chain of candidates, each an ancestor of the next.
  const int k = static_cast<int>(candidates.size());
  std::vector<int> length(k, 1), previous(k, -1);
  int last = -1;
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < j; ++i)
      if (ancestors[candidates[j]][candidates[i]] && length[i] + 1 > length[j])
        length[j] = length[i] + 1, previous[j] = i;
    if (last < 0 || length[j] > length[last]) last = j;
  }
  std::vector<int> chain;
  for (int j = last; j >= 0; j = previous[j]) chain.insert(chain.begin(), candidates[j]);
  // Each sub-cut's ancestors not yet placed, then the rest.
  std::vector<bool> placed(n, false);
  std::vector<int> order;
  for (int c : chain) {
    for (int u = 0; u <= c; ++u)
      if (ancestors[c][u] && !placed[u]) placed[u] = true, order.push_back(s->nodes[u]);
    s->sub_cuts.push_back(static_cast<int>(order.size()) - 1);
  }
  // The rest: the nodes that descend from the last sub-cut, each preceded by the nodes of a
  // shortcut's branch from the stretch input that it reads, so that the branch's backward
  // runs right after the merge's and frees the branch's tensors early.
  const auto descends = [&](int u) { return !chain.empty() && ancestors[u][chain.back()]; };
  for (int d = 0; d < n; ++d) {
    if (placed[d] || !descends(d)) continue;
    for (int u = 0; u < d; ++u)
      if (!placed[u] && ancestors[d][u]) placed[u] = true, order.push_back(s->nodes[u]);
    placed[d] = true, order.push_back(s->nodes[d]);
  }
  for (int u = 0; u < n; ++u)
    if (!placed[u]) placed[u] = true, order.push_back(s->nodes[u]);
  for (int id : s->nodes) (*place)[id] = -1;
  s->nodes = std::move(order);
  s->prefix.assign(n + 1, 0);
  for (int i = 0; i < n; ++i)
    s->prefix[i + 1] = s->prefix[i] + g.value(g.node(s->nodes[i]).output).bytes();
}

// Takes up to `count` sub-cuts: each splits the piece of most bytes that has one inside, at
// the one nearest its middle.
void choose_sub_cuts(std::vector<Stretch>* stretches, int count) {
  struct Piece {
    int stretch, from, to;  // positions from..to of the stretch's nodes
  };
  std::vector<Piece> pieces;
  for (int i = 0; i < static_cast<int>(stretches->size()); ++i)
    if (!(*stretches)[i].sub_cuts.empty())
      pieces.push_back({i, 0, static_cast<int>((*stretches)[i].nodes.size()) - 1});
  const auto weight = [&](const Piece& p) {
    const Stretch& s = (*stretches)[p.stretch];
    return s.prefix[p.to + 1] - s.prefix[p.from];
  };
  while (count > 0 && !pieces.empty()) {
    const auto largest =
        std::max_element(pieces.begin(), pieces.end(),
                         [&](const Piece& a, const Piece& b) { return weight(a) < weight(b); });
    const Piece p = *largest;
    pieces.erase(largest);
    Stretch& s = (*stretches)[p.stretch];
    const int64_t middle = s.prefix[p.from] + weight(p) / 2;
    int best = -1;
    for (int c : s.sub_cuts)
      if (c >= p.from && c < p.to &&
          (best < 0 ||
           std::llabs(s.prefix[c + 1] - middle) < std::llabs(s.prefix[best + 1] - middle)))
        best = c;
    if (best < 0) continue;
    s.chosen.insert(std::upper_bound(s.chosen.begin(), s.chosen.end(), best), best);
    pieces.push_back({p.stretch, p.from, best});
    pieces.push_back({p.stretch, best + 1, p.to});
    --count;
  }
}

// The segments of one stretch: split at its chosen sub-cuts and at its end.
void append_segments(const Graph& g, const Stretch& s, int index, std::vector<ChainSegment>* out) {
  int last_read = -1;  // the last position reading the stretch input
  for (int p = 0; p < static_cast<int>(s.nodes.size()); ++p)
    for (int v : g.node(s.nodes[p]).inputs)
      if (s.input >= 0 && v == s.input) last_read = p;
  std::vector<int> ends = s.chosen;
  ends.push_back(static_cast<int>(s.nodes.size()) - 1);
  int from = 0;
  for (int end : ends) {
    ChainSegment segment;
    segment.nodes.assign(s.nodes.begin() + from, s.nodes.begin() + end + 1);
    segment.output = g.node(s.nodes[end]).output;
    segment.side = from > 0 && last_read >= from ? s.input : -1;
    segment.stretch = index;
    out->push_back(std::move(segment));
    from = end + 1;
  }
}

}  // namespace

std::vector<ChainSegment> chain_layout(const Graph& g, const ChainLayoutOptions& o) {
  const std::vector<int> cuts = kept_articulations(g, o);
  std::vector<bool> ends_stretch(g.nodes().size(), false);
  for (int v : cuts) ends_stretch[g.value(v).producer] = true;
  std::vector<Stretch> stretches(1);
  for (int id : g.topological_order()) {
    stretches.back().nodes.push_back(id);
    if (!ends_stretch[id]) continue;
    stretches.emplace_back();
    stretches.back().input = g.node(id).output;
  }
  if (stretches.back().nodes.empty()) stretches.pop_back();
  if (o.cuts == ChainCuts::kSubCuts) {
    std::vector<int> place(g.nodes().size(), -1);
    for (Stretch& s : stretches) find_sub_cuts(g, &place, &s);
    choose_sub_cuts(&stretches, o.max_segments - static_cast<int>(stretches.size()));
  }
  std::vector<ChainSegment> segments;
  for (size_t i = 0; i < stretches.size(); ++i)
    append_segments(g, stretches[i], static_cast<int>(i), &segments);
  // The graph's last node (the loss's) ends no segment another starts from.
  if (!segments.empty() && !ends_stretch[segments.back().nodes.back()]) segments.back().output = -1;
  return segments;
}

}  // namespace monet
