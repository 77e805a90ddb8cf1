// Attention (OpKind::kAttention): the importer's fusion of the unfused pattern into one
// node, every implementation pair against autograd (masks, dropout, blocks of query
// rows), the declared intermediate sizes, and the planner under a tight budget.
#include <gtest/gtest.h>

#include <limits>

#include "base/memory_tracker.h"
#include "gradient_check.h"
#include "graph/aten_call.h"
#include "graph/attention_fusion.h"
#include "graph/attention_spec.h"
#include "graph/graph_builder.h"
#include "halfway_budget.h"
#include "ops/op_kernels.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/monet_planner.h"
#include "quick_profile.h"
#include "runtime/executor.h"

namespace monet {
namespace {

constexpr int64_t kBatch = 2, kLength = 12, kHeads = 2, kHeadDim = 4, kWidth = kHeads * kHeadDim;

int aten(Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& name,
         std::vector<c10::IValue> args, std::vector<int> slots, const std::string& overload = "") {
  // Probed on inputs strided as the executor lays them out (transposed views), as the
  // importer probes.
  std::vector<std::vector<int64_t>> shapes, strides;
  for (int in : inputs) {
    shapes.push_back(g.value(in).shape);
    const int producer = g.value(in).producer;
    const bool view = producer >= 0 && g.node(producer).op == OpKind::kAten;
    strides.push_back(view ? g.node(producer).attrs.aten->output_strides : std::vector<int64_t>{});
  }
  OpAttrs a;
  a.aten = make_aten_call(op, overload, std::move(args), std::move(slots), shapes,
                          std::vector<bool>(inputs.size(), true), strides);
  return g.add_node(OpKind::kAten, name, inputs, a);
}

int unary(Graph& g, const std::string& op, int x, const std::string& name,
          std::vector<c10::IValue> rest, const std::string& overload = "") {
  rest.insert(rest.begin(), c10::IValue());
  return aten(g, op, {x}, name, std::move(rest), {0}, overload);
}

// [N, T, C] -> [N, heads, T, C / heads] (a view, then a transposed view).
int heads(Graph& g, int x, const std::string& name) {
  const int v = unary(g, "aten::view", x, name + ".view",
                      {std::vector<int64_t>{kBatch, kLength, kHeads, kHeadDim}});
  return unary(g, "aten::transpose", v, name + ".transpose", {int64_t{1}, int64_t{2}}, "int");
}

enum class Variant { kCausalFill, kFiniteFill, kAdditive };

// Self-attention over [N, T, C] as hand-written code traces it: q, k, v projections split
// into heads, q @ kᵀ scaled, masked, softmax, dropout, @ v, heads merged, a linear head.
Graph unfused_attention(Variant variant, double dropout) {
  GraphBuilder b("attention");
  Graph& g = b.graph();
  const int x = b.input("input", {kBatch, kLength, kWidth});
  const int q = heads(g, b.linear(x, "attn.q", kWidth), "attn.q");
  const int k = heads(g, b.linear(x, "attn.k", kWidth), "attn.k");
  const int v = heads(g, b.linear(x, "attn.v", kWidth), "attn.v");
  const int kt = unary(g, "aten::transpose", k, "attn.kt", {int64_t{-2}, int64_t{-1}}, "int");
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  int s;
  if (variant == Variant::kAdditive) {  // q / sqrt(d) first, as nn.MultiheadAttention does
    const int qs = unary(g, "aten::div", q, "attn.div", {std::sqrt(double(kHeadDim))}, "Scalar");
    s = aten(g, "aten::matmul", {qs, kt}, "attn.scores", {c10::IValue(), c10::IValue()}, {0, 1});
    const at::Tensor bias = at::randn({kLength, kLength})
                                .masked_fill(at::rand({kLength, kLength}) < 0.3,
                                             -std::numeric_limits<double>::infinity());
    bias.fill_diagonal_(0.0);
    s = unary(g, "aten::add", s, "attn.bias", {bias, 1}, "Tensor");
  } else {
    s = aten(g, "aten::matmul", {q, kt}, "attn.scores", {c10::IValue(), c10::IValue()}, {0, 1});
    s = unary(g, "aten::mul", s, "attn.scale", {at::tensor(scale)}, "Tensor");
    const at::Tensor above =
        at::ones({kLength, kLength}).triu(1).to(at::kBool).view({1, 1, kLength, kLength});
    const double fill =
        variant == Variant::kCausalFill ? -std::numeric_limits<double>::infinity() : -3.0;
    s = unary(g, "aten::masked_fill", s, "attn.mask", {above, fill}, "Scalar");
  }
  int p = unary(g, "aten::softmax", s, "attn.softmax", {int64_t{-1}, c10::IValue()}, "int");
  if (dropout > 0) p = b.dropout(p, "attn.dropout", dropout);
  int o = aten(g, "aten::matmul", {p, v}, "attn.context", {c10::IValue(), c10::IValue()}, {0, 1});
  o = unary(g, "aten::transpose", o, "attn.merge", {int64_t{1}, int64_t{2}}, "int");
  o = unary(g, "aten::reshape", o, "attn.reshape",
            {std::vector<int64_t>{kBatch, kLength * kWidth}});
  b.cross_entropy(b.linear(o, "head", 3), b.class_target("target", kBatch));
  return b.finish();
}

// The fused graph, with blocks of 5 query rows (3 blocks: the last one short).
Graph fused(const Graph& unfused, int* count) {
  AttentionFusionOptions o;
  o.block_score_bytes = kBatch * kHeads * kLength * 4 * 5;
  return fuse_attention(unfused, o, count);
}

const Node& attention_node(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.op == OpKind::kAttention) return n;
  throw std::logic_error("no attention node");
}

ExecutionResult run_float64(const Graph& g) {
  ModelState state = ModelState::initialize(g, 0);
  testing::convert(state, g, at::kDouble);
  Batch batch = make_batch(g, 1);
  for (auto& [id, t] : batch)
    if (t.is_floating_point()) t = t.to(at::kDouble);
  Executor executor(g, state, testing::comparable_plan(g, store_all_plan(g), at::kDouble));
  return executor.run(batch);
}

TEST(AttentionFusion, MakesOneNodeThatComputesWhatTheUnfusedGraphDoes) {
  MemoryTracker::install();
  for (Variant variant : {Variant::kCausalFill, Variant::kFiniteFill, Variant::kAdditive}) {
    const Graph unfused = unfused_attention(variant, 0.0);
    int count = 0;
    const Graph g = fused(unfused, &count);
    ASSERT_EQ(count, 1);
    const Node& a = attention_node(g);
    EXPECT_EQ(a.name, "attn.attention");
    EXPECT_EQ(a.attrs.attention->block_rows, 5);
    EXPECT_EQ(a.attrs.attention->mask,
              variant == Variant::kAdditive ? AttentionMask::kAdd : AttentionMask::kFill);
    EXPECT_NEAR(a.attrs.attention->scale, 0.5, 1e-7);
    // Gone: kᵀ, the scores, their scaling and mask, the softmax and P @ v.
    EXPECT_EQ(g.nodes().size() + 5, unfused.nodes().size());
    for (const Node& n : g.nodes())
      EXPECT_TRUE(n.name != "attn.kt" && n.name != "attn.softmax") << n.name;
    EXPECT_NE(g.fingerprint(), unfused.fingerprint());
    const ExecutionResult want = run_float64(unfused), got = run_float64(g);
    EXPECT_NEAR(got.loss, want.loss, 1e-12 * std::abs(want.loss));
    ASSERT_EQ(got.gradients.size(), want.gradients.size());
    // Relative to each gradient's scale, floored where it is ~0 (k's bias: softmax is
    // invariant to it, so its gradient is rounding noise, about 2e-17 of the largest
    // entry: the fused backward's rowsum(dO ∘ O) cancels against P ∘ dP to rounding).
    double largest = 0;
    for (const at::Tensor& t : want.gradients)
      largest = std::max(largest, t.abs().max().item<double>());
    for (size_t i = 0; i < got.gradients.size(); ++i)
      EXPECT_LE(testing::relative_error(got.gradients[i], want.gradients[i], 1e-7 * largest), 1e-9)
          << g.value(g.parameters()[i]).name;
  }
}

TEST(AttentionFusion, LeavesOtherPatternsAlone) {
  // The scores are read twice (by the softmax and by the head), so nothing is fused.
  GraphBuilder b("not_attention");
  Graph& g = b.graph();
  const int x = b.input("input", {kBatch, kLength, kWidth});
  const int xt = unary(g, "aten::transpose", x, "xt", {int64_t{-2}, int64_t{-1}}, "int");
  const int s = aten(g, "aten::matmul", {x, xt}, "scores", {c10::IValue(), c10::IValue()}, {0, 1});
  const int p = unary(g, "aten::softmax", s, "softmax", {int64_t{-1}, c10::IValue()}, "int");
  const int o = aten(g, "aten::matmul", {p, x}, "context", {c10::IValue(), c10::IValue()}, {0, 1});
  const int both = b.cat({b.flatten(o, "flat_context"), b.flatten(s, "flat_scores")}, "both");
  b.cross_entropy(b.linear(both, "head", 3), b.class_target("target", kBatch));
  int count = -1;
  fuse_attention(b.finish(), {}, &count);
  EXPECT_EQ(count, 0);
}

// Every compatible (forward, backward) pair, with dropout and each mask, in float64.
TEST(Attention, EveryImplementationPairMatchesAutograd) {
  MemoryTracker::install();
  const std::vector<std::pair<std::string, std::string>> pairs = {{"materialised", "probabilities"},
                                                                  {"materialised", "recompute"},
                                                                  {"chunked", "recompute"},
                                                                  {"lse", "recompute"},
                                                                  {"lse", "recompute_lse"}};
  for (Variant variant : {Variant::kCausalFill, Variant::kFiniteFill, Variant::kAdditive}) {
    int count = 0;
    const Graph g = fused(unfused_attention(variant, 0.25), &count);
    const Node& a = attention_node(g);
    for (const auto& [forward, backward] : pairs) {
      Plan plan = store_all_plan(g);
      for (Instruction& in : plan.program)
        if (in.node == a.id) in.impl = in.kind == InstrKind::kForward ? forward : backward;
      EXPECT_LT(testing::max_gradient_error(g, plan), 1e-9)
          << forward << " / " << backward << ", variant " << static_cast<int>(variant);
    }
    // Recomputation draws the same dropout noise.
    EXPECT_LT(testing::max_gradient_error(g, chen_plan(g)), 1e-9);
  }
}

TEST(Attention, IntermediatesHaveTheirDeclaredSize) {
  int count = 0;
  const Graph g = fused(unfused_attention(Variant::kCausalFill, 0.0), &count);
  const Node& a = attention_node(g);
  const std::vector<at::Tensor> in = {at::randn({kBatch, kHeads, kLength, kHeadDim}),
                                      at::randn({kBatch, kHeads, kLength, kHeadDim}),
                                      at::randn({kBatch, kHeads, kLength, kHeadDim})};
  for (const ForwardImplInfo& f : forward_impls(g, a)) {
    NodeState state;
    const ForwardOutput out = run_forward(g, a, f, in, state, true);
    EXPECT_EQ(out.output.sizes(), at::IntArrayRef({kBatch, kHeads, kLength, kHeadDim}));
    EXPECT_EQ(f.emits_intermediate, out.intermediate.defined()) << f.name;
    if (out.intermediate.defined()) {
      EXPECT_EQ(static_cast<int64_t>(out.intermediate.nbytes()), intermediate_bytes(g, a, f.name))
          << f.name;
    }
  }
  EXPECT_EQ(intermediate_bytes(g, a, "materialised"), kBatch * kHeads * kLength * kLength * 4);
  EXPECT_EQ(intermediate_bytes(g, a, "lse"), kBatch * kHeads * kLength * 4);
}

// At the smallest budget the memory-lean plans reach, the planner does not keep the
// probabilities, and the plan runs with the peak the simulator predicts.
TEST(Attention, PlannerDropsTheProbabilitiesUnderATightBudget) {
  MemoryTracker::install();
  int count = 0;
  const Graph g = fused(unfused_attention(Variant::kCausalFill, 0.0), &count);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  MonetOptions o;
  o.budget_bytes = testing::lean_budget(g, costs);
  o.solver.time_limit_seconds = 10;
  o.solver.search_limit = SearchLimit::kWork;
  const MonetResult r = plan_monet(g, costs, o);
  ASSERT_TRUE(r.found);
  std::string forward, backward;
  for (const Instruction& in : r.plan.program)
    if (in.node == attention_node(g).id)
      (in.kind == InstrKind::kForward ? forward : backward) = in.impl;
  EXPECT_NE(backward, "probabilities");
  testing::expect_runs_as_simulated(g, state, batch, r.plan, r.predicted);
  std::cout << "attention at " << o.budget_bytes << " B: forward " << forward << ", backward "
            << backward << "\n";
}

}  // namespace
}  // namespace monet
