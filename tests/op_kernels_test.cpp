// Operator implementations checked one at a time against the reference forward, and the
// compact encodings they keep (bit masks, 8-bit argmax offsets) against their sizes.
#include <gtest/gtest.h>

#include <tuple>

#include "base/memory_tracker.h"
#include "graph/graph_builder.h"
#include "ops/bit_mask.h"
#include "ops/op_kernels.h"
#include "ops/reference_forward.h"
#include "ops/shape_stand_in.h"

namespace monet {
namespace {

TEST(BitMask, RoundTripsAndPacksEightPerByte) {
  for (int64_t n : {1, 7, 8, 9, 1000}) {
    const at::Tensor mask = at::rand({n}) > 0.5;
    const at::Tensor packed = pack_bits(mask);
    EXPECT_EQ(packed.numel(), (n + 7) / 8);
    EXPECT_EQ(packed.scalar_type(), at::kByte);
    EXPECT_TRUE(at::equal(unpack_bits(packed, {n}), mask)) << n;
  }
  // Bit j of byte b is element 8b + j (the layout the intermediates keep).
  const at::Tensor first_and_ninth =
      at::zeros({9}, at::kBool).index_fill_(0, at::tensor({0, 8}, at::kLong), true);
  EXPECT_TRUE(at::equal(pack_bits(first_and_ninth), at::tensor({1, 1}, at::kByte)));
  // Many parallel tasks (the grain is 16 Ki bytes of bits).
  const at::Tensor big = at::rand({2, 3, 300, 301}) > 0.3;
  EXPECT_TRUE(at::equal(unpack_bits(pack_bits(big), big.sizes()), big));
}

// Every convolution forward algorithm computes what at::convolution computes.
TEST(OpKernels, ConvolutionForwardAlgorithmsAgree) {
  GraphBuilder b("conv");
  int x = b.input("input", {2, 5, 13, 11});
  const int y = b.conv(x, "conv", {6, {3}, 2, 1, 1, true, default_init()});
  Graph& g = b.graph();
  const Node& n = g.node(g.value(y).producer);
  at::manual_seed(0);
  const std::vector<at::Tensor> in = {at::randn({2, 5, 13, 11}), at::randn({6, 5, 3, 3}),
                                      at::randn({6})};
  const at::Tensor expected = reference_forward(n, in, true);
  NodeState state;
  const auto impls = forward_impls(g, n);
  EXPECT_GE(impls.size(), 3u);
  for (const auto& impl : impls) {
    const at::Tensor got = run_forward(g, n, impl, in, state, true).output;
    EXPECT_LE((got - expected).abs().max().item<double>(),
              1e-5 * expected.abs().max().item<double>())
        << impl.name;
  }
  int weight_algos = 0, input_algos = 0;
  for (const auto& bw : backward_impls(g, n))
    (bw.part == BackwardPart::kWeight ? weight_algos : input_algos)++;
  EXPECT_GE(weight_algos, 2);
  EXPECT_GE(input_algos, 2);
}

// Every backward implementation a convolution offers runs in the graph's floating type
// (PyTorch's CPU transposed convolutions take no bfloat16: those implementations are not
// offered there) and gives ATen's gradients, to rounding.
TEST(OpKernels, EveryConvolutionBackwardRunsInTheGraphsType) {
  for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    GraphBuilder b("conv");
    b.graph().set_floating_dtype(dtype);
    const int x = b.input("input", {2, 4, 9, 9});
    const int y = b.conv(x, "conv", {6, {3}, 2, 1, 1, false, default_init()});
    Graph& g = b.graph();
    const Node& n = g.node(g.value(y).producer);
    at::manual_seed(0);
    const at::TensorOptions type = at::dtype(dtype);
    BackwardArgs args;
    args.inputs = {at::randn({2, 4, 9, 9}, type), at::randn({6, 4, 3, 3}, type)};
    args.grad_output = at::randn({2, 6, 5, 5}, type);
    args.needs_grad = {true, true};
    const auto expected =
        at::convolution_backward(args.grad_output, args.inputs[0], args.inputs[1], c10::nullopt,
                                 {2, 2}, {1, 1}, {1, 1}, false, {0, 0}, 1, {true, true, false});
    const double tolerance = dtype == at::kBFloat16 ? 2e-2 : 1e-5;
    NodeState state;
    int ran = 0;
    for (const auto& impl : backward_impls(g, n)) {
      if (impl.reads_intermediate)
        continue;  // Gist's encodings: IntermediatesHaveTheirDeclaredSize
      const size_t k = impl.part == BackwardPart::kInput ? 0 : 1;
      const at::Tensor want = k == 0 ? std::get<0>(expected) : std::get<1>(expected);
      at::Tensor got;
      ASSERT_NO_THROW(got = run_backward(g, n, impl, args, state)[k])
          << impl.name << " in " << c10::toString(dtype);
      EXPECT_EQ(got.scalar_type(), dtype) << impl.name;
      EXPECT_LE((got - want).abs().max().item<double>(),
                tolerance * want.abs().max().item<double>())
          << impl.name << " in " << c10::toString(dtype);
      ++ran;
    }
    EXPECT_GE(ran, 4) << c10::toString(dtype);
  }
}

// A loss's gradient is LibTorch autograd's to the last bit, so that training under any
// plan starts its backward from exactly autograd's logits gradient.
TEST(OpKernels, LossGradientsEqualAutogradsBitForBit) {
  GraphBuilder b("losses");
  const int logits = b.input("logits", {4, 10});
  const int map = b.input("map", {4, 1, 6, 6});
  const int classes = b.class_target("classes", 4);
  const int mask = b.mask_target("mask", {4, 1, 6, 6});
  Graph& g = b.graph();
  const int ce = b.cross_entropy(logits, classes, "ce");
  const int bce = b.bce_with_logits(map, mask, "bce");
  const int mse = g.add_node(OpKind::kMSELoss, "mse", {map, mask});
  at::manual_seed(0);
  const at::Tensor x = at::randn({4, 10}, at::kDouble), m = at::randn({4, 1, 6, 6}, at::kDouble);
  const at::Tensor t = at::randint(10, {4}, at::kLong);
  const at::Tensor mt = at::rand({4, 1, 6, 6}, at::kDouble);
  for (const auto& [loss, prediction, target] :
       {std::tuple{ce, x, t}, std::tuple{bce, m, mt}, std::tuple{mse, m, mt}}) {
    const Node& n = g.node(g.value(loss).producer);
    const at::Tensor grad_output = at::full({}, 0.75, at::kDouble);
    const at::Tensor leaf = prediction.clone().requires_grad_(true);
    reference_forward(n, {leaf, target}, true).backward(grad_output);
    BackwardArgs a;
    a.inputs = {prediction, target};
    a.grad_output = grad_output;
    a.needs_grad = {true, false};
    NodeState state;
    const at::Tensor got = run_backward(g, n, backward_impls(g, n).at(0), a, state)[0];
    EXPECT_TRUE(at::equal(got, leaf.grad())) << n.name;
  }
}

// A batch norm recomputed in the backward gives its first forward's output to the last bit
// and leaves the running statistics alone; the output-activated backward (from the output
// and the batch statistics) gives the input-activated one's bias gradient to the last bit
// and its other gradients to rounding.
TEST(OpKernels, BatchNormRecomputationAndOutputBackwardRoundAsAtens) {
  GraphBuilder b("bn");
  const int y = b.batch_norm(b.input("input", {4, 6, 7, 5}), "bn");
  Graph& g = b.graph();
  const Node& n = g.node(g.value(y).producer);
  at::manual_seed(0);
  const auto d = at::kDouble;
  const std::vector<at::Tensor> in = {at::randn({4, 6, 7, 5}, d) * 3 + 1, at::randn({6}, d),
                                      at::randn({6}, d), at::zeros({6}, d), at::ones({6}, d)};
  NodeState state;
  const ForwardImplInfo forward = forward_impls(g, n).at(0);
  const at::Tensor first = run_forward(g, n, forward, in, state, true).output;
  const at::Tensor running_mean = in[3].clone(), running_var = in[4].clone();
  EXPECT_TRUE(at::equal(run_forward(g, n, forward, in, state, true).output, first));
  EXPECT_TRUE(at::equal(in[3], running_mean));
  EXPECT_TRUE(at::equal(in[4], running_var));
  {  // in float32 too
    std::vector<at::Tensor> in32;
    for (const auto& t : in) in32.push_back(t.to(at::kFloat));
    NodeState s32;
    const at::Tensor first32 = run_forward(g, n, forward, in32, s32, true).output;
    EXPECT_TRUE(at::equal(run_forward(g, n, forward, in32, s32, true).output, first32));
  }

  BackwardArgs a;
  a.grad_output = at::randn({4, 6, 7, 5}, d);
  a.needs_grad = {true, true, true, false, false};
  std::vector<at::Tensor> from_input, from_output;
  for (const auto& impl : backward_impls(g, n)) {
    a.inputs = in;
    a.output = first;
    if (impl.name == "output") a.inputs[0] = at::Tensor();
    (impl.name == "output" ? from_output : from_input) = run_backward(g, n, impl, a, state);
  }
  ASSERT_EQ(from_output.size(), 5u);
  ASSERT_EQ(from_input.size(), 5u);
  EXPECT_TRUE(at::equal(from_output[2], from_input[2]));
  for (int i : {0, 1})
    EXPECT_LE((from_output[i] - from_input[i]).abs().max().item<double>(),
              1e-13 * from_input[i].abs().max().item<double>())
        << i;
}

// A shape stand-in is a contiguous tensor of zeros that allocates nothing, and a
// convolution's input gradient computed on it ("aten_shape") equals ATen's on the real
// input ("aten", what autograd runs) and needs no more memory than it.
TEST(OpKernels, ShapeStandInHoldsNoMemory) {
  MemoryTracker::install();
  const std::vector<int64_t> shape = {8, 32, 40, 40};
  {
    ScopedPeak scope;
    const at::Tensor s = zero_shape_stand_in(shape, at::kDouble);
    EXPECT_EQ(scope.peak_above_start(), 0);
    EXPECT_TRUE(s.is_contiguous());
    EXPECT_EQ(s.sizes(), at::IntArrayRef(shape));
    EXPECT_EQ(s.scalar_type(), at::kDouble);
    EXPECT_EQ(s.abs().max().item<double>(), 0.0);
  }
  GraphBuilder b("conv");
  const int x = b.input("input", shape);
  const int y = b.conv(x, "conv", {16, {3}, 1, 1, 1, false, default_init()});
  Graph& g = b.graph();
  const Node& n = g.node(g.value(y).producer);
  at::manual_seed(0);
  BackwardArgs args;
  args.inputs = {at::randn(shape), at::randn({16, 32, 3, 3})};
  args.grad_output = at::randn({8, 16, 40, 40});
  args.needs_grad = {true, true};
  NodeState state;
  at::Tensor expected, got;
  int64_t real_peak = -1, stand_in_peak = -1;
  for (const auto& impl : backward_impls(g, n)) {
    if (impl.part != BackwardPart::kInput || (impl.name != "aten" && impl.name != "aten_shape"))
      continue;
    BackwardArgs a = args;
    if (impl.name == "aten_shape") a.inputs[0] = at::Tensor();
    ScopedPeak scope;
    (impl.name == "aten" ? expected : got) = run_backward(g, n, impl, a, state)[0];
    (impl.name == "aten" ? real_peak : stand_in_peak) = scope.peak_above_start();
  }
  ASSERT_TRUE(expected.defined() && got.defined());
  EXPECT_LE((got - expected).abs().max().item<double>(),
            1e-5 * expected.abs().max().item<double>());
  EXPECT_EQ(stand_in_peak, real_peak);
}

// The intermediate-activated encodings are as small as promised and carry what the
// backward needs.
TEST(OpKernels, IntermediatesHaveTheirDeclaredSize) {
  GraphBuilder b("small");
  int x = b.input("input", {2, 3, 8, 8});
  const int r = b.relu(x, "relu", false);
  const int p = b.max_pool(r, "pool", 3, 2, 1);
  Graph& g = b.graph();
  const Node& relu = g.node(g.value(r).producer);
  const Node& pool = g.node(g.value(p).producer);
  NodeState state;
  const at::Tensor input = at::randn({2, 3, 8, 8});
  for (const auto& impl : forward_impls(g, relu)) {
    if (!impl.emits_intermediate) continue;
    const auto out = run_forward(g, relu, impl, {input.clone()}, state, true);
    EXPECT_EQ(out.intermediate.nbytes(), intermediate_bytes(g, relu, impl.name)) << impl.name;
    EXPECT_EQ(out.intermediate.nbytes(), 2 * 3 * 8 * 8 / 8);
  }
  for (const auto& impl : forward_impls(g, pool)) {
    if (!impl.emits_intermediate) continue;
    const auto out = run_forward(g, pool, impl, {input}, state, true);
    EXPECT_EQ(out.intermediate.nbytes(), intermediate_bytes(g, pool, impl.name)) << impl.name;
  }
  const auto argmax8 = run_forward(
      g, pool, find_forward_impl(forward_impls(g, pool), pool, "argmax8"), {input}, state, true);
  EXPECT_EQ(argmax8.intermediate.scalar_type(), at::kByte);
  EXPECT_LT(argmax8.intermediate.max().item<int>(), 9);  // offsets inside a 3x3 window
}

}  // namespace
}  // namespace monet
