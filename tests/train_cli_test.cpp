// `monet train` end to end: a traced ResNet learns an ImageFolder of coloured shapes
// under half of autograd's memory, its saved TorchScript file gives monet's logits in
// Python; checkpoints resume exactly; bad input exits 2 and leaves no partial file.
#include <gtest/gtest.h>

#include <monet/monet.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/model_impl.h"
#include "model_specs.h"
#include "runtime/data/batch_loader.h"

namespace monet {
namespace {

namespace fs = std::filesystem;
const std::string kDir = MONET_TRAINING_FIXTURE_DIR;

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/monet_train_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs `monet ARGS`, stdout to `out`, stderr to `err`; returns the exit code.
int monet(const std::string& args, const std::string& out, const std::string& err) {
  const int status =
      std::system((std::string(MONET_BINARY) + " " + args + " >" + out + " 2>" + err).c_str());
  return WEXITSTATUS(status);
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

nlohmann::json last_json_line(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return nlohmann::json::parse(last);
}

TEST(TrainCommand, LearnsShapesUnderHalfTheMemoryAndSavesForPython) {
  const std::string dir = fresh_dir("shapes");
  const std::string model = kDir + "/resnet_tiny.pt", trained = dir + "/trained.pt";
  ASSERT_EQ(monet("train --model " + model + " --input-shape 32,3,32,32 --data " + kDir +
                      "/shapes --budget 0.5x --epochs 8 --lr 0.05 --seed 1 --time-limit 20 "
                      "--search-limit work "
                      "--cache-dir " +
                      dir + "/cache --save " + trained + " --json",
                  dir + "/log.jsonl", dir + "/err.txt"),
            0)
      << read(dir + "/err.txt");
  const nlohmann::json summary = last_json_line(dir + "/log.jsonl");
  const int64_t budget = summary.at("budget_bytes"), peak = summary.at("max_step_peak_bytes");
  EXPECT_LE(peak, budget);
  EXPECT_NEAR(double(budget) / summary.at("autograd_step_peak_bytes").get<double>(), 0.5, 1e-6);
  std::printf("step peak %lld B, budget %lld B, autograd's step %lld B\n",
              static_cast<long long>(peak), static_cast<long long>(budget),
              static_cast<long long>(summary.at("autograd_step_peak_bytes").get<int64_t>()));

  // Training accuracy of the saved model, computed by monet in eval mode.
  Model saved = Model::load(testing::traced_spec(trained, {32, 3, 32, 32}), 0);
  PlanOptions po;
  po.planner = "storeall";
  po.use_cache = false;
  po.progress = false;
  PlannedModel planned(saved, po);
  auto data = std::shared_ptr<ImageDataset>(open_image_folder(kDir + "/shapes"));
  LoaderOptions lo;
  lo.batch = 32;
  lo.height = lo.width = 32;
  BatchLoader loader(data, lo);
  int64_t correct = 0, seen = 0;
  at::Tensor first_x, first_logits;
  for (int64_t s = 0; s < loader.steps_per_epoch(); ++s) {
    auto [x, y] = loader.next();
    const at::Tensor logits = planned.predict(x);
    if (s == 0) first_x = x, first_logits = logits;
    correct += logits.argmax(1).eq(y).sum().item<int64_t>();
    seen += y.size(0);
  }
  const double accuracy = double(correct) / double(seen);
  std::printf("training accuracy of the saved model: %.3f (%lld images)\n", accuracy,
              static_cast<long long>(seen));
  EXPECT_GT(accuracy, 0.9);

  c10::Dict<std::string, at::Tensor> tensors;
  tensors.insert("input", first_x);
  tensors.insert("logits", first_logits);
  const std::vector<char> bytes = torch::pickle_save(tensors);
  std::ofstream(dir + "/logits.pt", std::ios::binary).write(bytes.data(), bytes.size());
  const std::string check = std::string(MONET_PYTHON) + " " + MONET_SOURCE_DIR +
                            "/tools/check_saved_logits.py " + trained + " " + dir + "/logits.pt";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(TrainCommand, ResumingFromACheckpointEqualsTrainingThrough) {
  const std::string dir = fresh_dir("resume");
  const std::string common =
      "train --model resnet18 --batch 4 --image 32 --width 0.125 --classes 4 --synthetic "
      "--planner chen --optimizer adam --lr 0.01 --cache-dir " +
      dir + "/cache ";
  ASSERT_EQ(monet(common + "--steps 4 --save " + dir + "/through.pt", dir + "/o1", dir + "/e1"), 0)
      << read(dir + "/e1");
  ASSERT_EQ(monet(common + "--steps 2 --checkpoint " + dir + "/c.pt", dir + "/o2", dir + "/e2"), 0)
      << read(dir + "/e2");
  ASSERT_EQ(monet(common + "--steps 4 --resume " + dir + "/c.pt --save " + dir + "/resumed.pt",
                  dir + "/o3", dir + "/e3"),
            0)
      << read(dir + "/e3");
  auto load = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return torch::pickle_load(b).toGenericDict();
  };
  const auto a = load(dir + "/through.pt"), b = load(dir + "/resumed.pt");
  ASSERT_EQ(a.size(), b.size());
  for (const auto& e : a)
    EXPECT_TRUE(e.value().toTensor().equal(b.at(e.key()).toTensor())) << e.key().toStringRef();
}

TEST(TrainCommand, BadInputExitsTwoWithOneLineAndWritesNothing) {
  const std::string dir = fresh_dir("bad");
  const std::string common =
      "train --model resnet18 --batch 4 --image 32 --width 0.125 "
      "--classes 4 --steps 1 --planner storeall --cache-dir " +
      dir + "/cache --save " + dir + "/w.pt ";
  std::ofstream(dir + "/truncated.pt") << "PK\x03\x04 not a whole archive";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--data " + dir + "/missing", "missing"},
      {"--data " + dir, "no class folders"},
      {"--synthetic --resume " + dir + "/truncated.pt", "truncated"},
      {"--synthetic --budget nan", "not finite"},
      {"--synthetic --budget 1e40GiB", "too large"},
      {"--synthetic --budget 0.3x", "does not hold the model"},
      // Store-all's predicted peak is over it (with every gradient kept to the end).
      {"--synthetic --budget 0.9x --optimizer-update after-backward", "exceeds"},
      {"--synthetic --optimizer lbfgs", "sgd, adam or adamw"},
      {"--synthetic --optimizer-update fused --gradient-sync after-backward --nproc 2",
       "during-backward"},
  };
  for (const auto& [args, words] : cases) {
    EXPECT_EQ(monet(common + args, dir + "/out", dir + "/err"), 2) << args;
    const std::string err = read(dir + "/err");
    EXPECT_NE(err.find(words), std::string::npos) << args << ": " << err;
    EXPECT_FALSE(fs::exists(dir + "/w.pt")) << args;
  }
  // A checkpoint from another model.
  ASSERT_EQ(monet("train --model resnet18 --batch 4 --image 32 --width 0.125 --classes 5 "
                  "--steps 1 --synthetic --planner storeall --checkpoint " +
                      dir + "/c5.pt",
                  dir + "/out", dir + "/err"),
            0)
      << read(dir + "/err");
  EXPECT_EQ(monet(common + "--synthetic --resume " + dir + "/c5.pt", dir + "/out", dir + "/err"),
            2);
  EXPECT_NE(read(dir + "/err").find("another model"), std::string::npos) << read(dir + "/err");
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace monet
