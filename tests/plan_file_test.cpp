// The public API behind `monet models`, `show`, `baseline`, `run` and `verify`: the zoo, a
// model's description, plan files and the measurements of monet/measurement.h.
#include <gtest/gtest.h>

#include <monet/measurement.h>
#include <monet/model_description.h>
#include <monet/plan_file.h>

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

}  // namespace
}  // namespace monet
