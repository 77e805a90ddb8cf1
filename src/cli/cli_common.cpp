#include "cli/cli_common.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

namespace monet::cli {

namespace {

// A number a check can read: the option's own parse reports text that is none.
std::optional<double> number_in(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    return used == text.size() ? std::optional<double>(v) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

const CLI::Validator kPositive(
    [](std::string& text) {
      const auto v = number_in(text);
      return v && *v <= 0 ? text + " is not positive" : std::string();
    },
    "POSITIVE", "positive");

const CLI::Validator kNonNegative(
    [](std::string& text) {
      const auto v = number_in(text);
      return v && *v < 0 ? text + " is negative" : std::string();
    },
    "NONNEGATIVE", "non-negative");

const CLI::Validator kWritableFile(
    [](std::string& path) {
      namespace fs = std::filesystem;
      std::error_code ec;
      if (fs::is_directory(path, ec)) return "'" + path + "' is a folder, not a file";
      const fs::path folder =
          fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
      if (!fs::is_directory(folder, ec))
        return "cannot write '" + path + "': folder '" + folder.string() + "' does not exist";
      if (::access(folder.c_str(), W_OK) != 0)
        return "cannot write '" + path + "': folder '" + folder.string() + "' is not writable";
      return std::string();
    },
    "FILE", "writable file");

void add_model_options(CLI::App* cmd, ModelOptions& o, int64_t default_batch) {
  o.batch = default_batch;
  cmd->add_option("--model,-m", o.model,
                  "zoo model name (see `monet models`), or a model traced with "
                  "torch.jit.trace(...).save(FILE.pt)")
      ->required();
  cmd->add_option("--batch,-b", o.batch, "samples per iteration")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--image", o.image, "input size: N, HxW or DxHxW (default: model's own)");
  cmd->add_option("--width", o.width, "channel width multiplier")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--classes", o.classes, "output classes (default: model's own)")
      ->check(kPositive);
  cmd->add_option("--input-shape", o.input_shapes,
                  "input shape of a traced model, batch first: B,C,H,W (e.g. 8,3,224,224), "
                  "optionally with its element type (8,16:int64; float32, float64, int64, "
                  "int32, bool); once per input of a model with several, in forward's order")
      ->take_last()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--model-output", o.output,
                  "traced model returning a tuple or dict: the output to train (index or key; "
                  "default: the first)");
  cmd->add_option("--loss", o.loss,
                  "traced model's loss: cross_entropy (logits [N, C] or per position [N, C, "
                  "...]), sequence_cross_entropy (a language model's logits [N, T, V] against "
                  "tokens [N, T]), mse, bce_with_logits or sum")
      ->capture_default_str();
  cmd->add_option("--operator-path", o.operator_path,
                  "traced model's activations, batch norms and attention: specialised (their "
                  "own implementations; attention patterns become attention nodes) or generic "
                  "(generic ATen nodes, to measure what the specialised ones save; batch norm "
                  "then keeps no running statistics)")
      ->check(CLI::IsMember({"specialised", "generic"}))
      ->capture_default_str();
  cmd->add_flag("--lossy", o.lossy,
                "traced model: also offer LOSSY implementations, whose gradients differ "
                "slightly from autograd's (GELU's backward from a 4-bit code of its input)");
}

namespace {

// A traced model's ModelSpec (--input-shape, --model-output, --loss, --operator-path,
// --lossy).
ModelSpec traced_model_spec(const ModelOptions& o) {
  if (o.input_shapes.empty())
    throw UsageError("--model " + o.model + " is a traced model: give its input with " +
                     "--input-shape B,C,H,W (e.g. --input-shape 8,3,224,224)");
  if (!o.image.empty() || o.width != 1.0 || o.classes > 0)
    throw UsageError(
        "--image, --width and --classes apply to zoo models; a traced model's "
        "size is its --input-shape and its classes are its output's");
  ModelSpec s;
  s.model = o.model;
  try {
    s.loss = loss_kind_from_name(o.loss);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--loss: ") + e.what());
  }
  try {
    for (const std::string& text : o.input_shapes)
      s.inputs.push_back(model_input_from_string(text));
  } catch (const std::invalid_argument& e) {
    throw UsageError("--input-shape: " + std::string(e.what()));
  }
  s.output = o.output;
  s.operator_path = o.operator_path == "generic" ? TracedOperatorPath::kGeneric
                                                 : TracedOperatorPath::kSpecialised;
  s.lossy = o.lossy ? LossyImplementations::kOffered : LossyImplementations::kExcluded;
  return s;
}

}  // namespace

ModelSpec model_spec(const ModelOptions& o) {
  if (is_traced_model_file(o.model)) return traced_model_spec(o);
  if (!o.input_shapes.empty())
    throw UsageError("--input-shape applies to traced models (--model FILE.pt); zoo models " +
                     std::string("take --batch and --image"));
  if (!o.output.empty() || o.loss != "cross_entropy" || o.operator_path != "specialised" || o.lossy)
    throw UsageError(
        "--model-output, --loss, --operator-path and --lossy apply to traced models (--model "
        "FILE.pt); zoo model " +
        o.model + " has its own loss and no lossy implementation");
  const std::vector<ZooModel> zoo = model_zoo();
  const auto info =
      std::find_if(zoo.begin(), zoo.end(), [&](const ZooModel& m) { return m.name == o.model; });
  ModelSpec s;
  s.model = o.model;
  s.batch = o.batch;
  s.width = o.width;
  s.classes = o.classes;
  if (info != zoo.end() && !o.image.empty())
    s.image = with_usage_errors([&] { return parse_image_size(o.image, info->spatial_dims); });
  return s;
}

Model load_model(const ModelOptions& o, uint64_t seed) {
  const ModelSpec spec = model_spec(o);
  return with_usage_errors([&] { return Model::load(spec, seed); });
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << std::endl; }

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw UsageError("cannot write '" + path + "'");
    f << text;
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      throw UsageError("cannot write '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot write '" + path + "'");
  }
}

void write_trace_csv(const std::vector<MemoryTracePoint>& trace, const std::string& path) {
  std::ostringstream s;
  s << "label,current_bytes,peak_bytes\n";
  for (const auto& m : trace) s << m.label << ',' << m.current_bytes << ',' << m.peak_bytes << '\n';
  write_file_atomically(path, s.str());
}

}  // namespace monet::cli

namespace monet::cli {

void add_cost_options(CLI::App* cmd, CostOptions& o) {
  cmd->add_option("--costs", o.costs_file,
                  "operator costs (monet profile -o ...) instead of the cache");
  cmd->add_option("--cache-dir", o.cache_dir, "cost cache directory (default ~/.cache/monet)");
  cmd->add_flag("--no-cache", o.no_cache, "profile afresh and do not cache");
  cmd->add_option("--profile-repeats", o.repeats, "timed calls per implementation when profiling")
      ->check(kPositive)
      ->capture_default_str();
}

CostSource cost_source(const CostOptions& o) {
  CostSource s;
  s.costs_file = o.costs_file;
  s.cache_dir = o.cache_dir;
  s.use_cache = !o.no_cache;
  s.repeats = o.repeats;
  return s;
}

std::optional<OperatorCosts> obtain_costs(const Model& model, const CostOptions& o,
                                          bool allow_profiling) {
  const CostSource source = cost_source(o);
  return with_usage_errors([&]() -> std::optional<OperatorCosts> {
    if (!allow_profiling) return OperatorCosts::find(model, source);
    return OperatorCosts::obtain(model, source);
  });
}

// Peak bytes of one autograd iteration (the baseline a ratio budget refers to).
int64_t measure_baseline_peak(const Model& model) {
  std::cerr << "baseline: measuring one autograd iteration ..." << std::flush;
  MeasurementOptions mo;
  mo.warmup = 0;
  mo.iters = 1;
  const int64_t peak = measure_autograd_iterations(model, mo).peak_bytes;
  std::cerr << " peak " << format_bytes(peak, false) << "\n";
  return peak;
}

void add_solver_options(CLI::App* cmd, SolverCliOptions& o) {
  cmd->add_option("--time-limit", o.time_limit, "solver wall-clock limit per plan (seconds)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--gap", o.gap, "relative optimality gap at which the solver stops")
      ->check(kNonNegative)
      ->capture_default_str();
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cmd->add_option("--threads", o.threads,
                  "CBC threads of a branch and cut over a whole program of up to 20,000 "
                  "columns (default: one per core; larger programs and the neighbourhood "
                  "search's sub-programs use one)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--search-limit", o.search_limit,
                  "what ends the searches: wall-clock (their share of --time-limit) or work "
                  "(CBC nodes, the windows' sequence, heuristics to their end: the same plan "
                  "on every machine for the same costs; --time-limit then only chooses "
                  "strategies)")
      ->check(CLI::IsMember({"wall-clock", "work"}))
      ->capture_default_str();
  cmd->add_option("--max-nodes", o.max_nodes,
                  "CBC's branch-and-cut nodes per solve under --search-limit work")
      ->check(kPositive)
      ->capture_default_str();
}

SearchSettings search_settings(const SolverCliOptions& o) {
  SearchSettings m;
  m.time_limit_seconds = o.time_limit;
  m.limit = planning_limit_from_name(o.search_limit);
  m.max_nodes = o.max_nodes;
  m.relative_gap = o.gap;
  m.threads = o.threads;
  m.progress = false;
  return m;
}

nlohmann::json solve_json(const SolveReport& r) {
  return {{"status", r.status},
          {"columns", r.columns},
          {"rows", r.rows},
          {"nonzeros", r.nonzeros},
          {"solve_seconds", r.solve_seconds},
          {"first_incumbent_seconds", r.first_incumbent_seconds.value_or(-1)},  // -1: none
          {"objective_seconds", r.objective_seconds},
          {"bound_seconds", r.bound_seconds},
          {"lp_relaxation_seconds", r.lp_relaxation_seconds},
          {"gap", r.gap ? nlohmann::json(*r.gap) : nlohmann::json()},  // null: no bound known
          {"plan_source", r.plan_source},
          {"warm_start", r.warm_start},
          {"floor_bytes", r.floor_bytes},
          {"first_fit_seconds", r.first_fit_seconds.value_or(-1)},
          {"neighbourhoods", r.neighbourhoods},
          {"planner_seconds", r.planner_seconds},
          {"solves", r.solves},
          {"program_budget_bytes", r.program_budget_bytes}};
}

int64_t parse_budget(const std::string& text, const std::function<int64_t()>& baseline_peak) {
  try {
    return monet::parse_budget(text, baseline_peak);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--") + e.what());
  }
}

}  // namespace monet::cli
