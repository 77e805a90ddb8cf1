// The public API's entry points: budgets, planning with the plan cache, the budget of a
// whole training step as measured, checkpoints, saved weights, and the data loader.
#include <gtest/gtest.h>
#include <png.h>

#include <monet/image_data.h>
#include <monet/monet.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "api/model_impl.h"
#include "model_specs.h"
#include "runtime/data/batch_loader.h"
#include "training_equivalence.h"

namespace monet {
namespace {

namespace fs = std::filesystem;

ModelSpec tiny_resnet() { return testing::zoo_spec("resnet18", 4, {32, 32}, 0.125, 4); }
// Large enough in batch and image for activations to dominate (budgets below 1x fit).
ModelSpec activation_heavy_resnet() {
  return testing::zoo_spec("resnet18", 32, {64, 64}, 0.125, 4);
}

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/monet_api_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Planning with `planner` (no budget), no cache, silently.
PlanOptions uncached_options(const std::string& planner) {
  PlanOptions po;
  po.planner = planner;
  po.use_cache = false;
  po.progress = false;
  po.planning_limit = PlanningLimit::kWork;
  return po;
}

// Planning at `budget` with the cache in `cache`, silently, by work counts of a nominal 10 s.
PlanOptions quiet_options(const std::string& budget, const std::string& cache) {
  PlanOptions po;
  po.budget = budget;
  po.cache_dir = cache;
  po.progress = false;
  po.time_limit_seconds = 10;
  po.planning_limit = PlanningLimit::kWork;
  return po;
}

TEST(Budget, ParsesUnitsAndRatios) {
  auto never = []() -> int64_t {
    ADD_FAILURE() << "baseline measured";
    return 0;
  };
  EXPECT_EQ(parse_budget("123456789", never), 123456789);
  EXPECT_EQ(parse_budget("1.5GiB", never), 1610612736);
  EXPECT_EQ(parse_budget("800MiB", never), 838860800);
  EXPECT_EQ(parse_budget("0.4x", [] { return int64_t{1000}; }), 400);
}

TEST(Budget, RefusesWhatIsNotAFiniteByteCount) {
  auto base = [] { return int64_t{1000}; };
  for (const char* bad :
       {"", "abc", "nan", "inf", "-1GiB", "0", "1e30GiB", "1e300", "0.4y", "0.0001"})
    EXPECT_THROW(parse_budget(bad, base), std::invalid_argument) << bad;
}

TEST(Model, SyntheticBatchesHaveTheModelsShapesAndFollowTheSeed) {
  const Model model = Model::load(tiny_resnet());
  const auto [inputs, target] = model.synthetic_batch(3);
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].sizes().vec(), model.input_shape());
  EXPECT_EQ(model.input_shapes(), std::vector<std::vector<int64_t>>{model.input_shape()});
  EXPECT_EQ(target.sizes().vec(), model.target_shape());
  EXPECT_EQ(target.scalar_type(), model.target_dtype());
  EXPECT_GE(target.min().item<int64_t>(), 0);
  EXPECT_LT(target.max().item<int64_t>(), 4);  // the classes
  EXPECT_TRUE(at::equal(model.synthetic_batch(3).first[0], inputs[0]));
  EXPECT_FALSE(at::equal(model.synthetic_batch(4).first[0], inputs[0]));
}

TEST(PlannedModel, PlansOnceThenReadsTheCacheAndStaysWithinTheBudget) {
  const std::string cache = fresh_dir("cache");
  MemoryStats::install();
  const int64_t before = MemoryStats::current_bytes();
  Model model = Model::load(activation_heavy_resnet(), 0);
  const PlanOptions po = quiet_options("0.85x", cache);
  PlannedModel planned(model, po);
  const PlanReport& r = planned.report();
  EXPECT_FALSE(r.from_cache);
  ASSERT_TRUE(r.baseline_peak_bytes && r.predicted_peak_bytes && r.iteration_budget_bytes);
  EXPECT_GT(*r.baseline_peak_bytes, 0);
  EXPECT_LE(*r.predicted_peak_bytes, *r.iteration_budget_bytes);
  EXPECT_EQ(r.optimizer.state_bytes, [&] {
    int64_t n = 0;
    for (const auto& p : model.parameters()) n += p.nbytes();
    return n;
  }());

  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < 3; ++s) {
    const Batch b = testing::test_batch(model, s, at::kFloat);
    const at::Tensor x = b.at(impl_of(model)->input_values[0]),
                     y = b.at(impl_of(model)->target_value);
    MemoryStats::reset_peak();
    zero_grad(model.parameters());
    const StepResult step = planned.step(x, y);
    sgd.step();
    EXPECT_TRUE(std::isfinite(step.loss));
    EXPECT_LE(MemoryStats::peak_bytes() - before, r.budget_bytes.value()) << "step " << s;
    // step() computes the loss in the plan: its rise is the simulated one, to the byte.
    EXPECT_EQ(step.peak_bytes - step.start_bytes,
              r.predicted_peak_bytes.value() - r.predicted_start_bytes.value())
        << "step " << s;
  }

  PlannedModel again(Model::load(activation_heavy_resnet(), 0), po);
  EXPECT_TRUE(again.report().from_cache);
  EXPECT_EQ(again.report().plan_path, r.plan_path);
}

TEST(PlannedModel, RefusesBudgetsNoPlanFitsAndPlannersThatIgnoreIt) {
  PlanOptions po;
  po.use_cache = false;
  po.progress = false;
  po.planning_limit = PlanningLimit::kWork;
  po.budget = "1KiB";
  EXPECT_THROW(PlannedModel(Model::load(tiny_resnet(), 0), po), BudgetError);
  po.budget = "0.3x";
  po.planner = "storeall";
  EXPECT_THROW(PlannedModel(Model::load(tiny_resnet(), 0), po), BudgetError);
  po.planner = "no-such-planner";
  EXPECT_THROW(PlannedModel(Model::load(tiny_resnet(), 0), po), std::invalid_argument);
  po.planner = "monet";
  po.budget.clear();
  EXPECT_THROW(PlannedModel(Model::load(tiny_resnet(), 0), po), std::invalid_argument);
}

// forward() + a loss of the caller's + loss.backward(): a whole step under the budget,
// gradients in .grad(), last_step() reporting it; a second backward refused, the output
// outliving its PlannedModel, and NoGradGuard.
TEST(PlannedModel, ForwardHandsTheOutputToTheCallersLoss) {
  const std::string cache = fresh_dir("forward");
  MemoryStats::install();
  const int64_t before = MemoryStats::current_bytes();
  Model model = Model::load(activation_heavy_resnet(), 0);
  const PlanOptions po = quiet_options("0.85x", cache);
  auto planned = std::make_unique<PlannedModel>(model, po);
  const int64_t budget = planned->report().budget_bytes.value();
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const Batch b = testing::test_batch(model, 3, at::kFloat);
  const at::Tensor x = b.at(impl_of(model)->input_values[0]),
                   y = b.at(impl_of(model)->target_value);
  for (int s = 0; s < 2; ++s) {
    MemoryStats::reset_peak();
    zero_grad(model.parameters());
    at::Tensor out = planned->forward(x);
    EXPECT_EQ(out.sizes(), (std::vector<int64_t>{32, 4}));
    EXPECT_TRUE(out.requires_grad());
    testing::smoothed_nll_with_penalty(out, y).backward();
    sgd.step();
    EXPECT_LE(MemoryStats::peak_bytes() - before, budget) << "step " << s;
    EXPECT_TRUE(std::isnan(planned->last_step().loss));
    EXPECT_GT(planned->last_step().peak_bytes, 0);
    for (const auto& p : model.parameters()) EXPECT_TRUE(p.grad().defined());
  }
  EXPECT_EQ(model.steps(), 2);

  at::Tensor twice = planned->forward(x);
  at::Tensor loss = twice.sum();
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_THROW(loss.backward(), std::exception);
  at::Tensor orphan = planned->forward(x);
  planned.reset();  // the output's backward keeps what it needs alive
  zero_grad(model.parameters());
  orphan.sum().backward();
  EXPECT_TRUE(model.parameters()[0].grad().defined());
  {
    PlannedModel again(model, po);
    torch::NoGradGuard no_grad;
    EXPECT_FALSE(again.forward(x).requires_grad());
  }
}

// PlanOptions::loss_bytes: the caller's loss working set is charged where the loss node
// runs, in the place of the node's own (with_loss_working_set), so the predicted peak rises
// by at most that much, and plans for another working set are not read from the cache.
TEST(PlannedModel, ChargesTheCallersLossWhereTheLossRuns) {
  const std::string cache = fresh_dir("loss_bytes");
  Model model = Model::load(activation_heavy_resnet(), 0);
  const Graph& g = impl_of(model)->graph;
  const int output = g.node(g.value(g.loss_value()).producer).inputs[0];
  const int64_t loss_bytes = 2 * g.value(output).bytes();
  PlanOptions po = quiet_options("", cache);
  po.planner = "storeall";
  model_costs(g, po, cache);  // profiled into the cache, which the predictions read
  const PlannedModel plain(model, po);
  po.loss_bytes = loss_bytes;
  const PlannedModel charged(model, po);
  EXPECT_FALSE(charged.report().from_cache) << "a plan for another loss working set was read";
  EXPECT_EQ(charged.report().loss_bytes, loss_bytes);
  const int64_t without = plain.report().predicted_peak_bytes.value();
  const int64_t with = charged.report().predicted_peak_bytes.value();
  EXPECT_GT(without, 0);
  EXPECT_GE(with, without - 4 * g.value(output).bytes());
  EXPECT_LE(with, without + loss_bytes);

  CostModel costs;
  costs.nodes.resize(g.nodes().size());
  const int loss_node = g.value(g.loss_value()).producer;
  costs.nodes[loss_node].forward["default"].workspace_bytes = 7;
  costs.nodes[loss_node].backward["input/default"].workspace_bytes = 9;
  costs.nodes[0].forward["default"].workspace_bytes = 5;
  const CostModel c = with_loss_working_set(g, costs, 1000);
  EXPECT_EQ(c.nodes[loss_node].forward.at("default").workspace_bytes, 1000);
  EXPECT_EQ(c.nodes[loss_node].backward.at("input/default").workspace_bytes, 1000);
  EXPECT_EQ(c.nodes[0].forward.at("default").workspace_bytes, 5);
  EXPECT_EQ(
      with_loss_working_set(g, costs, 0).nodes[loss_node].forward.at("default").workspace_bytes, 7);
}

// The budgets there are plans for, and the error for one below them all: it carries the
// smallest budget with a plan (planning at it succeeds) and the proven floor.
TEST(PlannedModel, BudgetErrorsCarryTheSmallestBudgetAndTheFloor) {
  const std::string cache = fresh_dir("budget_range");
  MemoryStats::install();
  Model model = Model::load(activation_heavy_resnet(), 0);
  PlanOptions po = quiet_options("", cache);
  const BudgetRange range = budget_range(model, po);
  EXPECT_LE(range.floor_bytes, range.smallest_bytes);
  EXPECT_LT(range.smallest_bytes, range.storeall_bytes);
  po.budget = std::to_string(range.floor_bytes - 1);
  try {
    PlannedModel planned(model, po);
    FAIL() << "a budget below the floor was planned";
  } catch (const BudgetError& e) {
    EXPECT_EQ(e.smallest_bytes, range.smallest_bytes);
    EXPECT_EQ(e.proven_bound_bytes, range.floor_bytes);
    EXPECT_NE(std::string(e.what()).find("the smallest budget with a plan is"), std::string::npos);
  }
  po.budget = std::to_string(range.smallest_bytes);
  PlannedModel planned(model, po);
  EXPECT_LE(planned.report().predicted_peak_bytes.value(),
            planned.report().iteration_budget_bytes.value());
  po.budget = "1KiB";  // not even the model: the bound, before any profiling
  try {
    PlannedModel refused(model, po);
    FAIL() << "1 KiB was planned";
  } catch (const BudgetError& e) {
    EXPECT_FALSE(e.smallest_bytes.has_value());
    EXPECT_GT(e.proven_bound_bytes.value(), 1024);
  }
}

// The smallest budget is searched once per model and options: budget_range reads it from
// the cache directory after; another time limit searches again; an unreadable file is
// searched again and rewritten.
TEST(PlannedModel, BudgetRangeCachesTheSmallestBudget) {
  const std::string cache = fresh_dir("budget_cache");
  MemoryStats::install();
  Model model = Model::load(testing::zoo_spec("vgg11", 2, {32, 32}, 0.125, 4), 0);
  PlanOptions po = quiet_options("", cache);
  const BudgetRange first = budget_range(model, po);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(cache + "/budgets")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(files[0]));
  EXPECT_EQ(j.at("fingerprint"), impl_of(model)->graph.fingerprint());
  // A planted figure 1 B lower is what the next call answers: the file is read.
  j["smallest_bytes"] = j.at("smallest_bytes").get<int64_t>() - 1;
  std::ofstream(files[0]) << j.dump();
  EXPECT_EQ(budget_range(model, po).smallest_bytes, first.smallest_bytes - 1);
  // Another time limit is another search, in a file of its own.
  PlanOptions longer = po;
  longer.time_limit_seconds = 11;
  budget_range(model, longer);
  EXPECT_EQ(std::distance(fs::directory_iterator(cache + "/budgets"), fs::directory_iterator()), 2);
  // A truncated file is searched again and rewritten.
  std::ofstream(files[0]) << "{\"fingerprint\": ";
  EXPECT_EQ(budget_range(model, po).smallest_bytes, first.smallest_bytes);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(files[0])).at("smallest_bytes").get<int64_t>(),
            j.at("smallest_bytes").get<int64_t>() + 1);
}

// share_tensors: a second model trains the first one's tensors in place; missing or
// misshaped tensors are named.
TEST(Model, SharedTensorsAreTheSameTensors) {
  Model owner = Model::load(tiny_resnet(), 0);
  Model user = Model::load(tiny_resnet(), 1);
  auto tensors = owner.named_parameters();
  for (auto& b : owner.named_buffers()) tensors.push_back(b);
  user.share_tensors(tensors);
  for (size_t i = 0; i < owner.parameters().size(); ++i)
    EXPECT_TRUE(user.parameters()[i].is_same(owner.parameters()[i]));
  PlanOptions po = uncached_options("storeall");
  PlannedModel planned(user, po);
  const Batch b = testing::test_batch(user, 3, at::kFloat);
  const at::Tensor running_mean = owner.named_buffers()[0].second.clone();
  planned.step(b.at(impl_of(user)->input_values[0]), b.at(impl_of(user)->target_value));
  for (const auto& p : owner.parameters()) EXPECT_TRUE(p.grad().defined());
  EXPECT_FALSE(owner.named_buffers()[0].second.equal(running_mean));  // updated in place

  auto missing = tensors;
  missing.pop_back();
  EXPECT_THROW(user.share_tensors(missing), std::invalid_argument);
  auto misshaped = tensors;
  misshaped[0].second = torch::zeros({1});
  try {
    user.share_tensors(misshaped);
    FAIL() << "a misshaped tensor was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(tensors[0].first), std::string::npos) << e.what();
  }
}

// A plan file for another batch size, and a batch of another shape: PlanMismatch.
TEST(PlannedModel, PlansAndBatchesForAnotherShapeAreMismatches) {
  const std::string dir = fresh_dir("mismatch");
  PlanOptions po = uncached_options("storeall");
  PlannedModel planned(Model::load(tiny_resnet(), 0), po);
  planned.save_plan(dir + "/plan.json");
  ModelSpec other = tiny_resnet();
  other.batch = 2;
  po.plan_file = dir + "/plan.json";
  EXPECT_THROW(PlannedModel(Model::load(other, 0), po), PlanMismatch);
  EXPECT_THROW(planned.step(torch::zeros({2, 3, 32, 32}), torch::zeros({2}, torch::kLong)),
               PlanMismatch);
}

// Progress goes to the sink while one is installed, to stderr after.
TEST(Progress, SinkReceivesPlanningProgress) {
  std::string text;
  set_progress_sink([&](bool warning, const std::string& piece) {
    if (!warning) text += piece;
  });
  PlanOptions po = quiet_options("0.9x", fresh_dir("progress"));
  po.progress = true;
  MemoryStats::install();
  PlannedModel planned(Model::load(activation_heavy_resnet(), 0), po);
  set_progress_sink({});
  EXPECT_NE(text.find("profiling:"), std::string::npos) << text;
  EXPECT_NE(text.find("planner:"), std::string::npos) << text;
}

TEST(PlannedModel, RefusesBatchesOfAnotherShapeOrType) {
  PlanOptions po = uncached_options("storeall");
  Model model = Model::load(tiny_resnet(), 0);
  PlannedModel planned(model, po);
  const auto y = torch::zeros({4}, torch::kLong);
  EXPECT_THROW(planned.step(torch::zeros({2, 3, 32, 32}), y), std::invalid_argument);
  EXPECT_THROW(planned.step(torch::zeros({4, 3, 32, 32}), torch::zeros({4})),
               std::invalid_argument);
  EXPECT_EQ(planned.predict(torch::zeros({4, 3, 32, 32})).sizes().vec(),
            (std::vector<int64_t>{4, 4}));
}

TEST(Checkpoint, ResumedTrainingEqualsUninterruptedTraining) {
  const std::string dir = fresh_dir("checkpoint");
  PlanOptions po = uncached_options("chen");
  auto run = [&](Model& model, torch::optim::Optimizer& opt, PlannedModel& p, int from, int to) {
    for (int s = from; s < to; ++s) {
      const Batch b = testing::test_batch(model, 50 + s, at::kFloat);
      zero_grad(model.parameters());
      p.step(b.at(impl_of(model)->input_values[0]), b.at(impl_of(model)->target_value));
      opt.step();
    }
  };
  Model whole = Model::load(tiny_resnet(), 0);
  PlannedModel pw(whole, po);
  auto ow = testing::make_test_optimizer(OptimizerKind::kAdam, whole.parameters());
  run(whole, *ow, pw, 0, 2);
  save_checkpoint(dir + "/c.pt", whole, *ow, 7);
  run(whole, *ow, pw, 2, 4);

  Model resumed = Model::load(tiny_resnet(), 1);  // other initial weights: all come from the file
  PlannedModel pr(resumed, po);
  auto orr = testing::make_test_optimizer(OptimizerKind::kAdam, resumed.parameters());
  EXPECT_EQ(load_checkpoint(dir + "/c.pt", resumed, *orr), 7u);
  EXPECT_EQ(resumed.steps(), 2);
  run(resumed, *orr, pr, 2, 4);
  const auto a = whole.named_parameters(), b = resumed.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.equal(b[i].second)) << a[i].first;

  // A truncated file and another model's checkpoint are refused; nothing changes.
  std::ifstream in(dir + "/c.pt", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/truncated.pt", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const at::Tensor first = resumed.parameters()[0].detach().clone();
  EXPECT_THROW(load_checkpoint(dir + "/truncated.pt", resumed, *orr), std::invalid_argument);
  ModelSpec other = tiny_resnet();
  other.classes = 5;
  Model m5 = Model::load(other, 0);
  auto o5 = testing::make_test_optimizer(OptimizerKind::kAdam, m5.parameters());
  EXPECT_THROW(load_checkpoint(dir + "/c.pt", m5, *o5), std::invalid_argument);
  EXPECT_TRUE(resumed.parameters()[0].equal(first));
  for (const auto& e : fs::directory_iterator(dir))  // no temporaries left behind
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(Model, SavedStateDictHoldsTheTrainedValuesAndBatchCounters) {
  const std::string dir = fresh_dir("save");
  Model model = Model::load(tiny_resnet(), 0);
  model.save(dir + "/w.pt");
  std::ifstream in(dir + "/w.pt", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto dict = torch::pickle_load(bytes).toGenericDict();
  for (const auto& [name, t] : model.named_parameters())
    EXPECT_TRUE(dict.at(name).toTensor().equal(t)) << name;
  EXPECT_TRUE(dict.contains("bn1.num_batches_tracked"));
}

// Writes a width x height PNG of one colour.
void write_png(const std::string& path, int width, int height, uint8_t r, uint8_t g, uint8_t b) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < pixels.size(); i += 3) {
    pixels[i] = r;
    pixels[i + 1] = g;
    pixels[i + 2] = b;
  }
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = PNG_FORMAT_RGB;
  ASSERT_TRUE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr));
}

TEST(Data, ImageFolderDecodesResizesAndSkipsCorruptImages) {
  const std::string dir = fresh_dir("images");
  fs::create_directories(dir + "/red");
  fs::create_directories(dir + "/blue");
  for (int i = 0; i < 3; ++i) {
    write_png(dir + "/red/" + std::to_string(i) + ".png", 40, 30, 255, 0, 0);
    write_png(dir + "/blue/" + std::to_string(i) + ".PNG", 20, 20, 0, 0, 255);
  }
  std::ofstream(dir + "/blue/broken.jpg") << "\xff\xd8 not really a jpeg";
  auto data = std::shared_ptr<ImageDataset>(open_image_folder(dir));
  EXPECT_EQ(data->size(), 7);
  EXPECT_EQ(data->classes(), 2);
  const Sample s = data->get(4, 16, 16);  // red/0.png: blue's 0-2.PNG, broken.jpg, then red
  EXPECT_EQ(s.label, 1);
  EXPECT_EQ(s.image.sizes().vec(), (std::vector<int64_t>{3, 16, 16}));
  EXPECT_NEAR(s.image[0][5][5].item<double>(), (1.0 - 0.485) / 0.229, 1e-5);
  EXPECT_THROW(data->get(3, 16, 16), DataError);  // blue/broken.jpg

  LoaderOptions lo;
  lo.batch = 3;
  lo.height = lo.width = 16;
  std::vector<std::string> warnings;
  std::mutex m;
  lo.warn = [&](const std::string& w) {
    std::lock_guard<std::mutex> l(m);
    warnings.push_back(w);
  };
  std::vector<at::Tensor> first_epoch;
  {
    BatchLoader loader(data, lo);
    EXPECT_EQ(loader.steps_per_epoch(), 2);
    for (int i = 0; i < 4; ++i) {
      auto [x, y] = loader.next();
      EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{3, 3, 16, 16}));
      first_epoch.push_back(y);
    }
  }
  EXPECT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("broken.jpg"), std::string::npos) << warnings[0];
  lo.start_step = 2;  // resuming at step 2 sees the batches of steps 2, 3
  BatchLoader resumed(data, lo);
  EXPECT_TRUE(resumed.next().second.equal(first_epoch[2]));
  EXPECT_TRUE(resumed.next().second.equal(first_epoch[3]));
}

TEST(Data, MissingAndEmptyFoldersAreNamed) {
  try {
    open_image_folder("/nonexistent/monet-data");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/monet-data"), std::string::npos);
  }
  const std::string empty = fresh_dir("empty");
  EXPECT_THROW(open_image_folder(empty), DataError);
  fs::create_directories(empty + "/cls");
  EXPECT_THROW(open_image_folder(empty), DataError);
  EXPECT_THROW(open_cifar10(empty), DataError);
}

TEST(Data, ThePublicBatchesShardAndResumeTheOrder) {
  const std::string dir = fresh_dir("public_images");
  for (const char* cls : {"a", "b"}) {
    fs::create_directories(dir + "/" + cls);
    for (int i = 0; i < 4; ++i)
      write_png(dir + "/" + cls + "/" + std::to_string(i) + ".png", 12, 12, 10 * i, 0, 0);
  }
  const ImageData data = ImageData::open(dir, image_data_format_from_name("imagefolder"));
  EXPECT_EQ(data.size(), 8);
  EXPECT_EQ(data.classes(), 2);
  EXPECT_NE(data.describe().find("8 images"), std::string::npos) << data.describe();
  ImageBatchOptions o;
  o.batch = 2;
  o.height = o.width = 8;
  o.seed = 3;
  ImageBatches whole(data, o);
  EXPECT_EQ(whole.steps_per_epoch(), 4);
  EXPECT_EQ(whole.batch_bytes(), 2 * 3 * 8 * 8 * 4 + 2 * 8);
  std::vector<at::Tensor> labels;
  for (int i = 0; i < 4; ++i) {
    auto [x, y] = whole.next();
    EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3, 8, 8}));
    labels.push_back(y);
  }
  o.start_step = 3;
  ImageBatches resumed(data, o);
  EXPECT_TRUE(resumed.next().second.equal(labels[3]));
  o.start_step = 0;
  o.world_size = 2;
  ImageBatches rank0(data, o);
  EXPECT_EQ(rank0.steps_per_epoch(), 2);
  o.batch = 9;
  o.world_size = 1;
  EXPECT_THROW(ImageBatches(data, o), std::invalid_argument);
  EXPECT_THROW(ImageData::open(dir + "/none", ImageDataFormat::kCifar10), std::invalid_argument);
  EXPECT_THROW(image_data_format_from_name("tfrecord"), std::invalid_argument);
}

}  // namespace
}  // namespace monet
