// End-to-end tests of the `monet` executable: output, JSON, exit codes, error lines.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace {

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

CliRun monet(const std::string& args) {
  // One file per test process: CTest runs tests in parallel.
  const std::string err_file =
      ::testing::TempDir() + "monet_cli_stderr_" + std::to_string(getpid()) + ".txt";
  const std::string cmd = std::string(MONET_BINARY) + " " + args + " 2>" + err_file;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  std::ifstream f(err_file);
  std::stringstream err;
  err << f.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err.str()};
}

int64_t parameters_of(const std::string& model) {
  const CliRun r = monet("show --model " + model + " --batch 1 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("parameters").get<int64_t>();
}

TEST(Cli, ShowReportsTorchvisionParameterCounts) {
  EXPECT_EQ(parameters_of("resnet50"), 25557032);
  EXPECT_EQ(parameters_of("vgg16"), 138357544);
  EXPECT_EQ(parameters_of("mobilenet_v2"), 3504872);
  EXPECT_EQ(parameters_of("googlenet"), 6624904);
}

TEST(Cli, ShowPrintsOperatorsAndShapes) {
  const CliRun r = monet("show --model resnet18 --batch 2 --image 64 --width 0.25");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("layer1.0.conv1"), std::string::npos);
  EXPECT_NE(r.out.find("[2, 16, 32, 32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters:"), std::string::npos);
  const CliRun j = monet("show --model unet --batch 1 --image 32x48 --width 0.125 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("image"), (std::vector<int64_t>{32, 48}));
  EXPECT_EQ(doc.at("operators").size(), doc.at("operator_count").get<size_t>());
}

TEST(Cli, ModelsListsTheZoo) {
  const CliRun r = monet("models --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& m : doc) names.push_back(m.at("name"));
  for (const char* want : {"resnet50", "vgg16", "googlenet", "mobilenet_v2", "unet", "unet3d"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(Cli, BaselineReportsPeakAndTime) {
  const CliRun r = monet(
      "baseline --model resnet18 --batch 2 --image 32 --width 0.125 "
      "--iters 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_GT(doc.at("peak_bytes").get<int64_t>(), doc.at("start_bytes").get<int64_t>());
  EXPECT_GT(doc.at("median_seconds").get<double>(), 0.0);
  EXPECT_EQ(doc.at("seconds").size(), 2u);
}

TEST(Cli, BaselineWritesMemoryTrace) {
  const std::string path =
      ::testing::TempDir() + "monet_trace_" + std::to_string(getpid()) + ".csv";
  std::remove(path.c_str());
  const CliRun r = monet(
      "baseline --model resnet18 --batch 2 --image 32 --width 0.125 "
      "--iters 1 --warmup 0 --threads 1 --trace-csv " +
      path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(path);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(f, line)) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines.front(), "label,current_bytes,peak_bytes");
  EXPECT_EQ(lines[1].rfind("start,", 0), 0u);
  EXPECT_EQ(lines[2].rfind("conv1,", 0), 0u);
  EXPECT_EQ(lines.back().rfind("backward,", 0), 0u);
  const CliRun bad = monet(
      "baseline --model resnet18 --batch 2 --image 32 --width 0.125 "
      "--iters 1 --trace-csv /nonexistent-dir/trace.csv");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cannot write '/nonexistent-dir/trace.csv'"), std::string::npos)
      << bad.err;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + std::to_string(getpid()) + "_" + name;
}

const char* kTinyModel = "--model resnet18 --batch 2 --image 32 --width 0.125";

TEST(Cli, PlanRunVerify) {
  for (const char* planner : {"storeall", "chen", "random"}) {
    const std::string plan = temp_path(std::string(planner) + ".json");
    const CliRun p =
        monet(std::string("plan ") + kTinyModel + " --planner " + planner + " -o " + plan);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("wrote " + plan), std::string::npos) << p.out;
    const CliRun r = monet("run --plan " + plan + " --iters 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_GT(doc.at("peak_bytes").get<int64_t>(), 0);
    EXPECT_GT(doc.at("memory_ratio").get<double>(), 0.0);
    EXPECT_EQ(doc.at("planner"), planner);
    const CliRun v = monet("verify --plan " + plan + " --json");
    EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
    EXPECT_LE(nlohmann::json::parse(v.out).at("max_rel_error").get<double>(), 1e-4);
  }
}

// Progress written to a file rather than a terminal (a CI log) is one line per event,
// without the carriage returns that redraw it in place on a terminal.
TEST(Cli, ProgressToAFileIsOneLinePerEvent) {
  const std::string costs = temp_path("progress_costs.json");
  const CliRun r = monet(std::string("profile ") + kTinyModel + " --no-cache -o " + costs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  std::istringstream lines(r.err);
  int progress_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("profiling: ", 0) != 0) continue;
    ++progress_lines;
    EXPECT_EQ(line.find("profiling: ", 1), std::string::npos) << line;
    EXPECT_NE(line.back(), ' ') << line;
  }
  EXPECT_GT(progress_lines, 10) << r.err;
}

// `show --plan`: the plan's model, with each operator's first forward, recomputations
// and backward implementations.
TEST(Cli, ShowWithAPlanListsWhatThePlanChoseForEachOperator) {
  const std::string plan = temp_path("show_chen.json");
  const CliRun p = monet(std::string("plan ") + kTinyModel + " --planner chen -o " + plan);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const CliRun j = monet("show --plan " + plan + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("plan"), plan);
  int recomputed = 0;
  for (const auto& op : doc.at("operators")) {
    EXPECT_FALSE(op.at("plan").at("forward").get<std::string>().empty()) << op.at("name");
    recomputed += op.at("plan").at("recomputed").get<int>();
  }
  EXPECT_GT(recomputed, 0) << "Chen's plan recomputes between its checkpoints";
  const CliRun t = monet("show --plan " + plan);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("recomputed"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("layer1.0.conv1"), std::string::npos) << t.out;
}

// Budgeted planners: chain checkpointing alone, and monet, whose --json reports the
// memory floor, where its plan comes from and when a plan within the budget was known.
TEST(Cli, ChainAndMonetPlansWithinTheBudgetReportTheFloor) {
  const std::string chain = temp_path("chain.json");
  const CliRun c =
      monet(std::string("plan ") + kTinyModel +
            " --planner chain --budget 1.0x --search-limit work -o " + chain + " --json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto planned = nlohmann::json::parse(c.out);
  EXPECT_EQ(planned.at("planner"), "chain");
  EXPECT_LE(planned.at("predicted_peak_bytes").get<int64_t>(),
            planned.at("budget_bytes").get<int64_t>());
  const CliRun r = monet("run --plan " + chain + " --iters 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("peak_bytes"), planned.at("predicted_peak_bytes"));

  const std::string plan = temp_path("monet_floor.json");
  const CliRun m =
      monet(std::string("plan ") + kTinyModel +
            " --budget 1.0x --time-limit 10 --search-limit work -o " + plan + " --json");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const auto solve = nlohmann::json::parse(m.out).at("solve");
  EXPECT_GT(solve.at("floor_bytes").get<int64_t>(), 0);
  EXPECT_LE(solve.at("floor_bytes").get<int64_t>(),
            nlohmann::json::parse(m.out).at("predicted_peak_bytes").get<int64_t>());
  EXPECT_GE(solve.at("first_fit_seconds").get<double>(), 0.0);
  EXPECT_TRUE(solve.at("plan_source") == "program" ||
              solve.at("plan_source") == "segment keeping" ||
              solve.at("plan_source") == "chain checkpointing" ||
              solve.at("plan_source") == "recomputation first")
      << solve.dump();
  // Below the floor: exit 2, and the message states the floor.
  const CliRun low = monet(std::string("plan ") + kTinyModel +
                           " --budget 64KiB --time-limit 5 --search-limit work -o " +
                           temp_path("below_floor.json"));
  EXPECT_EQ(low.exit_code, 2) << low.err;
  EXPECT_NE(low.err.find("the floor of"), std::string::npos) << low.err;
}

TEST(Cli, BadPlansGiveOneLineExit2AndWriteNothing) {
  const std::string plan = temp_path("good.json");
  ASSERT_EQ(monet(std::string("plan ") + kTinyModel + " -o " + plan).exit_code, 0);
  std::ifstream f(plan);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto write = [](const std::string& path, const std::string& content) {
    std::ofstream(path) << content;
    return path;
  };
  const std::string trace = temp_path("never.csv");
  auto expect_rejected = [&](const std::string& path, const std::string& message) {
    const CliRun r = monet("run --plan " + path + " --trace-csv " + trace);
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::ifstream(trace).good()) << "a trace was written for a rejected plan";
  };
  expect_rejected(write(temp_path("truncated.json"), text.substr(0, text.size() / 2)),
                  "not valid JSON");
  auto doc = nlohmann::json::parse(text);
  doc["model"]["batch"] = 3;
  expect_rejected(write(temp_path("other_shape.json"), doc.dump()), "another graph");
  doc = nlohmann::json::parse(text);
  doc["model"]["name"] = "resnet34";
  expect_rejected(write(temp_path("other_model.json"), doc.dump()), "another graph");
  doc = nlohmann::json::parse(text);
  doc["program"].insert(doc["program"].begin() + 1,
                        nlohmann::json{{"op", "free"}, {"node", "conv1"}, {"slot", "output"}});
  expect_rejected(write(temp_path("freed.json"), doc.dump()), "which instruction 1 freed");
  expect_rejected(temp_path("missing.json"), "cannot read plan");
  const CliRun bad_out = monet(std::string("plan ") + kTinyModel + " -o /nonexistent-dir/p.json");
  EXPECT_EQ(bad_out.exit_code, 2);
  EXPECT_NE(bad_out.err.find("cannot write"), std::string::npos) << bad_out.err;
}

void expect_usage_error(const std::string& args, const std::string& message) {
  const CliRun r = monet(args);
  EXPECT_EQ(r.exit_code, 2) << args;
  EXPECT_TRUE(r.out.empty()) << args;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line expected: " << r.err;
}

TEST(Cli, SweepWritesCsvJsonPlansAndRefusesToOverwrite) {
  const std::string dir = temp_path("sweep");
  std::filesystem::remove_all(dir);
  const std::string cache = temp_path("sweep_cache");
  const CliRun r = monet(std::string("sweep ") + kTinyModel +
                         " --planners gist,checkmate,checkmate-o,storeall --budgets 1.2x,10KiB"
                         " --time-limit 5 --search-limit work --iters 1 --warmup 0 --cache-dir " +
                         cache + " --json -o " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& rows = doc.at("rows");
  ASSERT_EQ(rows.size(), 6u);  // gist, checkmate x2, checkmate-o x2, storeall
  int ran = 0;
  for (const auto& row : rows) {
    if (row.at("status") != "ok") {
      EXPECT_EQ(row.at("budget"), "10KiB") << row.dump();  // no plan fits 10 KiB
      continue;
    }
    ++ran;
    EXPECT_GT(row.at("memory_ratio").get<double>(), 0.0);
    EXPECT_GT(row.at("measured_peak_bytes").get<int64_t>(), 0);
    if (row.at("planner") == "checkmate-o") {
      // The same "solve" object, written by the same code, as `plan --json`'s.
      const auto& solve = row.at("solve");
      EXPECT_GT(solve.at("columns").get<int>(), 0) << row.dump();
      EXPECT_GE(solve.at("first_incumbent_seconds").get<double>(), 0.0) << row.dump();
      EXPECT_GE(solve.at("planner_seconds").get<double>(), 0.0) << row.dump();
      EXPECT_GE(row.at("algorithm_switches").get<int>(), 0) << row.dump();
    }
  }
  EXPECT_EQ(ran, 4);
  std::ifstream csv(dir + "/sweep.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7) << text;
  EXPECT_TRUE(std::filesystem::exists(dir + "/plans/checkmate-o-1.2x.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/tradeoff.gp"));
  // A second sweep into the same directory stops before touching it.
  const auto before = std::filesystem::last_write_time(dir + "/sweep.csv");
  expect_usage_error(std::string("sweep ") + kTinyModel + " --planners gist -o " + dir,
                     "not empty");
  EXPECT_EQ(std::filesystem::last_write_time(dir + "/sweep.csv"), before);
  expect_usage_error(std::string("sweep ") + kTinyModel + " --planners gurobi -o " + dir + "_x",
                     "unknown planner 'gurobi'");
}

TEST(Cli, BadInputGivesOneLineAndExitCode2) {
  expect_usage_error("show --model resnet51", "unknown model 'resnet51'");
  expect_usage_error("show --model resnet50 --batch 0", "--batch: 0 is not positive");
  expect_usage_error("show --model resnet50 --batch -3", "--batch: -3 is not positive");
  expect_usage_error("baseline --model resnet50 --iters 0", "--iters: 0 is not positive");
  // Where a file cannot be written: refused before any work.
  expect_usage_error("plan --model resnet18 --budget 0.5x -o /nonexistent-folder/p.json",
                     "--output: cannot write '/nonexistent-folder/p.json': folder "
                     "'/nonexistent-folder' does not exist");
  expect_usage_error("plan --model resnet18 --budget 0.5x -o " + ::testing::TempDir(),
                     "is a folder, not a file");
  expect_usage_error("baseline --model resnet18 --trace-csv /nonexistent-folder/t.csv",
                     "--trace-csv: cannot write");
  expect_usage_error("show --model resnet50 --frobnicate", "frobnicate");
  expect_usage_error("show --model resnet50 --image 0", "image size");
  expect_usage_error("show --model resnet50 --image 12x", "image size");
  expect_usage_error("show --model unet --image 100", "multiple of 16");
  expect_usage_error("show --model vgg16 --image 8", "too small");
  expect_usage_error("show --model resnet50 --width 0", "--width");
  expect_usage_error("show", "--model");
  expect_usage_error("show --model resnet18 --plan p.json", "not both");
  expect_usage_error("", "subcommand");
  expect_usage_error("show --model resnet18 --loss mse", "--lossy apply to traced models");
  expect_usage_error("show --model resnet18 --lossy", "--lossy apply to traced models");
  expect_usage_error("show --model resnet18 --model-output out", "apply to traced models");
  expect_usage_error("show --model m.pt --input-shape 2,3,8,8 --loss hinge",
                     "unknown loss 'hinge' (known: cross_entropy, mse, bce_with_logits, sum, "
                     "sequence_cross_entropy)");
}

}  // namespace
