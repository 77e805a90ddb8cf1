// Randomly composed models (tools/make_fuzz_models.py: random operators, shapes, shared
// parameters, views of parameters and of activations, branches, in-place operations),
// traced by PyTorch: each is imported and planned by every planner, and each plan is
// validated, simulated and run; or the import refuses the model in one line naming what
// it cannot take. The sanitizer job (scripts/sanitize.sh) runs this under ASan and UBSan.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "gradient_check.h"
#include "graph/torchscript/torchscript_import.h"
#include "halfway_budget.h"
#include "planner/named_planner.h"
#include "quick_profile.h"
#include "runtime/torchscript_weights.h"

namespace monet {
namespace {

const std::string kFuzzDir = MONET_FUZZ_FIXTURE_DIR;
// How often the program-based planners (CBC under a time limit) plan a model.
constexpr int kProgramPlannerEvery = 25;

// Whether `planner` plans model `index`: the program-based ones (CBC) only monet and
// checkmate, each on every kProgramPlannerEvery-th model; the others every model.
bool plans_model(const std::string& planner, int index) {
  if (!planner_requires_budget(planner)) return true;
  if (planner == "monet") return index % kProgramPlannerEvery == 0;
  return planner == "checkmate" && index % kProgramPlannerEvery == 1;
}

// Plans `g` with every planner and checks each plan; returns how many plans ran.
int plan_with_every_planner(const Graph& g, const ModelState& state, const Batch& batch, int index,
                            const std::string& where) {
  const CostModel costs = testing::quick_profile(g, state, batch);
  const int64_t budget = testing::halfway_budget(g, costs);
  int ran = 0;
  for (const std::string& planner : planner_names()) {
    if (planner == "gist-fp16") continue;  // lossy: its gradients are not autograd's
    if (!plans_model(planner, index)) continue;
    PlannerRequest request;
    request.planner = planner;
    if (planner_uses_budget(planner)) request.budget_bytes = budget;
    request.solver.time_limit_seconds = 5;
    request.solver.search_limit = SearchLimit::kWork;
    request.seed = static_cast<uint64_t>(index);
    try {
      const PlannerOutcome out = make_plan(g, &costs, request);
      // The budget is above the lean plans' smallest peak: the planners that offer those
      // plans find one (Checkmate's model may not reach it: it does not choose
      // implementations).
      if (planner == "monet" || planner == "lean") {
        EXPECT_TRUE(out.found) << where << ": " << planner << " at " << budget << " B";
      }
      if (!out.found) continue;
      const SimulationResult sim = simulate(g, out.plan, costs);
      ModelState s = state.clone();
      Executor executor(g, s, out.plan);
      const ExecutionResult run = executor.run(batch);
      // Gist's sparse encodings hold as many bytes as the data has non-zeros: the
      // simulator counts their upper bound.
      if (planner == "gist")
        EXPECT_LE(run.peak_bytes - run.start_bytes, sim.peak_above_start()) << where;
      else
        EXPECT_EQ(run.peak_bytes - run.start_bytes, sim.peak_above_start())
            << where << ": " << planner;
      // Gradients against autograd's for the plans that choose most (in float64).
      if (planner == "random" || planner == "lean" || planner_requires_budget(planner)) {
        EXPECT_LE(testing::max_gradient_error(g, out.plan), 1e-9) << where << ": " << planner;
      }
      ++ran;
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << ": " << planner << ": " << e.what();
    }
  }
  return ran;
}

TEST(Fuzz, GeneratedModelsPlanAndRunOrAreRefusedInOneLine) {
  MemoryTracker::install();
  int models = 0, refused = 0, plans = 0;
  std::map<std::string, int> refusals;
  for (int i = 0;; ++i) {
    const std::string base = kFuzzDir + "/fuzz_" + std::to_string(i);
    std::ifstream description(base + ".json");
    if (!description) break;
    const nlohmann::json d = nlohmann::json::parse(description);
    const std::string where = "fuzz_" + std::to_string(i) + " " + d.dump();
    ++models;
    Graph g;
    try {
      g = import_torchscript(base + ".pt", d.at("input_shape").get<std::vector<int64_t>>());
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
      EXPECT_NE(what.find("aten::"), std::string::npos) << where << ": names no operator: " << what;
      ++refused;
      ++refusals[what.substr(0, what.find(':'))];
      continue;
    }
    try {
      ModelState state = ModelState::initialize(g, 0);
      load_torchscript_weights(g, state, base + ".pt");
      const Batch batch = make_batch(g, 1);
      plans += plan_with_every_planner(g, state, batch, i, where);
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << ": " << e.what();
    }
  }
  std::cout << models << " generated models: " << models - refused << " imported (" << plans
            << " plans run), " << refused << " refused\n";
  for (const auto& [what, count] : refusals)
    std::cout << "  refused " << count << "x: " << what << "\n";
  EXPECT_GE(models, 300);
}

}  // namespace
}  // namespace monet
