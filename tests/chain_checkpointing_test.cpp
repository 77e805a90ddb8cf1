// Chain checkpointing on tiny zoo models: its schedules run with gradients equal to
// autograd's and measured peaks equal to the simulator's, reach below the leanest
// checkpointing plan where the chain has several segments, honour the budget they are
// asked for, stay above the memory floor, and the MONeT planner returns a plan at a budget
// that only chain checkpointing reaches among the heuristics.
#include "planner/chain/chain_checkpointing.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "plan/unread_recomputations.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/memory_floor.h"
#include "planner/monet_planner.h"
#include "planner/named_planner.h"
#include "planner/program/monet_program.h"
#include "quick_profile.h"
#include "tiny_models.h"

namespace monet {
namespace {

// A tiny zoo model (install the memory tracker first), its state, a batch and its quick
// profile.
using TinySetUp = testing::ProfiledTinyModel;

class ChainOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(ChainOnTinyModel, RunsAsSimulatedWithinItsBudgetAndAboveTheFloor) {
  const TinySetUp t(GetParam());
  const auto& [g, state, batch, costs] = t;
  const SimulationResult store_all = simulate(g, store_all_plan(g), costs);
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = store_all.peak_bytes;
  const ChainCheckpointingPlans all = chain_checkpointing_plans(g, costs, o);
  ASSERT_GT(all.segments, 0);
  ASSERT_FALSE(all.within_budget.empty());
  ASSERT_FALSE(all.smallest.plan.program.empty());
  for (size_t i = 1; i < all.within_budget.size(); ++i)
    EXPECT_LE(all.within_budget[i - 1].simulated.seconds, all.within_budget[i].simulated.seconds);
  const int64_t floor = memory_floor_bytes(g, costs);
  EXPECT_GT(floor, iteration_start_bytes(g));
  EXPECT_LE(floor, all.smallest.simulated.peak_bytes);
  EXPECT_LE(floor, store_all.peak_bytes);
  // The smallest and the fastest schedules run as simulated, with autograd's gradients.
  testing::expect_runs_as_simulated(g, state, batch, all.smallest.plan, all.smallest.simulated);
  testing::expect_runs_as_simulated(g, state, batch, all.within_budget.front().plan,
                                    all.within_budget.front().simulated);
  // At the smallest peak, only schedules that fit.
  o.budget_bytes = all.smallest.simulated.peak_bytes;
  const ChainCheckpointingPlans tight = chain_checkpointing_plans(g, costs, o);
  ASSERT_FALSE(tight.within_budget.empty());
  for (const SimulatedPlan& p : tight.within_budget)
    EXPECT_LE(p.simulated.peak_bytes, o.budget_bytes);
  // The named planner returns the fastest that fits.
  PlannerRequest request;
  request.planner = "chain";
  request.budget_bytes = o.budget_bytes;
  const PlannerOutcome named = make_plan(g, &costs, request);
  EXPECT_LE(simulate(g, named.plan, costs).peak_bytes, o.budget_bytes);
}

// Schedules over sub-cuts alone (a residual block back-propagated a part at a time,
// beside its input) run as simulated, with autograd's gradients; both layouts together
// reach no higher a smallest peak than articulation values alone.
TEST_P(ChainOnTinyModel, SubCutSchedulesRunAsSimulated) {
  const TinySetUp t(GetParam());
  const auto& [g, state, batch, costs] = t;
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = simulate(g, store_all_plan(g), costs).peak_bytes;
  o.layouts = {ChainCuts::kSubCuts};
  const ChainCheckpointingPlans sub_cuts = chain_checkpointing_plans(g, costs, o);
  ASSERT_FALSE(sub_cuts.within_budget.empty());
  testing::expect_runs_as_simulated(g, state, batch, sub_cuts.smallest.plan,
                                    sub_cuts.smallest.simulated);
  testing::expect_runs_as_simulated(g, state, batch, sub_cuts.within_budget.front().plan,
                                    sub_cuts.within_budget.front().simulated);
  o.layouts = {ChainCuts::kArticulations};
  const ChainCheckpointingPlans articulations = chain_checkpointing_plans(g, costs, o);
  o.layouts = {ChainCuts::kArticulations, ChainCuts::kSubCuts};
  const ChainCheckpointingPlans both = chain_checkpointing_plans(g, costs, o);
  EXPECT_LE(both.smallest.simulated.peak_bytes, articulations.smallest.simulated.peak_bytes);
  EXPECT_LE(both.smallest.simulated.peak_bytes, sub_cuts.smallest.simulated.peak_bytes);
}

// The MONeT program expresses the chain's smallest schedule exactly once it offers every
// intermediate emitted again (as it does the ReLUs' in-place recomputations, Appendix E):
// the same profiled seconds, within the schedule's simulated peak, and decoded into a
// plan with the same in-place recomputations that runs as simulated.
TEST_P(ChainOnTinyModel, TheProgramExpressesItsInPlaceRecomputations) {
  const TinySetUp t(GetParam());
  const Graph& g = t.g;
  const CostModel& costs = t.costs;
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = simulate(g, store_all_plan(g), costs).peak_bytes;
  const SimulatedPlan smallest = chain_checkpointing_plans(g, costs, o).smallest;
  const auto inplace_recomputations = [&](const Plan& plan) {
    int count = 0;
    bool backward_seen = false;
    for (const Instruction& in : plan.program) {
      backward_seen = backward_seen || in.kind == InstrKind::kBackward;
      const Node& n = g.node(in.node);
      count += backward_seen && in.kind == InstrKind::kForward &&
               find_forward_impl(forward_impls(g, n), n, in.impl).inplace;
    }
    return count;
  };
  const int inplace = inplace_recomputations(smallest.plan);
  if (GetParam().name == "resnet18") {
    EXPECT_GT(inplace, 0);
  }
  MonetProgramOptions po;
  po.budget_bytes = smallest.simulated.peak_bytes;
  po.exact_intermediate_min_fraction = 0;
  po.recomputations = Recomputations::kInPlaceWherePossible;
  const MonetProgram program(g, costs, po);
  const std::vector<double> x = program.assignment_of(smallest.plan);
  ASSERT_FALSE(x.empty());
  EXPECT_TRUE(program.milp().satisfies(x));
  EXPECT_NEAR(program.seconds_of(x), smallest.simulated.seconds, 1e-9 * smallest.simulated.seconds);
  const Plan decoded = program.decode(x);
  EXPECT_EQ(inplace_recomputations(decoded), inplace);
  const SimulationResult simulated = simulate(g, decoded, costs);
  EXPECT_EQ(simulated.peak_bytes, smallest.simulated.peak_bytes);
  testing::expect_runs_as_simulated(g, t.state, t.batch, decoded, simulated);
}

// The program's memory rows bound the simulated peak of the plan it decodes from every
// chain schedule it expresses, in-place recomputations that emit a mask included: their
// workspace is the in-place twin's, not the out-of-place implementation's. To put the peak
// at such a recomputation, the schedules are counted with costs that give every in-place
// ReLU that emits its mask a workspace as large as store-all's peak (the profiled one, the
// unpacked mask, is small here).
TEST_P(ChainOnTinyModel, TheProgramsRowsBoundEveryScheduleItExpresses) {
  const TinySetUp t(GetParam());
  const Graph& g = t.g;
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = simulate(g, store_all_plan(g), t.costs).peak_bytes;
  const ChainCheckpointingPlans chain = chain_checkpointing_plans(g, t.costs, o);
  CostModel costs = t.costs;
  for (const Node& n : g.nodes())
    if (auto it = costs.nodes[n.id].forward.find("inplace_mask");
        it != costs.nodes[n.id].forward.end())
      it->second.workspace_bytes = o.budget_bytes;
  MonetProgramOptions po;
  po.budget_rows = BudgetRows::kMinimised;
  po.exact_intermediate_min_fraction = 0;
  po.recomputations = Recomputations::kInPlaceWherePossible;
  const MonetProgram program(g, costs, po);
  int expressed = 0;
  for (const SimulatedPlan& schedule : chain.within_budget) {
    const std::vector<double> x = program.assignment_of(schedule.plan);
    if (x.empty()) continue;
    ++expressed;
    // The program's plan (forward nodes in its topological order, not the chain's).
    EXPECT_GE(program.budget_of(x), simulate(g, program.decode(x), costs).peak_bytes)
        << "schedule " << expressed << " of " << chain.within_budget.size();
  }
  EXPECT_GT(expressed, 0);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ChainOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named(
                             {"resnet18", "vgg11", "unet", "googlenet", "mobilenet_v2"})),
                         [](const auto& info) { return info.param.name; });

// The dynamic program's memory model follows the simulator (gradients held as views
// share storage, in-place outputs carry their input's storage, a swept segment holds its
// input until it has read it, a side value's gradient counted once it exists), so its
// leanest schedules reach the floor: on the tiny MobileNetV2, within 5% of the floor's
// bytes above the iteration's start (with the coarser model the smallest was 14% above).
TEST(ChainCheckpointing, SmallestScheduleIsNearTheFloor) {
  MemoryTracker::install();
  const TinySetUp t("mobilenet_v2");
  const Graph& g = t.g;
  const CostModel& costs = t.costs;
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = iteration_start_bytes(g);  // nothing fits: the smallest schedule is sought
  const ChainCheckpointingPlans chain = chain_checkpointing_plans(g, costs, o);
  const double start = static_cast<double>(iteration_start_bytes(g));
  const double floor = static_cast<double>(memory_floor_bytes(g, costs)) - start;
  const double smallest = static_cast<double>(chain.smallest.simulated.peak_bytes) - start;
  EXPECT_GE(smallest, floor);
  EXPECT_LE(smallest, 1.05 * floor)
      << "smallest " << smallest << " B above the start, floor " << floor << " B";
  testing::expect_runs_as_simulated(g, t.state, t.batch, chain.smallest.plan,
                                    chain.smallest.simulated);
}

// The tiny UNet's segments end with a transposed convolution and a concatenation whose
// backward passes read no activation: a segment recomputed whole recomputes them for
// nothing. With them kept, some schedules hold such recomputations, and dropping them
// makes those faster and no higher; by default no schedule holds one, the smallest is no
// higher, and a schedule that lost some runs as simulated.
TEST(ChainCheckpointing, DropsRecomputationsNothingReads) {
  MemoryTracker::install();
  const TinySetUp t("unet");
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = std::numeric_limits<int64_t>::max();  // every schedule fits
  const ChainCheckpointingPlans dropped = chain_checkpointing_plans(t.g, t.costs, o);
  o.unread_recomputations = UnreadRecomputations::kKeep;
  const ChainCheckpointingPlans kept = chain_checkpointing_plans(t.g, t.costs, o);
  EXPECT_LE(dropped.smallest.simulated.peak_bytes, kept.smallest.simulated.peak_bytes);
  for (const SimulatedPlan& p : dropped.within_budget)
    EXPECT_EQ(without_unread_recomputations(t.g, p.plan).program.size(), p.plan.program.size());
  int pruned = 0;
  for (const SimulatedPlan& p : kept.within_budget) {
    const Plan without = without_unread_recomputations(t.g, p.plan);
    if (without.program.size() == p.plan.program.size()) continue;
    const SimulationResult after = simulate(t.g, without, t.costs);
    EXPECT_LE(after.peak_bytes, p.simulated.peak_bytes);
    EXPECT_LT(after.seconds, p.simulated.seconds);
    if (pruned++ == 0) testing::expect_runs_as_simulated(t.g, t.state, t.batch, without, after);
  }
  EXPECT_GT(pruned, 0);
}

// Multi-level recomputation goes below checkpointing at articulation points, and the
// MONeT planner plans there (the chain plan itself, or the program's from it).
TEST(ChainCheckpointing, ReachesBelowCheckpointingAndThePlannerPlansThere) {
  MemoryTracker::install();
  const TinySetUp t("mobilenet_v2");
  const Graph& g = t.g;
  const CostModel& costs = t.costs;
  int64_t checkpointing = -1;
  for (const Plan& p : checkpoint_family(g, lean_choices(g, costs), "lean")) {
    const int64_t peak = simulate(g, p, costs).peak_bytes;
    if (checkpointing < 0 || peak < checkpointing) checkpointing = peak;
  }
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = checkpointing - 1;
  const ChainCheckpointingPlans chain = chain_checkpointing_plans(g, costs, o);
  ASSERT_FALSE(chain.within_budget.empty())
      << "smallest chain peak " << chain.smallest.simulated.peak_bytes << " B, checkpointing "
      << checkpointing << " B";
  MonetOptions mo;
  mo.budget_bytes = o.budget_bytes;
  mo.solver.time_limit_seconds = 20;
  mo.solver.search_limit = SearchLimit::kWork;
  const MonetResult r = plan_monet(g, costs, mo);
  ASSERT_TRUE(r.found);
  EXPECT_LE(r.predicted.peak_bytes, mo.budget_bytes);
  EXPECT_GT(r.floor_bytes, 0);
  EXPECT_LE(r.floor_bytes, r.predicted.peak_bytes);
  testing::expect_runs_as_simulated(g, t.state, t.batch, r.plan, r.predicted);
  // Below the floor no plan can fit: the planner says so without searching.
  mo.budget_bytes = r.floor_bytes - 1;
  const MonetResult none = plan_monet(g, costs, mo);
  EXPECT_FALSE(none.found);
  EXPECT_EQ(none.floor_bytes, r.floor_bytes);
  EXPECT_EQ(none.solves, 0);
  EXPECT_EQ(none.solve.status, MilpStatus::kInfeasible);
}

// At the chain's smallest peak on the tiny ResNet-18 the planner returns a plan within the
// budget, no slower than the chain's, that runs as simulated, whichever way it goes when
// no heuristic plan fits the program (on the tiny models one always does: the program
// that models every intermediate exactly takes over on ResNet-50 b32 below 0.3x).
TEST(ChainCheckpointing, ThePlannerPlansAtTheSmallestChainPeakEitherWay) {
  MemoryTracker::install();
  const TinySetUp t("resnet18");
  const auto& [g, state, batch, costs] = t;
  ChainCheckpointingOptions o;
  o.search_limit = SearchLimit::kWork;
  o.budget_bytes = iteration_start_bytes(g);  // nothing fits: the smallest schedule is sought
  const SimulatedPlan smallest = chain_checkpointing_plans(g, costs, o).smallest;
  MonetOptions mo;
  mo.budget_bytes = smallest.simulated.peak_bytes;
  mo.solver.time_limit_seconds = 10;
  mo.solver.search_limit = SearchLimit::kWork;
  for (NoFittingHeuristic way :
       {NoFittingHeuristic::kExactProgramThenElastic, NoFittingHeuristic::kElastic}) {
    mo.no_fitting_heuristic = way;
    const MonetResult r = plan_monet(g, costs, mo);
    ASSERT_TRUE(r.found);
    EXPECT_FALSE(r.warm_start.empty());
    EXPECT_LE(r.predicted.peak_bytes, mo.budget_bytes);
    EXPECT_LE(r.predicted.seconds, smallest.simulated.seconds * (1 + 1e-9));
    testing::expect_runs_as_simulated(g, state, batch, r.plan, r.predicted);
  }
}

}  // namespace
}  // namespace monet
