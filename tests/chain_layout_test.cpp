// The chain's layout on tiny zoo models: every node in exactly one segment, in an order
// that is topological; past a cut, only the cut's value and the segment's side value are
// read from earlier segments; residual blocks get sub-cuts beside their input, so the
// sub-cut layout has more segments than articulation values alone; the segment count stays
// within its maximum.
#include "planner/chain/chain_layout.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/zoo/model_zoo.h"
#include "tiny_models.h"

namespace monet {
namespace {

// Checks the layout's invariants and returns how many segments start at a sub-cut.
int expect_valid_layout(const Graph& g, const std::vector<ChainSegment>& layout) {
  std::vector<int> segment_of(g.nodes().size(), -1);
  int placed = 0, interior = 0;
  for (size_t s = 0; s < layout.size(); ++s)
    for (int id : layout[s].nodes) {
      EXPECT_EQ(segment_of[id], -1) << g.node(id).name << " is in two segments";
      segment_of[id] = static_cast<int>(s);
      ++placed;
    }
  EXPECT_EQ(placed, static_cast<int>(g.nodes().size()));
  std::vector<bool> done(g.nodes().size(), false);
  for (size_t s = 0; s < layout.size(); ++s) {
    const ChainSegment& seg = layout[s];
    if (seg.side >= 0) ++interior;
    if (s > 0 && seg.side >= 0) {
      EXPECT_EQ(seg.stretch, layout[s - 1].stretch);
    }
    for (int id : seg.nodes) {
      for (int v : g.node(id).inputs) {
        const int p = g.value(v).producer;
        if (p < 0) continue;
        EXPECT_TRUE(done[p]) << g.node(id).name << " comes before its input's producer";
        if (segment_of[p] == static_cast<int>(s)) continue;
        // From an earlier segment: the previous segment's output, or the side value.
        EXPECT_TRUE(v == layout[s - 1].output || v == seg.side)
            << g.node(id).name << " reads " << g.value(v).name << " across a cut";
      }
      done[id] = true;
    }
  }
  EXPECT_EQ(layout.back().output, -1);
  return interior;
}

class LayoutOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {};

TEST_P(LayoutOnTinyModel, CutsOnlyWhereNothingElseCrosses) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  ChainLayoutOptions o;
  o.max_segments = 1000;  // every cut
  o.cuts = ChainCuts::kArticulations;
  const std::vector<ChainSegment> articulations = chain_layout(g, o);
  EXPECT_EQ(expect_valid_layout(g, articulations), 0);
  o.cuts = ChainCuts::kSubCuts;
  const std::vector<ChainSegment> sub_cuts = chain_layout(g, o);
  const int interior = expect_valid_layout(g, sub_cuts);
  if (GetParam().name == "resnet18" || GetParam().name == "mobilenet_v2") {
    EXPECT_GT(interior, 0);
    EXPECT_GT(sub_cuts.size(), articulations.size());
  }
  o.max_segments = 8;
  const std::vector<ChainSegment> few = chain_layout(g, o);
  expect_valid_layout(g, few);
  EXPECT_LE(few.size(), 8u);
}

INSTANTIATE_TEST_SUITE_P(Zoo, LayoutOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named(
                             {"resnet18", "vgg11", "unet", "googlenet", "mobilenet_v2"})),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
