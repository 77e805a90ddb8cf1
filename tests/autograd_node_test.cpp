// The autograd node's implementations of generic operators (ops/autograd_node.h): which
// operators offer them, the bytes the node holds of its own, gradients against autograd
// with and without recomputation, and the executor's measured peak against the
// simulator's (the node keeps the inputs it saved by shape only).
#include <gtest/gtest.h>

#include <torch/csrc/autograd/autograd.h>

#include <set>

#include "base/memory_tracker.h"
#include "gradient_check.h"
#include "graph/aten_call.h"
#include "graph/graph_builder.h"
#include "node_named.h"
#include "ops/op_kernels.h"
#include "planner/baselines/baseline_plans.h"
#include "quick_profile.h"

namespace monet {
namespace {

// x.op(rest...) as a generic node.
int unary_node(GraphBuilder& b, const std::string& op, const std::string& overload, int x,
               const std::string& name, std::vector<c10::IValue> rest = {}) {
  rest.insert(rest.begin(), c10::IValue());
  // x's strides where it is a non-contiguous view (a transpose), as the importer passes.
  const Value& v = b.graph().value(x);
  std::vector<int64_t> strides;
  if (v.producer >= 0 && b.graph().node(v.producer).op == OpKind::kAten)
    strides = b.graph().node(v.producer).attrs.aten->output_strides;
  OpAttrs a;
  a.aten = make_aten_call(op, overload, std::move(rest), {0}, {v.shape}, {true}, {strides});
  return b.graph().add_node(OpKind::kAten, name, {x}, a);
}

// conv, sin (saves its input), pow (saves its input), max over channels (keeps its
// indices of its own), cumsum (saves nothing), a reshape that copies a transpose, tanh
// (saves its output: no autograd node), pooling, linear.
Graph saved_graph() {
  GraphBuilder b("autograd_nodes");
  const int x = b.input("input", {2, 3, 6, 6});
  int h = b.conv(x, "conv1", {8, {3}, 1, 1, 1, true, default_init()});
  h = unary_node(b, "aten::sin", "", h, "sin");
  h = unary_node(b, "aten::pow", "Tensor_Scalar", h, "pow", {2.0});
  h = b.conv(h, "conv2", {8, {3}, 1, 1, 1, true, default_init()});
  h = unary_node(b, "aten::max", "dim", h, "max", {int64_t{1}, true});
  h = unary_node(b, "aten::cumsum", "", h, "cumsum", {int64_t{3}, c10::IValue()});
  // A transpose (a view), then a reshape of it: a copy whose autograd graph has two nodes.
  h = unary_node(b, "aten::transpose", "int", h, "transpose", {int64_t{2}, int64_t{3}});
  h = unary_node(b, "aten::reshape", "", h, "reshape", {std::vector<int64_t>{2, 1, 36}});
  h = unary_node(b, "aten::reshape", "", h, "unflatten", {std::vector<int64_t>{2, 1, 6, 6}});
  h = unary_node(b, "aten::tanh", "", h, "tanh");
  const int head = b.flatten(b.adaptive_avg_pool(h, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 2));
  return b.finish();
}

const Node& named(const Graph& g, const std::string& name) { return testing::node_named(g, name); }

bool offers(const Graph& g, const std::string& name) {
  const Node& n = named(g, name);
  bool forward = false, backward = false;
  for (const auto& f : forward_impls(g, n)) forward = forward || f.name == "autograd";
  for (const auto& b : backward_impls(g, n)) backward = backward || b.name == "autograd";
  EXPECT_EQ(forward, backward) << name;
  return forward;
}

// saved_graph() with its initial state, a batch and their quick profile.
struct Profiled {
  Graph graph = saved_graph();
  ModelState state = ModelState::initialize(graph, 0);
  Batch batch = make_batch(graph, 1);
  CostModel costs = testing::quick_profile(graph, state, batch);
};

// Every generic node's forward and backward set to "autograd" where offered.
Plan with_autograd_nodes(const Graph& g, Plan plan) {
  for (Instruction& in : plan.program) {
    if (in.kind == InstrKind::kFree || !offers(g, g.node(in.node).name)) continue;
    in.impl = "autograd";
  }
  return plan;
}

TEST(AutogradNode, OfferedWhereTheDerivativeKeepsNoOutput) {
  const Graph g = saved_graph();
  for (const char* name : {"sin", "pow", "max", "cumsum", "reshape"})
    EXPECT_TRUE(offers(g, name)) << name;
  EXPECT_FALSE(offers(g, "tanh"));       // keeps its output, and has its own backward from it
  EXPECT_FALSE(offers(g, "transpose"));  // a view
  // A matmul that broadcasts runs mm on a 2-D view of its input, which its graph keeps:
  // the graph holds the input other than by leaf.
  const auto broadcast = make_aten_call("aten::matmul", "", {c10::IValue(), c10::IValue()}, {0, 1},
                                        {{2, 3, 4}, {4, 5}}, {true, true});
  EXPECT_FALSE(broadcast->autograd_keeps_inputs_by_leaf);
  EXPECT_TRUE(named(g, "sin").attrs.aten->autograd_keeps_inputs_by_leaf);
  // What the node holds of its own: max's int64 indices [2, 1, 6, 6]; nothing for the
  // others (sin and pow keep their input, which is the plan's).
  EXPECT_EQ(intermediate_bytes(g, named(g, "max"), "autograd"), 2 * 1 * 6 * 6 * 8);
  EXPECT_EQ(intermediate_bytes(g, named(g, "sin"), "autograd"), 0);
  EXPECT_EQ(intermediate_bytes(g, named(g, "cumsum"), "autograd"), 0);
  const auto sin_backward = find_backward_impl(backward_impls(g, named(g, "sin")), named(g, "sin"),
                                               BackwardPart::kAll, "autograd");
  EXPECT_EQ(sin_backward.reads_inputs, std::vector<int>{0});
  EXPECT_TRUE(sin_backward.reads_intermediate);
  EXPECT_EQ(sin_backward.requires_forward, std::vector<std::string>{"autograd"});
}

// The node keeps sin's input by shape only: freeing the input frees its memory, and the
// backward reads whichever live copy of the input it is given. Max's node holds its
// indices, the declared intermediate.
TEST(AutogradNode, HoldsOnlyWhatItKeepsOfItsOwn) {
  MemoryTracker::install();
  const Graph g = saved_graph();
  for (const char* name : {"sin", "max"}) {
    const Node& n = named(g, name);
    const auto f = find_forward_impl(forward_impls(g, n), n, "autograd");
    at::Tensor x = at::randn(g.value(n.inputs[0]).shape);
    const at::Tensor copy = x.clone();
    const int64_t x_bytes = static_cast<int64_t>(x.nbytes());
    const int64_t before = MemoryTracker::current();
    NodeState state;
    ForwardOutput out = run_forward(g, n, f, {x}, state, true);
    x.reset();
    EXPECT_EQ(MemoryTracker::current() - before, static_cast<int64_t>(out.output.nbytes()) +
                                                     intermediate_bytes(g, n, f.name) - x_bytes)
        << name;
    BackwardArgs args;
    args.grad_output = at::randn(out.output.sizes());
    args.inputs = {copy};
    args.intermediate = out.intermediate;
    args.needs_grad = {true};
    const auto b = find_backward_impl(backward_impls(g, n), n, BackwardPart::kAll, "autograd");
    const at::Tensor got = run_backward(g, n, b, args, state).at(0);
    const at::Tensor leaf = copy.detach().requires_grad_(true);
    const at::Tensor y = call_aten(*n.attrs.aten, {leaf});
    const at::Tensor want = torch::autograd::grad({y}, {leaf}, {args.grad_output})[0];
    EXPECT_TRUE(at::allclose(got, want)) << name;
  }
}

// Store-all keeps the autograd node of every generic operator that offers one (what
// PyTorch's derivative saves), not a re-run at the backward, which would make the result
// again beside its input's gradient: its peak is at most the re-running store-all's.
TEST(AutogradNode, StoreAllKeepsTheNodeWhereOffered) {
  MemoryTracker::install();
  const Profiled p;
  const Graph& g = p.graph;
  const Plan plan = store_all_plan(g);
  Plan rerunning = plan;
  size_t kept = 0;
  for (Instruction& in : rerunning.program) {
    if (in.kind == InstrKind::kFree || !offers(g, g.node(in.node).name)) continue;
    EXPECT_EQ(in.impl, "autograd") << g.node(in.node).name;
    kept += in.kind == InstrKind::kBackward;
    in.impl = in.kind == InstrKind::kBackward ? "rerun" : "default";
  }
  EXPECT_EQ(kept, 5u);  // sin, pow, max, cumsum, reshape
  const SimulationResult all = simulate(g, plan, p.costs);
  EXPECT_LE(all.peak_bytes, simulate(g, rerunning, p.costs).peak_bytes);
  testing::expect_runs_as_simulated(g, p.state, p.batch, plan, all);
}

TEST(AutogradNode, GradientsAndPeakMatchUnderStoreAllAndRecomputation) {
  MemoryTracker::install();
  const Profiled p;
  const Graph& g = p.graph;
  for (const Plan& base : {store_all_plan(g), chen_plan(g)}) {
    const Plan plan = with_autograd_nodes(g, base);
    std::set<std::string> impls;
    for (const Instruction& in : plan.program)
      if (in.kind == InstrKind::kBackward) impls.insert(in.impl);
    EXPECT_TRUE(impls.count("autograd")) << plan.planner;
    testing::expect_runs_as_simulated(g, p.state, p.batch, plan, simulate(g, plan, p.costs));
  }
}

}  // namespace
}  // namespace monet
