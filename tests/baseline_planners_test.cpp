// The Checkmate and Gist baselines on tiny zoo models: their plans' gradients equal
// autograd's; Checkmate's plan fits the budget in its own memory model (no workspace) and
// the executor measures what the simulator predicts with workspace counted; Checkmate-O
// only switches convolution algorithms and never makes the peak exceed the budget (or
// Checkmate-D's peak when that already does); Gist never recomputes (its encodings and
// memory: gist_test.cpp).
#include <gtest/gtest.h>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/baselines/gist_planner.h"
#include "planner/checkmate_planner.h"
#include "planner/minimum_budget.h"
#include "planner/named_planner.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

class BaselinePlannersOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

int recomputations(const Plan& plan) {
  int count = 0;
  bool backward = false;
  for (const auto& in : plan.program) {
    backward = backward || in.kind == InstrKind::kBackward;
    count += backward && in.kind == InstrKind::kForward;
  }
  return count;
}

// The executor's peak above its start equals the simulator's, for `plan` on `g`.
void expect_measured_as_predicted(const Graph& g, const ModelState& state, const Batch& batch,
                                  const Plan& plan, const SimulationResult& predicted) {
  ModelState s = state.clone();
  Executor executor(g, s, plan);
  const ExecutionResult run = executor.run(batch);
  EXPECT_EQ(run.peak_bytes - run.start_bytes, predicted.peak_above_start()) << plan.planner;
}

TEST_P(BaselinePlannersOnTinyModel, CheckmateAndGistPlansMatchAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs =
      testing::with_faster_convolution_algorithms(g, testing::quick_profile(g, state, batch));
  const SimulationResult store_all = simulate(g, store_all_plan(g), costs);

  // Gist (its encodings: gist_test) never recomputes.
  const Plan gist = gist_plan(g);
  const SimulationResult gist_sim = simulate(g, gist, costs);
  EXPECT_EQ(recomputations(gist), 0);

  // A budget between Checkmate's smallest (in its model) and store-all's peak.
  SearchOptions solver;
  solver.time_limit_seconds = 4;
  solver.search_limit = SearchLimit::kWork;
  solver.relative_gap = 0.02;
  const CostModel blind = without_workspace(costs);
  const MinimumBudget smallest = minimum_budget(g, blind, MonetMode::kNoOp, solver);
  ASSERT_GT(smallest.bytes, 0);
  const int64_t budget = (smallest.bytes + simulate(g, store_all_plan(g), blind).peak_bytes) / 2;
  CheckmateOptions o;
  o.budget_bytes = budget;
  o.solver = solver;
  const CheckmateResult d = plan_checkmate(g, costs, o);
  ASSERT_TRUE(d.found) << "no Checkmate plan for " << budget << " B";
  EXPECT_LE(d.checkmate_peak_bytes, budget);
  EXPECT_EQ(d.checkmate_peak_bytes, simulate(g, d.plan, blind).peak_bytes);
  EXPECT_EQ(d.plan.planner, "checkmate");
  // Default implementations in the forward pass (a recomputation that only needs the
  // output may run max pooling without its indices).
  for (const auto& in : d.plan.program) {
    if (in.kind == InstrKind::kBackward) break;
    const std::string def = forward_impls(g, g.node(in.node)).front().name;
    EXPECT_TRUE(in.impl == def || in.impl == out_of_place(def)) << describe(g, in);
  }
  expect_measured_as_predicted(g, state, batch, d.plan, d.predicted);
  EXPECT_LT(testing::max_gradient_error(g, d.plan), 1e-9);

  // Checkmate-O's step on this very plan (a second time-limited solve may return another
  // schedule): only convolution algorithms change, never past the budget (or Checkmate-D's
  // own peak when that already exceeds it), never slower.
  Plan opt_plan = d.plan;
  const int switches = choose_fastest_convolutions(g, costs, budget, &opt_plan);
  const SimulationResult opt = simulate(g, opt_plan, costs);
  EXPECT_LE(opt.peak_bytes, std::max(budget, d.predicted.peak_bytes));
  EXPECT_LE(opt.seconds, d.predicted.seconds + 1e-12);
  ASSERT_EQ(opt_plan.program.size(), d.plan.program.size());
  int changed = 0;
  for (size_t i = 0; i < d.plan.program.size(); ++i) {
    if (opt_plan.program[i].impl == d.plan.program[i].impl) continue;
    ++changed;
    const OpKind op = g.node(opt_plan.program[i].node).op;
    EXPECT_TRUE(op == OpKind::kConv || op == OpKind::kConvTranspose);
  }
  EXPECT_EQ(changed, switches);
  expect_measured_as_predicted(g, state, batch, opt_plan, opt);
  EXPECT_LT(testing::max_gradient_error(g, opt_plan), 1e-9);
  // The planner itself (solve + that step) names and predicts its plan.
  o.post_optimise = true;
  const CheckmateResult planned = plan_checkmate(g, costs, o);
  ASSERT_TRUE(planned.found);
  EXPECT_EQ(planned.plan.planner, "checkmate-o");
  EXPECT_EQ(planned.predicted.peak_bytes, simulate(g, planned.plan, costs).peak_bytes);
  std::cout << GetParam().name << ": store-all " << store_all.peak_bytes << " B, gist "
            << gist_sim.peak_bytes << " B; checkmate budget " << budget << " B: its model "
            << d.checkmate_peak_bytes << " B, with workspace " << d.predicted.peak_bytes
            << " B; checkmate-o " << opt.peak_bytes << " B, " << switches << " algorithm switches, "
            << opt.seconds << " s vs " << d.predicted.seconds << " s\n";
}

INSTANTIATE_TEST_SUITE_P(Zoo, BaselinePlannersOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named({"resnet18", "vgg11",
                                                                         "unet", "unet3d"})),
                         [](const auto& info) { return info.param.name; });

TEST(NamedPlanner, RejectsUnknownNamesAndMissingBudgets) {
  EXPECT_THROW(check_planner_name("gurobi"), std::invalid_argument);
  for (const auto& name : planner_names()) EXPECT_NO_THROW(check_planner_name(name));
  EXPECT_TRUE(planner_requires_budget("checkmate-o"));
  EXPECT_FALSE(planner_requires_budget("gist"));
  EXPECT_TRUE(planner_uses_budget("chain") && !planner_requires_budget("chain"));
  EXPECT_THROW(planner_uses_budget("gurobi"), std::invalid_argument);
  // The registry: a planner that needs a budget says how its smallest one is found, and
  // every planner that takes one needs costs.
  for (const PlannerEntry& e : planner_registry()) {
    EXPECT_EQ(e.smallest_budget != nullptr, e.budget == BudgetUse::kRequired) << e.name;
    EXPECT_EQ(e.needs_costs, e.budget != BudgetUse::kNone) << e.name;
    EXPECT_EQ(&find_planner(e.name), &e);
  }
  const testing::TinyModel m = testing::tiny_models_named({"vgg11"}).front();
  const Graph g = build_zoo_model(m.name, m.config);
  PlannerRequest r;
  r.planner = "checkmate";
  EXPECT_THROW(make_plan(g, nullptr, r), std::invalid_argument);  // no costs
  r.planner = "gist";
  const PlannerOutcome gist = make_plan(g, nullptr, r);
  EXPECT_TRUE(gist.found);
  EXPECT_EQ(gist.plan.planner, "gist");
  EXPECT_FALSE(gist.solved);
}

// The paper's ablation runs modes that do not choose convolution algorithms with the
// fastest algorithm that still fits: only convolutions change, the plan stays within the
// budget, and its gradients still equal autograd's.
TEST(NamedPlanner, PostOptimisesConvolutionsOfMonetNoOpWithinBudget) {
  MemoryTracker::install();
  const testing::TinyModel m = testing::tiny_models_named({"resnet18"}).front();
  const Graph g = build_zoo_model(m.name, m.config);
  const ModelState state = ModelState::initialize(g, 0);
  const CostModel costs = testing::with_faster_convolution_algorithms(
      g, testing::quick_profile(g, state, make_batch(g, 1)));
  PlannerRequest r;
  r.planner = "monet-noop";
  r.solver.time_limit_seconds = 4;
  r.solver.search_limit = SearchLimit::kWork;
  r.solver.relative_gap = 0.02;
  r.budget_bytes = simulate(g, store_all_plan(g), costs).peak_bytes * 9 / 10;
  r.post_optimise_convolutions = true;
  const PlannerOutcome out = make_plan(g, &costs, r);
  ASSERT_TRUE(out.found);
  EXPECT_EQ(out.plan.planner, "monet-noop-o");
  const SimulationResult sim = simulate(g, out.plan, costs);
  EXPECT_LE(sim.peak_bytes, r.budget_bytes);
  EXPECT_EQ(sim.peak_bytes, out.solve.predicted.peak_bytes);
  // monet-noop runs default implementations only, so every non-default one is a switch.
  int non_default = 0;
  for (const auto& in : out.plan.program) {
    if (in.kind == InstrKind::kFree) continue;
    const Node& n = g.node(in.node);
    std::string def;
    if (in.kind == InstrKind::kForward) {
      def = out_of_place(forward_impls(g, n).front().name);
    } else {
      for (const auto& b : backward_impls(g, n))
        if (b.part == in.part && def.empty()) def = b.name;
    }
    if (in.impl == def || in.impl == forward_impls(g, n).front().name) continue;
    ++non_default;
    EXPECT_TRUE(n.op == OpKind::kConv || n.op == OpKind::kConvTranspose) << describe(g, in);
  }
  EXPECT_EQ(non_default, out.algorithm_switches);
  EXPECT_GT(out.algorithm_switches, 0);  // the costs make other algorithms faster
  EXPECT_LT(testing::max_gradient_error(g, out.plan), 1e-9);
}

// Binarize applies where a ReLU feeds only max pooling (VGG): 1-bit mask and 8-bit argmax.
TEST(GistPlanner, BinarizesReluFeedingMaxPool) {
  const testing::TinyModel m = testing::tiny_models_named({"vgg11"}).front();
  const Graph g = build_zoo_model(m.name, m.config);
  const ScheduleChoices c = gist_choices(g);
  int binarized = 0;
  for (const auto& n : g.nodes()) {
    if (n.op != OpKind::kMaxPool) continue;
    const Node& relu = g.node(g.value(n.inputs[0]).producer);
    ASSERT_EQ(relu.op, OpKind::kReLU);
    EXPECT_EQ(c.forward[n.id], "argmax8");
    EXPECT_EQ(c.backward[relu.id], std::vector<std::string>{"mask"});
    ++binarized;
  }
  EXPECT_GT(binarized, 0);
}

}  // namespace
}  // namespace monet
