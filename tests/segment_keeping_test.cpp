// Segment keeping and the elastic MONeT program on tiny zoo models: segment-keeping plans
// fit their budget as simulated and as measured, match autograd, and are no slower than
// the lean planner's at the same budget; below every plan's peak, its upgraded starting
// points (one per family) include one no larger than the smallest lean plan; the
// elastic program accepts every plan, charges the excess of one above the budget, and its
// optimum has no excess where a plan fits; nearest assignments express GoogLeNet's
// checkpointing plans, and the MONeT planner is no slower than segment keeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "cost/simulator.h"
#include "gradient_check.h"
#include "graph/zoo/model_zoo.h"
#include "halfway_budget.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"
#include "planner/heuristics/segment_keeping.h"
#include "planner/monet_planner.h"
#include "planner/program/monet_program.h"
#include "quick_profile.h"
#include "solved_to_optimum.h"
#include "tiny_models.h"

namespace monet {
namespace {

class SegmentKeepingOnTinyModel : public ::testing::TestWithParam<testing::TinyModel> {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_P(SegmentKeepingOnTinyModel, FitsTheBudgetBeatsLeanAndMatchesAutograd) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const int64_t budget = testing::halfway_budget(g, costs);
  const SimulationResult lean = simulate(g, best_lean_plan(g, costs, budget), costs);
  ASSERT_LE(lean.peak_bytes, budget);

  const std::vector<SimulatedPlan> plans =
      segment_keeping_plans(g, costs, {budget, 60, SearchLimit::kWork}).within_budget;
  ASSERT_FALSE(plans.empty());
  double fastest = 1e300;
  for (const auto& [plan, simulated] : plans) {
    const SimulationResult sim = simulate(g, plan, costs);
    EXPECT_LE(sim.peak_bytes, budget);
    fastest = std::min(fastest, sim.seconds);
    testing::expect_runs_as_simulated(g, state, batch, plan, sim);
  }
  // The lean planner's plan is a starting point of the search, which only removes
  // recomputations.
  EXPECT_LE(fastest, lean.seconds * (1 + 1e-9));
  std::cout << GetParam().name << ": budget " << budget << " B: segment keeping " << fastest
            << " s, lean " << lean.seconds << " s\n";
}

// Below every plan's peak (the budget leaves nothing for activations): starting points for
// the elastic program, whose implementations were upgraded without raising the peak.
TEST_P(SegmentKeepingOnTinyModel, OverBudgetStartsAreNoLargerThanLeanCheckpointing) {
  const Graph g = build_zoo_model(GetParam().name, GetParam().config);
  const ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  const CostModel costs = testing::quick_profile(g, state, batch);
  const SimulationResult smallest = simulate(g, best_lean_plan(g, costs, -1), costs);
  const int64_t budget = iteration_start_bytes(g);

  const SegmentKeepingPlans plans =
      segment_keeping_plans(g, costs, {budget, 60, SearchLimit::kWork});
  ASSERT_GE(plans.over_budget.size(), 3u);  // one per family, and greedy descent's
  ASSERT_TRUE(plans.within_budget.empty());
  bool no_larger = false;  // the memory-lean family's start: no larger than its checkpointing
  for (const Plan& plan : plans.over_budget) {
    const SimulationResult sim = simulate(g, plan, costs);
    EXPECT_GT(sim.peak_bytes, budget);
    no_larger = no_larger || sim.peak_bytes <= smallest.peak_bytes;
    testing::expect_runs_as_simulated(g, state, batch, plan, sim);
  }
  EXPECT_TRUE(no_larger);
}

INSTANTIATE_TEST_SUITE_P(Zoo, SegmentKeepingOnTinyModel,
                         ::testing::ValuesIn(testing::tiny_models_named(
                             {"resnet18", "vgg11", "unet", "googlenet", "mobilenet_v2"})),
                         [](const auto& info) { return info.param.name; });

// A tiny zoo model, its quick profile, the halfway budget, and the elastic program at it.
// (The program leaves out implementations another one dominates in time and memory, so
// its rows depend on the seconds: modelled ones make them the same on every machine.)
struct TinyElasticProgram {
  explicit TinyElasticProgram(const std::string& name)
      : g(graph_of(name)),
        costs(testing::quick_profile(g, ModelState::initialize(g, 0), make_batch(g, 1))),
        budget(testing::halfway_budget(g, costs)),
        program(g, costs, {MonetMode::kAll, BudgetRows::kElastic, budget}) {}
  static Graph graph_of(const std::string& name) {
    MemoryTracker::install();
    const auto tiny = testing::tiny_models_named({name});
    return build_zoo_model(tiny[0].name, tiny[0].config);
  }
  const Graph g;
  const CostModel costs;
  const int64_t budget;
  const MonetProgram program;
};

TEST(ElasticProgram, AcceptsEveryPlanAndReachesNoExcessWhereAPlanFits) {
  const TinyElasticProgram t("unet");
  const auto& [g, costs, budget, program] = t;

  // Store-all is above the budget: feasible, with excess.
  const std::vector<double> above = program.assignment_of(store_all_plan(g));
  ASSERT_FALSE(above.empty());
  EXPECT_TRUE(program.milp().satisfies(above));
  EXPECT_GT(program.excess_of(above), 0);
  // A plan within the budget that the program can express: little or no excess (the
  // program's rows are upper bounds).
  std::vector<Plan> candidates;
  for (SimulatedPlan& k :
       segment_keeping_plans(g, costs, {budget, 60, SearchLimit::kWork}).within_budget)
    candidates.push_back(std::move(k.plan));
  for (Plan& p : checkpoint_family(g, lean_choices(g, costs), "lean")) candidates.push_back(p);
  std::vector<double> within;
  for (const Plan& p : candidates)
    if (within.empty() && simulate(g, p, costs).peak_bytes <= budget)
      within = program.assignment_of(p);
  ASSERT_FALSE(within.empty());
  EXPECT_TRUE(program.milp().satisfies(within));
  EXPECT_LE(program.excess_of(within), 1.0 / 64);

  // ~30 s on one core.
  MilpOptions o = testing::solved_to_optimum();
  o.warm_start = above;
  const MilpResult r = solve_milp(program.milp(), o);
  ASSERT_FALSE(r.values.empty());
  EXPECT_LE(program.excess_of(r.values), program.excess_of(within) + 1e-6);
  if (program.excess_of(r.values) <= 1e-6) {
    EXPECT_LE(simulate(g, program.decode(r.values), costs).peak_bytes, budget);
  }
}

// GoogLeNet's inception branches recompute max-pools whose chosen forward emits an
// intermediate (argmax indices) with that implementation, for the backward to read. A
// program offering every such recomputation expresses each plan exactly (same profiled
// seconds) and accepts it; the default one leaves out those of small intermediates (the
// ReLUs' 1-bit masks), and accepts the nearest plan instead. The MONeT planner starts
// from segment keeping's plan, and returns no slower a plan.
TEST(MonetProgram, ExactAssignmentAndPlannerNoSlowerThanSegmentKeeping) {
  const TinyElasticProgram t("googlenet");
  const auto& [g, costs, budget, program] = t;
  MonetProgramOptions every_option{MonetMode::kAll, BudgetRows::kElastic, budget};
  every_option.exact_intermediate_min_fraction = 0;
  const MonetProgram every(g, costs, every_option);
  int emitting = 0, inexact = 0;
  for (const Plan& p : checkpoint_family(g, lean_choices(g, costs), "lean")) {
    const std::vector<double> exact = every.assignment_of(p);
    ASSERT_FALSE(exact.empty());
    EXPECT_TRUE(every.milp().satisfies(exact));
    const double seconds = simulate(g, p, costs).seconds;
    EXPECT_NEAR(every.seconds_of(exact), seconds, 1e-9 * seconds);
    const std::vector<double> nearest = program.assignment_of(p, /*nearest=*/true);
    ASSERT_FALSE(nearest.empty());
    EXPECT_TRUE(program.milp().satisfies(nearest));
    inexact += program.assignment_of(p).empty();
    bool backward_seen = false;  // a forward instruction after a backward: a recomputation
    for (const Instruction& in : p.program) {
      backward_seen = backward_seen || in.kind == InstrKind::kBackward;
      emitting += backward_seen && in.kind == InstrKind::kForward &&
                  g.node(in.node).op == OpKind::kMaxPool && in.impl == "default";
    }
  }
  EXPECT_GT(inexact, 0);
  EXPECT_GT(emitting, 0);

  // The segment-keeping plans (searched here to their work counts, as the planner's
  // own search for them under SearchLimit::kWork) are handed to the planner as warm plans: it
  // returns none slower.
  const auto kept = segment_keeping_plans(g, costs, {budget, 60, SearchLimit::kWork}).within_budget;
  MonetOptions o;
  o.budget_bytes = budget;
  o.solver.time_limit_seconds = 30;
  o.solver.search_limit = SearchLimit::kWork;
  for (const SimulatedPlan& k : kept) o.warm_plans.push_back(k.plan);
  const MonetResult r = plan_monet(g, costs, o);
  ASSERT_TRUE(r.found);
  EXPECT_LE(r.predicted.peak_bytes, budget);
  for (const SimulatedPlan& k : kept)
    EXPECT_LE(r.predicted.seconds, simulate(g, k.plan, costs).seconds * (1 + 1e-9));
  EXPECT_LT(testing::max_gradient_error(g, r.plan), 1e-9);
}

}  // namespace
}  // namespace monet
