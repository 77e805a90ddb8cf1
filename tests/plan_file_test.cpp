// The public API behind `monet models`, `show`, `baseline`, `run` and `verify`: the zoo, a
// model's description, plan files and the measurements of monet/measurement.h.
#include <gtest/gtest.h>

#include <monet/measurement.h>
#include <monet/model_description.h>
#include <monet/operator_costs.h>
#include <monet/plan_file.h>
#include <monet/planning.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "model_specs.h"

namespace monet {
namespace {

ModelSpec small_resnet() { return testing::zoo_spec("resnet18", 2, {32, 32}, 0.125, 4); }

// A plan file of `planner` (one that takes no budget) for the tiny ResNet.
std::string saved_plan_file(const std::string& planner) {
  const std::string path = ::testing::TempDir() + "/monet_plan_file_" + planner + ".json";
  PlanOptions po;
  po.planner = planner;
  po.use_cache = false;
  po.progress = false;
  PlannedModel planned(Model::load(small_resnet()), po);
  planned.save_plan(path);
  return path;
}

TEST(ModelDescription, TheZooListsItsModelsWithTheirDefaults) {
  const std::vector<ZooModel> zoo = model_zoo();
  const auto resnet =
      std::find_if(zoo.begin(), zoo.end(), [](const ZooModel& m) { return m.name == "resnet18"; });
  ASSERT_NE(resnet, zoo.end());
  EXPECT_EQ(resnet->spatial_dims, 2);
  EXPECT_EQ(resnet->default_image, (std::vector<int64_t>{224, 224}));
  EXPECT_EQ(resnet->default_classes, 1000);
  EXPECT_FALSE(resnet->description.empty());
}

TEST(ModelDescription, DescribesEveryOperatorAndTheParameters) {
  const Model model = Model::load(small_resnet());
  const ModelDescription d = describe(small_resnet());
  EXPECT_EQ(d.model, "resnet18");
  EXPECT_EQ(d.batch, 2);
  EXPECT_EQ(d.image, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(d.classes, 4);
  EXPECT_EQ(d.fingerprint, model.fingerprint());
  EXPECT_EQ(d.generic_operators, 0);
  ASSERT_EQ(static_cast<int64_t>(d.operators.size()), model.node_count());
  int64_t parameters = 0;
  for (const auto& p : model.parameters()) parameters += p.numel();
  EXPECT_EQ(d.parameters, parameters);
  EXPECT_EQ(d.parameter_bytes, parameters * 4);
  EXPECT_EQ(d.operators.front().name, "conv1");
  EXPECT_EQ(d.operators.front().output_shape, (std::vector<int64_t>{2, 8, 16, 16}));
  EXPECT_EQ(d.operators.front().output_bytes, 2 * 8 * 16 * 16 * 4);
  for (size_t i = 0; i < d.operators.size(); ++i) EXPECT_EQ(d.operators[i].id, int(i));
  const ModelDescription loaded = describe(model);
  EXPECT_EQ(loaded.fingerprint, d.fingerprint);
  EXPECT_EQ(loaded.activation_bytes, d.activation_bytes);
  EXPECT_EQ(shape_string({2, 3}), "[2, 3]");
  EXPECT_EQ(image_size_string({416, 608}), "416x608");
  EXPECT_EQ(format_bytes(1536, false), "1.5 KiB");
}

TEST(PlanFile, ReadsWhatAPlanDoesWithEachOperator) {
  const PlanFile plan = PlanFile::load(saved_plan_file("chen"));
  EXPECT_EQ(plan.planner(), "chen");
  EXPECT_EQ(plan.model_name(), "resnet18");
  EXPECT_EQ(plan.optimizer_update(), OptimizerUpdate::kAfterBackward);
  const ModelDescription d = plan.model_description();
  EXPECT_EQ(d.fingerprint, describe(small_resnet()).fingerprint);
  const std::vector<OperatorChoice> choices = plan.operator_choices();
  ASSERT_EQ(choices.size(), d.operators.size());
  int recomputations = 0;
  for (const OperatorChoice& c : choices) {
    EXPECT_FALSE(c.forward.empty());
    recomputations += c.recomputations;
  }
  const PlanSummary s = plan.summary();
  EXPECT_GT(s.recomputations, 0);  // Chen's segments run again in the backward
  // (Every forward after an operator's first counts; the summary counts those after the
  // first backward instruction.)
  EXPECT_GE(recomputations, s.recomputations);
  EXPECT_GT(s.instructions, 2 * static_cast<int>(choices.size()));
  EXPECT_EQ(s.lossy_forwards, 0);
}

TEST(PlanFile, RefusesAMissingATruncatedAndAForeignFile) {
  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(
      {
        try {
          PlanFile::load(dir + "/no_such_plan.json");
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("cannot read plan"), std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
  std::ifstream in(saved_plan_file("storeall"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string truncated = dir + "/monet_truncated_plan.json";
  std::ofstream(truncated) << text.substr(0, text.size() / 2);
  try {
    PlanFile::load(truncated);
    ADD_FAILURE() << "a truncated plan loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON (truncated?)"), std::string::npos);
  }
  const std::string foreign = dir + "/monet_foreign_plan.json";
  std::ofstream(foreign) << "{\"format\": \"something else\"}";
  try {
    PlanFile::load(foreign);
    ADD_FAILURE() << "a foreign file loaded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not a monet plan"), std::string::npos) << e.what();
  }
}

TEST(Measurement, APlanFilesGradientsEqualAutogradsInFloat64) {
  const PlanFile plan = PlanFile::load(saved_plan_file("chen"));
  const GradientCheck c = verify_gradients(plan);
  EXPECT_EQ(c.parameters, static_cast<int>(Model::load(small_resnet()).parameters().size()));
  EXPECT_LE(c.max_relative_error, 1e-10) << c.worst_parameter;
  EXPECT_NEAR(c.loss, c.autograd_loss, 1e-12 * std::abs(c.autograd_loss));
  EXPECT_THROW(verify_gradients(plan, torch::kInt64), std::invalid_argument);
}

TEST(Measurement, APlanFileRunsInterleavedWithAutograd) {
  const PlanFile plan = PlanFile::load(saved_plan_file("chen"));
  MeasurementOptions mo;
  mo.warmup = 0;
  mo.iters = 2;
  mo.record_last_trace = true;
  int lines = 0;
  mo.progress = [&](const std::string&) { ++lines; };
  const AutogradComparison c = compare_with_autograd(plan, mo);
  EXPECT_EQ(lines, 2);
  ASSERT_EQ(c.iteration_seconds.size(), 2u);
  ASSERT_EQ(c.autograd_iteration_seconds.size(), 2u);
  EXPECT_GT(c.peak_bytes, 0);
  EXPECT_GT(c.autograd_peak_bytes, 0);
  EXPECT_DOUBLE_EQ(c.memory_ratio, double(c.peak_bytes) / double(c.autograd_peak_bytes));
  ASSERT_FALSE(c.trace.empty());
  for (const MemoryTracePoint& p : c.trace) EXPECT_LE(p.current_bytes, p.peak_bytes);
}

TEST(Measurement, APlannedModelRunsInterleavedWithAutogradFromACopy) {
  PlanOptions po;
  po.planner = "chen";
  po.use_cache = false;
  po.progress = false;
  PlannedModel planned(Model::load(small_resnet()), po);
  const torch::Tensor before = planned.model().parameters()[0].clone();
  const AutogradComparison c = compare_with_autograd(planned, 2);
  EXPECT_EQ(c.iteration_seconds.size(), 2u);
  EXPECT_GT(c.peak_bytes, 0);
  EXPECT_DOUBLE_EQ(c.memory_ratio, double(c.peak_bytes) / double(c.autograd_peak_bytes));
  EXPECT_TRUE(planned.model().parameters()[0].equal(before));  // the model is left unchanged
}

TEST(Measurement, AutogradIterationsReportPeakTimeAndTrace) {
  const Model model = Model::load(small_resnet());
  MeasurementOptions mo;
  mo.warmup = 1;
  mo.iters = 2;
  mo.record_last_trace = true;
  std::vector<std::string> lines;
  mo.progress = [&](const std::string& line) { lines.push_back(line); };
  const AutogradIterations r = measure_autograd_iterations(model, mo);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("warm-up 1/1", 0), 0u) << lines[0];
  EXPECT_EQ(lines[2].rfind("iteration 2/2", 0), 0u) << lines[2];
  ASSERT_EQ(r.seconds.size(), 2u);
  EXPECT_GT(r.peak_bytes, r.start_bytes);
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_FALSE(r.trace.empty());
  for (const auto& p : model.parameters()) EXPECT_FALSE(p.grad().defined());
}

// Costs profiled once (quickly) into a fresh cache directory.
CostSource quick_profile(const std::string& name) {
  CostSource s;
  s.cache_dir = ::testing::TempDir() + "/monet_plan_file_costs_" + name;
  std::filesystem::remove_all(s.cache_dir);
  s.repeats = 1;
  s.warmup = 0;
  s.progress = false;
  return s;
}

TEST(OperatorCosts, ProfilesOnceThenReadsTheCacheOrAFile) {
  const Model model = Model::load(small_resnet());
  const CostSource source = quick_profile("cache");
  EXPECT_FALSE(OperatorCosts::find(model, source).has_value());
  const OperatorCosts profiled = OperatorCosts::obtain(model, source);
  EXPECT_FALSE(profiled.from_cache());
  EXPECT_GT(profiled.implementations(), 2 * model.node_count());
  EXPECT_GT(profiled.largest_workspace_bytes(), 0);
  EXPECT_TRUE(std::filesystem::exists(profiled.cache_file())) << profiled.cache_file();
  const std::optional<OperatorCosts> cached = OperatorCosts::find(model, source);
  ASSERT_TRUE(cached.has_value());
  EXPECT_TRUE(cached->from_cache());
  const std::string file = source.cache_dir + "/costs.json";
  profiled.save(file);
  CostSource from_file = source;
  from_file.costs_file = file;
  from_file.use_cache = false;
  const OperatorCosts read = OperatorCosts::obtain(model, from_file);
  EXPECT_EQ(read.implementations(), profiled.implementations());
  EXPECT_DOUBLE_EQ(read.predict_store_all().seconds, profiled.predict_store_all().seconds);
  EXPECT_EQ(read.predict_store_all().peak_bytes, profiled.predict_store_all().peak_bytes);
  // A cost file of another shape is refused, naming the file.
  ModelSpec other = small_resnet();
  other.batch = 3;
  try {
    OperatorCosts::obtain(Model::load(other), from_file);
    ADD_FAILURE() << "costs of another shape were read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
}

TEST(Planning, PlansWithinABudgetAndExplainsOneTooSmall) {
  const Model model = Model::load(small_resnet());
  const OperatorCosts costs = OperatorCosts::obtain(model, quick_profile("plan"));
  EXPECT_TRUE(planner_info("monet").requires_budget);
  EXPECT_TRUE(planner_info("chain").takes_budget);
  EXPECT_FALSE(planner_info("chain").requires_budget);
  EXPECT_FALSE(planner_info("storeall").needs_costs);
  EXPECT_THROW(planner_info("no-such-planner"), std::invalid_argument);

  PlanFileRequest request;
  request.planner = "storeall";
  const PlanFileOutcome storeall = make_plan_file(model, nullptr, request);
  ASSERT_TRUE(storeall.plan.has_value());
  EXPECT_FALSE(storeall.solve.has_value());
  const int64_t storeall_peak = costs.predict(*storeall.plan).peak_bytes;
  EXPECT_EQ(storeall_peak, costs.predict_store_all().peak_bytes);

  request.planner = "monet";
  EXPECT_THROW(make_plan_file(model, &costs, request), std::invalid_argument);  // no budget
  request.budget_bytes = storeall_peak;
  request.search.limit = PlanningLimit::kWork;
  request.search.time_limit_seconds = 10;
  request.search.progress = false;
  const PlanFileOutcome fits = make_plan_file(model, &costs, request);
  ASSERT_TRUE(fits.plan.has_value());
  ASSERT_TRUE(fits.solve.has_value());
  EXPECT_LE(costs.predict(*fits.plan).peak_bytes, *request.budget_bytes);
  EXPECT_GT(fits.solve->columns, 0);
  EXPECT_GT(fits.solve->floor_bytes, 0);
  EXPECT_TRUE(fits.solve->first_incumbent_seconds.has_value());  // (none only without a plan)
  const std::string path = ::testing::TempDir() + "/monet_made_plan.json";
  fits.plan->save(path);
  EXPECT_EQ(PlanFile::load(path).planner(), "monet");

  request.budget_bytes = fits.solve->floor_bytes - 1;  // below the floor: no plan
  const PlanFileOutcome none = make_plan_file(model, &costs, request);
  EXPECT_FALSE(none.plan.has_value());
  EXPECT_FALSE(none.out_of_time);
  const SmallestBudget smallest =
      smallest_iteration_budget(model, costs, request, none.proven_infeasible_bytes);
  ASSERT_TRUE(smallest.bytes.has_value());
  EXPECT_GE(*smallest.bytes, fits.solve->floor_bytes);
  EXPECT_LE(*smallest.bytes, costs.predict(*fits.plan).peak_bytes);
}

}  // namespace
}  // namespace monet
