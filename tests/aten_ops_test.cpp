// Generic ATen operators (graph/aten_call.h, ops/aten_impls.h): what the probe finds that
// PyTorch's derivatives keep, every implementation against autograd, the declared sizes,
// and the planner choosing a specialised backward where it saves memory.
#include <gtest/gtest.h>

#include <set>

#include "base/memory_tracker.h"
#include "gradient_check.h"
#include "graph/aten_call.h"
#include "graph/graph_builder.h"
#include "halfway_budget.h"
#include "node_named.h"
#include "ops/aten_impls.h"
#include "ops/op_kernels.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/monet_planner.h"
#include "quick_profile.h"
#include "rotated_plan.h"

namespace monet {
namespace {

// A kAten node applying `op` (default overload) to x, with the arguments after it.
int aten(GraphBuilder& b, const std::string& op, int x, const std::string& name,
         std::vector<c10::IValue> rest = {}, const std::string& overload = "") {
  rest.insert(rest.begin(), c10::IValue());
  OpAttrs a;
  a.aten = make_aten_call(op, overload, std::move(rest), {0}, {b.graph().value(x).shape}, {true});
  return b.graph().add_node(OpKind::kAten, name, {x}, a);
}

// A layer or group norm node (`what`: the normalised shape or the group count) with
// affine parameters drawn from N(0, 1).
int norm(GraphBuilder& b, const std::string& op, int x, const std::string& name, c10::IValue what,
         int64_t size) {
  Graph& g = b.graph();
  InitSpec init;
  init.kind = InitKind::kNormal;
  init.std = 1.0;
  const int w = g.add_parameter(name + ".weight", {size}, init);
  const int bias = g.add_parameter(name + ".bias", {size}, init);
  OpAttrs a;
  a.aten = make_aten_call(op, "", {c10::IValue(), what, c10::IValue(), c10::IValue(), 1e-5, true},
                          {0, 2, 3}, {g.value(x).shape, {size}, {size}}, {true, true, true});
  return g.add_node(OpKind::kAten, name, {x, w, bias}, a);
}

// x @ y through the dispatcher (aten::matmul).
int matmul(GraphBuilder& b, int x, int y, const std::string& name) {
  Graph& g = b.graph();
  OpAttrs a;
  a.aten = make_aten_call("aten::matmul", "", {c10::IValue(), c10::IValue()}, {0, 1},
                          {g.value(x).shape, g.value(y).shape}, {true, true});
  return g.add_node(OpKind::kAten, name, {x, y}, a);
}

// conv, group norm, leaky ReLU, conv, tanh, x @ xᵀ (a transposed view), softmax, layer
// norm, ELU, GELU, nearest upsampling, pooling, linear.
Graph activations_graph() {
  GraphBuilder b("generic_activations");
  const int x = b.input("input", {2, 3, 6, 6});
  int h = b.conv(x, "conv1", {8, {3}, 1, 1, 1, true, default_init()});
  h = norm(b, "aten::group_norm", h, "group_norm", int64_t{2}, 8);
  h = aten(b, "aten::leaky_relu", h, "leaky", {0.1});
  h = b.conv(h, "conv2", {8, {3}, 1, 1, 1, true, default_init()});
  h = aten(b, "aten::tanh", h, "tanh");
  const int ht = aten(b, "aten::transpose", h, "transpose", {int64_t{-2}, int64_t{-1}}, "int");
  h = matmul(b, h, ht, "matmul");
  h = aten(b, "aten::softmax", h, "softmax", {int64_t{-1}, c10::IValue()}, "int");
  h = norm(b, "aten::layer_norm", h, "layer_norm", std::vector<int64_t>{6}, 6);
  h = aten(b, "aten::elu", h, "elu", {1.0, 1.0, 1.0});
  h = aten(b, "aten::gelu", h, "gelu", {std::string("tanh")});
  h = aten(b, "aten::upsample_nearest2d", h, "up",
           {c10::IValue(), c10::IValue(std::vector<double>{2.0, 2.0})}, "vec");
  const int head = b.flatten(b.adaptive_avg_pool(h, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 2));
  return b.finish();
}

std::shared_ptr<const AtenCall> unary(const std::string& op, std::vector<c10::IValue> rest = {},
                                      const std::string& overload = "") {
  rest.insert(rest.begin(), c10::IValue());
  return make_aten_call(op, overload, std::move(rest), {0}, {{2, 3, 4, 4}}, {true});
}

TEST(AtenCall, ProbeFindsWhatTheDerivativeKeeps) {
  const auto gelu = unary("aten::gelu", {std::string("none")});
  EXPECT_TRUE(gelu->saves_input[0]);
  EXPECT_FALSE(gelu->saves_output);
  const auto tanh = unary("aten::tanh");
  EXPECT_FALSE(tanh->saves_input[0]);
  EXPECT_TRUE(tanh->saves_output);
  const auto permute = unary("aten::permute", {std::vector<int64_t>{0, 2, 3, 1}});
  EXPECT_FALSE(permute->saves_input[0]);
  EXPECT_FALSE(permute->saves_output);
  EXPECT_EQ(permute->output_shape, (std::vector<int64_t>{2, 4, 4, 3}));
  const auto up = unary("aten::upsample_bilinear2d",
                        {c10::IValue(), false, std::vector<double>{2.0, 2.0}}, "vec");
  EXPECT_FALSE(up->saves_input[0]);
  EXPECT_EQ(up->output_shape, (std::vector<int64_t>{2, 3, 8, 8}));
  const auto mul = make_aten_call("aten::mul", "Tensor", {c10::IValue(), c10::IValue()}, {0, 1},
                                  {{2, 3}, {2, 3}}, {true, true});
  EXPECT_TRUE(mul->saves_input[0]);
  EXPECT_TRUE(mul->saves_input[1]);
  // The description, part of the fingerprint, names the arguments.
  EXPECT_NE(describe_aten_call(*gelu).find("aten::gelu(%0, 'none') saves=[1]"), std::string::npos)
      << describe_aten_call(*gelu);
}

// Which results are views monet keeps as views: those of the input's storage, all of it
// or part.
TEST(AtenCall, ProbeFindsViewsOfTheInput) {
  EXPECT_TRUE(unary("aten::reshape", {std::vector<int64_t>{2, 48}})->output_aliases_input);
  EXPECT_TRUE(unary("aten::view", {std::vector<int64_t>{6, 16}})->output_aliases_input);
  EXPECT_TRUE(unary("aten::unsqueeze", {int64_t{1}})->output_aliases_input);
  EXPECT_TRUE(unary("aten::contiguous", {c10::MemoryFormat::Contiguous})->output_aliases_input);
  EXPECT_TRUE(unary("aten::reshape", {std::vector<int64_t>{2, 48}})->output_strides.empty());
  const auto permute = unary("aten::permute", {std::vector<int64_t>{0, 2, 3, 1}});
  EXPECT_TRUE(permute->output_aliases_input);
  EXPECT_EQ(permute->output_strides, (std::vector<int64_t>{48, 4, 1, 16}));
  // Probed on the permuted layout, a reshape has to copy; contiguous() too.
  const std::vector<std::vector<int64_t>> permuted = {{48, 4, 1, 16}};
  for (const auto& [op, rest] : std::vector<std::pair<std::string, std::vector<c10::IValue>>>{
           {"aten::reshape", {c10::IValue(), std::vector<int64_t>{2, 48}}},
           {"aten::contiguous", {c10::IValue(), c10::MemoryFormat::Contiguous}}})
    EXPECT_FALSE(
        make_aten_call(op, "", rest, {0}, {{2, 4, 4, 3}}, {true}, permuted)->output_aliases_input)
        << op;
  // Part of the storage: a view too, contiguous (a sample) or strided (channels).
  const auto sample = unary("aten::select", {int64_t{0}, int64_t{1}}, "int");
  EXPECT_TRUE(sample->output_aliases_input);
  EXPECT_TRUE(sample->output_strides.empty());
  const auto channels =
      unary("aten::slice", {int64_t{1}, int64_t{1}, int64_t{3}, int64_t{1}}, "Tensor");
  EXPECT_TRUE(channels->output_aliases_input);
  EXPECT_EQ(channels->output_strides, (std::vector<int64_t>{48, 16, 4, 1}));
  EXPECT_FALSE(unary("aten::tanh")->output_aliases_input);
  EXPECT_NE(
      describe_aten_call(*unary("aten::reshape", {std::vector<int64_t>{2, 48}})).find(" view"),
      std::string::npos);
}

// Reshapes and slices of activations are views: they take no memory, nothing writes in place into
// the storage they share, the executor's measured peak is the simulator's, and the
// gradients are autograd's.
TEST(AtenOps, ViewsShareTheirInputsStorage) {
  MemoryTracker::install();
  GraphBuilder b("views");
  const int x = b.input("input", {2, 3, 6, 6});
  int h = b.conv(x, "conv1", {8, {3}, 1, 1, 1, true, default_init()});
  const int flat = aten(b, "aten::reshape", h, "flat", {std::vector<int64_t>{2, 8, 36}});
  h = b.relu(flat, "relu", /*inplace=*/true);
  h = aten(b, "aten::reshape", h, "back", {std::vector<int64_t>{2, 8, 6, 6}});
  // Slices of channels, read by generic operators: views of part of the storage, which
  // each holds whole while it lives. One a backward reads (tanh's re-run) is copied: kept,
  // the copy holds only its part.
  const int lo =
      aten(b, "aten::slice", h, "lo", {int64_t{1}, int64_t{0}, int64_t{4}, int64_t{1}}, "Tensor");
  const int hi =
      aten(b, "aten::slice", h, "hi", {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{1}}, "Tensor");
  h = b.cat({aten(b, "aten::mul", lo, "double", {c10::Scalar(2.0)}, "Scalar"),
             aten(b, "aten::tanh", hi, "tanh")},
            "rejoin");
  // A permute read by a generic operator stays a view; one read by a convolution is
  // copied (copy_views_where_needed, in GraphBuilder::finish).
  const int nhwc = aten(b, "aten::permute", h, "nhwc", {std::vector<int64_t>{0, 2, 3, 1}});
  h = aten(b, "aten::gelu", nhwc, "gelu", {std::string("none")});
  const int nchw = aten(b, "aten::permute", h, "nchw", {std::vector<int64_t>{0, 3, 1, 2}});
  h = b.conv(nchw, "conv2", {4, {3}, 1, 1, 1, true, default_init()});
  const int head = b.flatten(b.adaptive_avg_pool(h, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 2));
  const Graph g = b.finish();

  const Node& reshape = g.node(g.value(flat).producer);
  const auto impls = forward_impls(g, reshape);
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_TRUE(impls[0].output_aliases_input);
  EXPECT_TRUE(storage_shared(g, flat));
  EXPECT_TRUE(g.node(g.value(nhwc).producer).attrs.aten->output_aliases_input);
  EXPECT_TRUE(g.node(g.value(lo).producer).attrs.aten->output_aliases_input);
  EXPECT_TRUE(storage_shared(g, lo));
  EXPECT_FALSE(g.node(g.value(hi).producer).attrs.aten->output_aliases_input);
  EXPECT_FALSE(g.node(g.value(nchw).producer).attrs.aten->output_aliases_input);
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::kReLU) continue;
    for (const ForwardImplInfo& f : forward_impls(g, n))
      EXPECT_FALSE(f.inplace) << "relu in place on a view: " << f.name;
  }

  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  for (const Plan& plan : {store_all_plan(g), chen_plan(g)})
    testing::expect_runs_as_simulated(g, state, batch, plan, simulate(g, plan, costs));
  // The program counts each storage once: at the leanest heuristic's peak it finds a plan,
  // and that plan runs as simulated.
  MonetOptions o;
  o.budget_bytes = testing::lean_budget(g, costs);
  o.solver.time_limit_seconds = 10;
  o.solver.search_limit = SearchLimit::kWork;
  const MonetResult r = plan_monet(g, costs, o);
  ASSERT_TRUE(r.found);
  EXPECT_LE(r.predicted.peak_bytes, o.budget_bytes);
  testing::expect_runs_as_simulated(g, state, batch, r.plan, r.predicted);
}

// Integer and boolean results keep their type (they have no gradient); an operator the
// dispatcher does not know is refused, by name.
TEST(AtenCall, IntegerResultsKeepTheirTypeAndUnknownOperatorsAreRefused) {
  EXPECT_EQ(unary("aten::argmax", {c10::IValue(), false})->output_dtype, at::kLong);
  EXPECT_EQ(unary("aten::gt", {0.0}, "Scalar")->output_dtype, at::kBool);
  const auto indices = make_aten_call("aten::max", "dim", {c10::IValue(), int64_t{1}, false}, {0},
                                      {{2, 3, 4, 4}}, {true}, {}, {}, /*result_index=*/1);
  EXPECT_EQ(indices->output_dtype, at::kLong);
  EXPECT_EQ(indices->output_shape, (std::vector<int64_t>{2, 4, 4}));
  EXPECT_NE(describe_aten_call(*indices).find("result=1 -> Long"), std::string::npos)
      << describe_aten_call(*indices);
  try {
    unary("aten::no_such_operator");
    ADD_FAILURE() << "an unknown operator was accepted";
  } catch (const AtenCallError& e) {
    EXPECT_NE(std::string(e.what()).find("aten::no_such_operator"), std::string::npos) << e.what();
  }
}

// A random draw reads nothing that carries a gradient, nor does what is computed from it
// alone: neither takes a gradient, and fractional max pooling reads the draw as its samples
// without asking for one (PyTorch refuses a gradient for them).
TEST(AtenCall, WhatReadsOnlyRandomDrawsTakesNoGradient) {
  GraphBuilder b("fractional_pool");
  Graph& g = b.graph();
  const int x = b.input("input", {2, 3, 8, 8});
  const int h = aten(b, "aten::relu", x, "relu");
  const auto call_on = [&](std::shared_ptr<const AtenCall> call, const std::vector<int>& in,
                           const std::string& name) {
    OpAttrs a;
    a.aten = with_gradient_of_inputs(std::move(call), aten_inputs_of(g, in));
    return g.add_node(OpKind::kAten, name, in, a);
  };
  const int draw = call_on(make_aten_call("aten::rand", "",
                                          {std::vector<int64_t>{2, 3, 2}, c10::IValue(),
                                           c10::IValue(), c10::IValue(), c10::IValue()},
                                          {}, {}, {}),
                           {}, "draw");
  const AtenInputs scaled_in = aten_inputs_of(g, {draw});
  EXPECT_TRUE(scaled_in.reads_no_gradient);
  const int scaled = call_on(make_aten_call("aten::mul", "Scalar", {c10::IValue(), 0.5}, {0},
                                            scaled_in.shapes, scaled_in.differentiable),
                             {draw}, "scaled");
  EXPECT_FALSE(takes_gradient(g, draw));
  EXPECT_FALSE(takes_gradient(g, scaled));
  const AtenInputs pool_in = aten_inputs_of(g, {h, scaled});
  EXPECT_EQ(pool_in.differentiable, (std::vector<bool>{true, false}));
  EXPECT_FALSE(pool_in.reads_no_gradient);
  const int pooled = call_on(make_aten_call("aten::fractional_max_pool2d", "",
                                            {c10::IValue(), std::vector<int64_t>{3, 3},
                                             std::vector<int64_t>{3, 3}, c10::IValue()},
                                            {0, 3}, pool_in.shapes, pool_in.differentiable),
                             {h, scaled}, "pool");
  EXPECT_TRUE(takes_gradient(g, pooled));
  EXPECT_EQ(g.value(pooled).shape, (std::vector<int64_t>{2, 3, 3, 3}));
  // What reads the model's input alone still carries a gradient, as it did.
  EXPECT_TRUE(takes_gradient(g, h));
}

// A list of tensors as an argument: each element is a node input at the list's slot, in
// list order (einsum's operands); a float32 constant follows float64 inputs.
TEST(AtenCall, ListArgumentsTakeTheirElementsFromTheNodeInputs) {
  const auto einsum =
      make_aten_call("aten::einsum", "", {std::string("ij,jk->ik"), c10::IValue(), c10::IValue()},
                     {1, 1}, {{2, 3}, {3, 4}}, {true, true}, {}, {},
                     /*result_index=*/0, /*list_indices=*/{0, 1});
  EXPECT_EQ(einsum->output_shape, (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(einsum->saves_input[0] && einsum->saves_input[1]);
  EXPECT_NE(describe_aten_call(*einsum).find("'ij,jk->ik', [%0, %1]"), std::string::npos)
      << describe_aten_call(*einsum);
  const at::Tensor a = at::randn({2, 3}, at::kDouble), b = at::randn({3, 4}, at::kDouble);
  EXPECT_TRUE(at::allclose(call_aten(*einsum, {a, b}), at::matmul(a, b)));
  // Reversed list order: the same operands, given as node inputs the other way round.
  const auto reversed =
      make_aten_call("aten::einsum", "", {std::string("ij,jk->ik"), c10::IValue(), c10::IValue()},
                     {1, 1}, {{3, 4}, {2, 3}}, {true, true}, {}, {}, 0, {1, 0});
  EXPECT_TRUE(at::allclose(call_aten(*reversed, {b, a}), at::matmul(a, b)));
  const auto with_constant =
      make_aten_call("aten::matmul", "", {c10::IValue(), at::ones({3, 2})}, {0}, {{2, 3}}, {true});
  EXPECT_TRUE(
      at::allclose(call_aten(*with_constant, {a}), at::matmul(a, at::ones({3, 2}, at::kDouble))));
}

// The trace's float32 dtype arguments follow float64 inputs: x.to(torch.float32) of a
// float32 trace stays the view of its input it was probed as.
TEST(AtenCall, Float32DtypeArgumentsFollowFloat64Inputs) {
  const auto to =
      make_aten_call("aten::to", "dtype",
                     {c10::IValue(), static_cast<int64_t>(at::kFloat), false, false, c10::IValue()},
                     {0}, {{2, 3}}, {true});
  EXPECT_TRUE(to->output_aliases_input);
  const at::Tensor x = at::randn({2, 3}, at::kDouble);
  const at::Tensor y = call_aten(*to, {x});
  EXPECT_EQ(y.scalar_type(), at::kDouble);
  EXPECT_TRUE(y.is_alias_of(x));
  // Other integer arguments stay as they are (6 is kFloat's value, as a dimension here).
  const auto sum = make_aten_call("aten::sum", "dim_IntList",
                                  {c10::IValue(), std::vector<int64_t>{1}, false, c10::IValue()},
                                  {0}, {{2, 7}}, {true});
  EXPECT_EQ(sum->output_shape, (std::vector<int64_t>{2}));
}

// Channel-wise dropout (nn.Dropout2d) zeroes whole channels, and every implementation
// pair gives the reference's gradients (the same noise, kept, packed or drawn again).
TEST(Dropout, ChannelWiseZeroesWholeChannelsInEveryImplementation) {
  MemoryTracker::install();
  GraphBuilder b("channel_dropout");
  const int x = b.input("input", {4, 6, 5, 5});
  int h = b.conv(x, "conv1", {8, {3}, 1, 1, 1, true, default_init()});
  h = b.dropout(h, "drop", 0.5, DropoutShape::kChannel);
  h = b.conv(h, "conv2", {8, {3}, 1, 1, 1, true, default_init()});
  const int head = b.flatten(b.adaptive_avg_pool(h, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 4));
  const Graph g = b.finish();
  const Node& drop = testing::node_named(g, "drop");
  EXPECT_EQ(dropout_noise_shape(drop, {4, 8, 5, 5}), (std::vector<int64_t>{4, 8, 1, 1}));
  NodeState state;
  state.seed = 7;
  const at::Tensor ones = at::ones({4, 8, 5, 5});
  for (const ForwardImplInfo& f : forward_impls(g, drop)) {
    const at::Tensor y = kernels::dropout_forward(drop, f, ones, state, true).output;
    const at::Tensor per_channel = y.amax({2, 3});
    EXPECT_TRUE(at::equal(y.amin({2, 3}), per_channel)) << f.name;  // whole channels
    EXPECT_GT(per_channel.eq(0).sum().item<int64_t>(), 0) << f.name;
    EXPECT_GT(per_channel.eq(2).sum().item<int64_t>(), 0) << f.name;
  }
  std::set<std::string> used;
  for (int variant = 0; variant < 3; ++variant)
    EXPECT_LT(testing::max_gradient_error(g, testing::rotated_plan(g, variant, &used)), 1e-9);
  for (const std::string impl : {"default", "reseed", "mask"})
    EXPECT_TRUE(used.count("dropout forward " + impl)) << impl;
}

TEST(AtenOps, EveryImplementationMatchesAutograd) {
  MemoryTracker::install();
  const Graph g = activations_graph();
  std::set<std::string> used, by_node;
  for (int variant = 0; variant < 6; ++variant) {
    const Plan plan = testing::rotated_plan(g, variant, &used);
    EXPECT_LT(testing::max_gradient_error(g, plan), 1e-9) << "variant " << variant;
    for (const Instruction& in : plan.program)
      if (in.kind == InstrKind::kBackward) by_node.insert(g.node(in.node).name + " " + in.impl);
  }
  for (const char* impl :
       {"group_norm input", "group_norm output", "leaky input", "leaky output", "leaky mask",
        "tanh output", "tanh rerun", "matmul inputs", "matmul rerun", "softmax output",
        "softmax rerun", "layer_norm input", "layer_norm output", "elu input", "elu output",
        "gelu input", "up rerun"})
    EXPECT_TRUE(by_node.count(impl)) << impl;
  EXPECT_TRUE(used.count("aten forward mask"));
  // Recomputation: the norms reuse the statistics of their first forward.
  EXPECT_LT(testing::max_gradient_error(g, chen_plan(g)), 1e-9);
}

// A traced loss inside the plan: logits [N, C, T] into a generic aten::cross_entropy_loss
// (mean, some targets ignore_index), its scalar summed as the graph's loss. Its "softmax"
// backward gives autograd's gradients, and needs a tensor of the logits' size where the
// re-run makes three.
TEST(AtenOps, CrossEntropyBackwardFromTheSoftmaxMatchesAutogradWithIgnoredTargets) {
  MemoryTracker::install();
  GraphBuilder b("traced_cross_entropy");
  const int x = b.input("input", {4, 6});
  const int h = b.linear(x, "fc", 5 * 3);
  OpAttrs view;
  view.aten = make_aten_call("aten::view", "", {c10::IValue(), std::vector<int64_t>{4, 5, 3}}, {0},
                             {b.graph().value(h).shape}, {true});
  const int logits = b.graph().add_node(OpKind::kAten, "view", {h}, view);
  const int target = b.graph().add_input("labels", {4, 3}, at::kLong);
  OpAttrs ce;
  ce.aten =
      make_aten_call("aten::cross_entropy_loss", "",
                     {c10::IValue(), c10::IValue(), c10::IValue(), int64_t{1}, int64_t{1}, 0.0},
                     {0, 1}, {{4, 5, 3}, {4, 3}}, {true, false}, {}, {at::kFloat, at::kLong});
  const int loss = b.graph().add_node(OpKind::kAten, "ce", {logits, target}, ce);
  b.graph().add_node(OpKind::kSumLoss, "loss", {loss});
  const Graph g = b.finish();
  const Node& n = testing::node_named(g, "ce");
  ASSERT_TRUE(is_plain_cross_entropy(g, n));
  std::set<std::string> names;
  for (const auto& impl : backward_impls(g, n)) names.insert(impl.name);
  EXPECT_EQ(names, (std::set<std::string>{"softmax", "rerun"}));
  // Targets 0 and 1 at random (ignore_index 1): some ignored, some kept.
  for (const std::string impl : {"softmax", "rerun"}) {
    Plan plan = store_all_plan(g);
    for (Instruction& in : plan.program)
      if (in.kind == InstrKind::kBackward && in.node == n.id) in.impl = impl;
    EXPECT_LT(testing::max_gradient_error(g, plan), 1e-9) << impl;
  }
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, ModelState::initialize(g, 0), batch);
  const int64_t logits_bytes = g.value(logits).bytes();
  EXPECT_LE(costs.backward(g, n.id, BackwardPart::kAll, "softmax").workspace_bytes, logits_bytes);
}

TEST(AtenOps, SignMaskHasItsDeclaredSize) {
  const Graph g = activations_graph();
  const Node* leaky = &testing::node_named(g, "leaky");
  NodeState state;
  const auto impl = find_forward_impl(forward_impls(g, *leaky), *leaky, "mask");
  const auto out = run_forward(g, *leaky, impl, {at::randn({2, 8, 6, 6})}, state, true);
  EXPECT_EQ(out.intermediate.nbytes(), intermediate_bytes(g, *leaky, "mask"));
  EXPECT_EQ(intermediate_bytes(g, *leaky, "mask"), 2 * 8 * 6 * 6 / 8);
}

// At the smallest budget the memory-lean plans reach, with costs under which the backwards
// that keep the input are slower than those that keep the leaky ReLU's 1-bit mask or
// tanh's output, the planner takes the mask and the output, and the plan runs as
// simulated.
TEST(AtenOps, PlannerChoosesOutputOrMaskBackwardsUnderATightBudget) {
  MemoryTracker::install();
  const Graph g = activations_graph();
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  CostModel costs = testing::quick_profile(g, state, batch);
  for (const char* name : {"leaky", "tanh"}) {
    const Node& n = testing::node_named(g, name);
    for (const BackwardImplInfo& b : backward_impls(g, n))
      if (b.name == "input")
        costs.nodes.at(n.id).backward.at(backward_cost_key(b.part, b.name)).seconds *= 2;
  }
  MonetOptions o;
  o.budget_bytes = testing::lean_budget(g, costs);
  o.solver.time_limit_seconds = 10;
  o.solver.search_limit = SearchLimit::kWork;
  const MonetResult r = plan_monet(g, costs, o);
  ASSERT_TRUE(r.found);
  std::map<std::string, std::string> backward;
  for (const Instruction& in : r.plan.program)
    if (in.kind == InstrKind::kBackward) backward[g.node(in.node).name] = in.impl;
  EXPECT_NE(backward.at("leaky"), "input");
  EXPECT_EQ(backward.at("tanh"), "output");
  testing::expect_runs_as_simulated(g, state, batch, r.plan, r.predicted);
  std::cout << "leaky ReLU backward: " << backward.at("leaky")
            << ", tanh backward: " << backward.at("tanh") << " at " << o.budget_bytes << " B\n";
}

}  // namespace
}  // namespace monet

namespace monet {
namespace {

// conv, GELU (tanh approximation), pooling, linear: with `lossy` offered or not.
Graph gelu_graph(LossyOffer lossy) {
  GraphBuilder b("gelu");
  const int x = b.input("input", {2, 3, 8, 8});
  const int h = b.conv(x, "conv", {6, {3}, 1, 1, 1, true, default_init()});
  OpAttrs a;
  a.aten = make_aten_call("aten::gelu", "", {c10::IValue(), std::string("tanh")}, {0},
                          {b.graph().value(h).shape}, {true});
  a.lossy = lossy;
  const int g = b.graph().add_node(OpKind::kAten, "gelu", {h}, a);
  const int head = b.flatten(b.adaptive_avg_pool(g, "pool", {1, 1}), "flatten");
  b.cross_entropy(b.linear(head, "fc", 3), b.class_target("target", 2));
  return b.finish();
}

using testing::node_named;

// The few-bit GELU backward is offered only where lossy implementations are, is marked
// lossy, keeps 4 bits an element, and its gradient error is reported, not hidden.
TEST(AtenOps, LossyGeluIsOfferedOnlyWhenAskedAndItsErrorIsReported) {
  MemoryTracker::install();
  const Graph exact = gelu_graph(LossyOffer::kExcluded);
  for (const auto& f : forward_impls(exact, node_named(exact, "gelu")))
    EXPECT_FALSE(f.lossy) << f.name;
  const Graph g = gelu_graph(LossyOffer::kOffered);
  EXPECT_NE(g.fingerprint(), exact.fingerprint());
  const Node& gelu = node_named(g, "gelu");
  const ForwardImplInfo f = find_forward_impl(forward_impls(g, gelu), gelu, "lossy_4bit");
  EXPECT_TRUE(f.lossy);
  EXPECT_EQ(intermediate_bytes(g, gelu, "lossy_4bit"), 2 * 6 * 8 * 8 / 2);
  NodeState state;
  const at::Tensor x = at::linspace(-5, 5, 2 * 6 * 8 * 8).view({2, 6, 8, 8});
  const ForwardOutput out = run_forward(g, gelu, f, {x}, state, true);
  EXPECT_EQ(static_cast<int64_t>(out.intermediate.nbytes()),
            intermediate_bytes(g, gelu, "lossy_4bit"));
  // The piecewise-constant derivative against GELU's: close, not equal.
  BackwardArgs args;
  args.grad_output = at::ones_like(x);
  args.inputs = {at::Tensor()};
  args.intermediate = out.intermediate;
  args.needs_grad = {true};
  const BackwardImplInfo b =
      find_backward_impl(backward_impls(g, gelu), gelu, BackwardPart::kAll, "lossy_4bit");
  const at::Tensor approx = run_backward(g, gelu, b, args, state)[0];
  const double derivative_error =
      (approx - at::gelu_backward(at::ones_like(x), x, "tanh")).abs().max().item<double>();
  // At most about half an interval (6/14) times the derivative's largest slope (0.8).
  EXPECT_GT(derivative_error, 1e-3);
  EXPECT_LT(derivative_error, 0.2);
  // A plan using it: gradients within a few percent of autograd's (reported).
  Plan plan = store_all_plan(g);
  for (Instruction& in : plan.program)
    if (in.node == gelu.id) in.impl = "lossy_4bit";
  const GradientComparison c =
      compare_gradients(g, plan, ModelState::initialize(g, 0), make_batch(g, 1), at::kDouble, 7);
  double worst = 0;
  for (double e : c.relative_errors) worst = std::max(worst, e);
  EXPECT_GT(worst, 1e-6) << "the lossy backward should differ from autograd's";
  EXPECT_LT(worst, 0.2);
  EXPECT_EQ(lossy_forwards(g, plan), 1);
  EXPECT_EQ(lossy_forwards(g, store_all_plan(g)), 0);
  std::cout << "few-bit GELU: largest derivative error " << derivative_error
            << ", largest relative parameter-gradient error " << worst << " (float64)\n";
}

}  // namespace
}  // namespace monet
