// Gist's encodings and planners: the sparse encoding (CSR with 8-bit column indices)
// round-trips exactly and is as small as its non-zeros make it; a convolution's weight
// gradient from its sparse or float16 copy equals the one from its input (exactly, or to
// float16 rounding); Gist plans on tiny zoo models give autograd's gradients, keep ReLU
// outputs read by one convolution sparse, and use no more memory than the simulator's
// upper bound; the float16 variant is lossy by float16 rounding only.
#include <gtest/gtest.h>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/graph_builder.h"
#include "graph/zoo/model_zoo.h"
#include "ops/op_kernels.h"
#include "ops/sparse_storage.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/baselines/gist_planner.h"
#include "quick_profile.h"
#include "runtime/executor.h"
#include "tiny_models.h"

namespace monet {
namespace {

TEST(SparseStorage, RoundTripsExactlyAndIsAsSmallAsItsNonZeros) {
  at::manual_seed(3);
  for (auto dtype : {at::kFloat, at::kDouble}) {
    // 378 elements: two rows of 256, the second padded; about half of them zero.
    const at::Tensor x = at::relu(at::randn({2, 3, 7, 9}, at::TensorOptions().dtype(dtype)));
    const int64_t nnz = x.ne(0).sum().item<int64_t>();
    ASSERT_GT(nnz, 100);
    ASSERT_LT(nnz, 300);
    const at::Tensor e = encode_sparse(x);
    EXPECT_EQ(e.numel(), sparse_storage_bytes(x.numel(), nnz, x.element_size()));
    EXPECT_EQ(e.numel(), 16 + nnz * (x.element_size() + 1));  // 3 offsets, padded to 16
    EXPECT_TRUE(at::equal(decode_sparse(e, x.sizes(), dtype), x));
  }
  const at::Tensor zeros = at::zeros({300});
  EXPECT_EQ(encode_sparse(zeros).numel(), sparse_storage_bytes(300, 0, 4));
  EXPECT_TRUE(at::equal(decode_sparse(encode_sparse(zeros), {300}, at::kFloat), zeros));
  const at::Tensor dense = at::rand({512}) + 1;
  EXPECT_TRUE(at::equal(decode_sparse(encode_sparse(dense), {512}, at::kFloat), dense));
  EXPECT_THROW(decode_sparse(at::zeros({5}, at::kByte), {512}, at::kFloat), std::invalid_argument);
}

TEST(GistEncodings, ConvolutionWeightGradientFromItsEncodedInput) {
  GraphBuilder b("conv");
  const int x = b.input("input", {2, 4, 9, 9});
  const int y = b.conv(x, "conv", {5, {3}, 1, 1, 1, true, default_init()});
  Graph& g = b.graph();
  const Node& n = g.node(g.value(y).producer);
  at::manual_seed(0);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const std::vector<at::Tensor> in = {at::relu(at::randn({2, 4, 9, 9}, f64)),
                                      at::randn({5, 4, 3, 3}, f64), at::randn({5}, f64)};
  const auto forwards = forward_impls(g, n);
  const auto backwards = backward_impls(g, n);
  NodeState state;
  const ForwardOutput plain = run_forward(g, n, forwards.front(), in, state, true);
  BackwardArgs args;
  args.grad_output = at::randn(plain.output.sizes(), f64);
  args.inputs = in;
  args.needs_grad = {false, true, true};
  const auto expected = run_backward(
      g, n, find_backward_impl(backwards, n, BackwardPart::kWeight, "default"), args, state);
  for (const char* impl : {"sparse_input", "half_input"}) {
    const ForwardImplInfo f = find_forward_impl(forwards, n, impl);
    EXPECT_TRUE(f.gist_encoding && f.emits_intermediate);
    const ForwardOutput out = run_forward(g, n, f, in, state, true);
    EXPECT_TRUE(at::equal(out.output, plain.output)) << impl;
    BackwardArgs encoded = args;
    encoded.inputs[0] = at::Tensor();  // the backward must not need the input
    encoded.intermediate = out.intermediate;
    const BackwardImplInfo bw = find_backward_impl(backwards, n, BackwardPart::kWeight, impl);
    EXPECT_TRUE(bw.reads_inputs.empty() && bw.reads_intermediate && compatible(f, bw));
    const auto got = run_backward(g, n, bw, encoded, state);
    const double tolerance = f.lossy ? 1e-3 : 1e-12;  // float16 rounding of the input
    for (int k : {1, 2})
      EXPECT_LE((got[k] - expected[k]).abs().max().item<double>(),
                tolerance * expected[k].abs().max().item<double>())
          << impl << " gradient " << k;
  }
}

class GistOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

int count_impl(const Plan& plan, const std::string& impl) {
  int k = 0;
  for (const auto& in : plan.program) k += in.kind == InstrKind::kForward && in.impl == impl;
  return k;
}

int64_t measured_peak(const Graph& g, const ModelState& state, const Batch& batch,
                      const Plan& plan) {
  ModelState s = state.clone();
  Executor executor(g, s, plan);
  const ExecutionResult run = executor.run(batch);
  return run.peak_bytes - run.start_bytes;
}

TEST_P(GistOnTinyModel, PlansMatchAutogradWithinTheirPredictedMemory) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const int64_t store_all = measured_peak(g, state, batch, store_all_plan(g));
  GistOptions fp16;
  fp16.delayed_precision_reduction = true;
  for (const Plan& plan : {gist_plan(g), gist_plan(g, fp16)}) {
    const bool lossy = plan.planner == "gist-fp16";
    const int64_t predicted = simulate(g, plan, costs).peak_above_start();
    const int64_t measured = measured_peak(g, state, batch, plan);
    EXPECT_LE(measured, predicted) << plan.planner;  // sparse sizes are upper bounds
    EXPECT_LE(measured, store_all) << plan.planner;
    if (!lossy) {
      EXPECT_EQ(count_impl(plan, "half_input"), 0);
    }
    // Float16 copies of convolution inputs move gradients by float16 rounding (labelled
    // lossy: `monet run verify` would refuse them at its default tolerance).
    const double error = testing::max_gradient_error(g, plan, at::kDouble, lossy ? 1e-2 : 1e-9);
    EXPECT_LT(error, lossy ? 2e-2 : 1e-9) << plan.planner;
    std::cout << GetParam().name << " " << plan.planner << ": " << count_impl(plan, "sparse_input")
              << " sparse, " << count_impl(plan, "half_input") << " float16 convolution inputs; "
              << "peak " << measured << " B measured, " << predicted << " B bound, store-all "
              << store_all << " B; gradient error " << error << "\n";
  }
  if (GetParam().name == "resnet18") {
    EXPECT_GT(count_impl(gist_plan(g), "sparse_input"), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, GistOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named(
                             {"resnet18", "vgg11", "googlenet", "mobilenet_v2", "unet"})),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monet
