// Files a user hands to monet, mutated at random (deterministically, from fixed seeds):
// plan files, cost files and training checkpoints. Each mutated file is either accepted
// (and then what it describes runs: a plan replays in the simulator and the executor with
// the predicted peak) or refused with one line that says what is wrong; nothing crashes.
// The sanitizer job (scripts/sanitize.sh) runs these under ASan and UBSan.
#include <gtest/gtest.h>
#include <monet/monet.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cost/simulator.h"
#include "graph/zoo/model_zoo.h"
#include "model_specs.h"
#include "plan/plan_validator.h"
#include "planner/baselines/baseline_plans.h"
#include "quick_profile.h"
#include "training_equivalence.h"

namespace monet {
namespace {

constexpr int kMutationsPerFileKind = 300;

// Tallies the outcomes of one fuzzer; a refusal must be one non-empty line.
struct Outcomes {
  int accepted = 0, refused = 0;
  void refuse(const std::string& what, const std::string& file) {
    ++refused;
    EXPECT_FALSE(what.empty()) << file;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
  }
};

// Random edits of a JSON document: values replaced by values of other types, entries
// removed or duplicated, array elements swapped.
class JsonMutator {
 public:
  explicit JsonMutator(uint64_t seed) : rng_(seed) {}

  int below(size_t n) { return static_cast<int>(rng_() % std::max<size_t>(n, 1)); }

  nlohmann::json random_value(const std::vector<nlohmann::json>& pool) {
    switch (below(8)) {
      case 0:
        return nullptr;
      case 1:
        return -1;
      case 2:
        return 1e300;
      case 3:
        return "";
      case 4:
        return nlohmann::json::array();
      case 5:
        return nlohmann::json::object();
      case 6:
        return static_cast<int64_t>(rng_() % 1000000) - 500000;
      default:
        return pool.empty() ? nlohmann::json("x") : pool[below(pool.size())];
    }
  }

  // One edit somewhere in `j` (descends into a random child first, most of the time).
  void mutate(nlohmann::json& j, const std::vector<nlohmann::json>& pool) {
    if ((j.is_object() || j.is_array()) && !j.empty() && below(4) != 0) {
      auto it = j.begin();
      std::advance(it, below(j.size()));
      mutate(*it, pool);
      return;
    }
    if (j.is_array() && !j.empty()) {
      const int a = below(j.size()), b = below(j.size());
      switch (below(3)) {
        case 0:
          j.erase(j.begin() + a);
          return;
        case 1:
          j.insert(j.begin() + a, j[b]);
          return;
        default:
          std::swap(j[a], j[b]);
          return;
      }
    }
    if (j.is_object() && !j.empty() && below(2) == 0) {
      auto it = j.begin();
      std::advance(it, below(j.size()));
      j.erase(it.key());
      return;
    }
    j = random_value(pool);
  }

  // Byte-level damage to a file's text: truncated, a byte changed, or garbage inserted.
  std::string damage(std::string text) {
    if (text.empty()) return text;
    const size_t at = rng_() % text.size();
    switch (below(3)) {
      case 0:
        return text.substr(0, at);
      case 1:
        text[at] = static_cast<char>(rng_() % 256);
        return text;
      default:
        return text.insert(at, std::string(1 + below(16), static_cast<char>(rng_() % 256)));
    }
  }

 private:
  std::mt19937_64 rng_;
};

// Every string anywhere in `j`: node names, implementation names, parts and slots, to
// swap for one another.
void collect_strings(const nlohmann::json& j, std::vector<nlohmann::json>* out) {
  if (j.is_string()) out->push_back(j);
  if (j.is_structured())
    for (const auto& e : j) collect_strings(e, out);
}

Graph tiny_graph(const std::string& name) {
  const auto tiny = testing::tiny_models_named({name});
  return build_zoo_model(tiny.at(0).name, tiny.at(0).config);
}

TEST(Fuzz, MutatedPlanFilesAreRunOrRefusedInOneLine) {
  MemoryTracker::install();
  Outcomes o;
  int executed = 0;
  for (const char* model : {"resnet18", "mobilenet_v2"}) {
    const Graph g = tiny_graph(model);
    const ModelState state = ModelState::initialize(g, 0);
    const Batch batch = make_batch(g, 1);
    const CostModel costs = testing::quick_profile(g, state, batch);
    const nlohmann::json original = plan_to_json(g, random_plan(g, 3));
    std::vector<nlohmann::json> pool;
    collect_strings(original, &pool);
    JsonMutator mutate(model[0]);
    for (int i = 0; i < kMutationsPerFileKind / 2; ++i) {
      nlohmann::json j = original;
      std::string text;
      if (i % 3 == 2) {
        text = mutate.damage(original.dump(1));
      } else {
        for (int edits = 1 + mutate.below(3); edits > 0; --edits) mutate.mutate(j, pool);
        text = j.dump(1);
      }
      const std::string where = std::string(model) + " mutation " + std::to_string(i);
      try {
        const Plan plan = plan_from_json(g, nlohmann::json::parse(text));
        const SimulationResult sim = simulate(g, plan, costs);
        ++o.accepted;
        if (o.accepted % 4 == 0) {  // run a share of the accepted plans for real
          ModelState s = state.clone();
          Executor executor(g, s, plan);
          const ExecutionResult run = executor.run(batch);
          EXPECT_EQ(run.peak_bytes - run.start_bytes, sim.peak_above_start()) << where;
          ++executed;
        }
      } catch (const std::exception& e) {
        o.refuse(e.what(), where);
      }
    }
  }
  std::cout << "plan files: " << o.accepted << " accepted (" << executed << " executed), "
            << o.refused << " refused\n";
  EXPECT_EQ(o.accepted + o.refused, kMutationsPerFileKind);
  EXPECT_GT(o.refused, 0);
}

TEST(Fuzz, MutatedCostFilesAreUsedOrRefusedInOneLine) {
  MemoryTracker::install();
  const Graph g = tiny_graph("mobilenet_v2");
  const CostModel costs = testing::quick_profile(g, ModelState::initialize(g, 0), make_batch(g, 1));
  const nlohmann::json original = cost_model_to_json(g, costs);
  std::vector<nlohmann::json> pool;
  collect_strings(original, &pool);
  JsonMutator mutate(11);
  Outcomes o;
  const Plan plan = store_all_plan(g);
  for (int i = 0; i < kMutationsPerFileKind; ++i) {
    nlohmann::json j = original;
    std::string text;
    if (i % 3 == 2) {
      text = mutate.damage(original.dump());
    } else {
      for (int edits = 1 + mutate.below(3); edits > 0; --edits) mutate.mutate(j, pool);
      text = j.dump();
    }
    try {
      const CostModel read = cost_model_from_json(g, nlohmann::json::parse(text));
      const SimulationResult sim = simulate(g, plan, read);
      EXPECT_GE(sim.seconds, 0);
      ++o.accepted;
    } catch (const std::exception& e) {
      o.refuse(e.what(), "cost mutation " + std::to_string(i));
    }
  }
  std::cout << "cost files: " << o.accepted << " accepted, " << o.refused << " refused\n";
  EXPECT_GT(o.refused, 0);
}

TEST(Fuzz, DamagedCheckpointsAreLoadedOrRefusedLeavingTheModelUnchanged) {
  const std::string dir = ::testing::TempDir() + "/monet_fuzz_checkpoints";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const ModelSpec spec = testing::zoo_spec("resnet18", 2, {16, 16}, 0.125, 4);
  Model model = Model::load(spec, 0);
  auto optimizer = testing::make_test_optimizer(OptimizerKind::kAdam, model.parameters());
  save_checkpoint(dir + "/c.pt", model, *optimizer, 5);
  std::ifstream in(dir + "/c.pt", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Model target = Model::load(spec, 1);
  auto target_optimizer = testing::make_test_optimizer(OptimizerKind::kAdam, target.parameters());
  JsonMutator mutate(17);
  Outcomes o;
  for (int i = 0; i < kMutationsPerFileKind; ++i) {
    const std::string path = dir + "/m" + std::to_string(i) + ".pt";
    std::ofstream(path, std::ios::binary) << mutate.damage(bytes);
    const at::Tensor before = target.parameters()[0].detach().clone();
    try {
      EXPECT_EQ(load_checkpoint(path, target, *target_optimizer), 5u);
      ++o.accepted;
    } catch (const std::invalid_argument& e) {
      o.refuse(e.what(), path);
      EXPECT_TRUE(target.parameters()[0].equal(before)) << "a refused checkpoint changed the model";
    }
    std::filesystem::remove(path);
  }
  std::cout << "checkpoints: " << o.accepted << " loaded, " << o.refused << " refused\n";
  EXPECT_GT(o.refused, 0);
}

}  // namespace
}  // namespace monet
