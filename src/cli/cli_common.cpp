#include "cli/cli_common.h"
#include "api/import_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <monet/monet.h>

#include "cost/profiler.h"
#include "graph/torchscript/torchscript_import.h"
#include "graph/zoo/model_zoo.h"
#include "plan/plan_validator.h"
#include "runtime/autograd_baseline.h"
#include "runtime/torchscript_weights.h"

namespace monet::cli {

void add_model_options(CLI::App* cmd, ModelOptions& o, int64_t default_batch) {
  o.batch = default_batch;
  cmd->add_option("--model,-m", o.model,
                  "zoo model name (see `monet models`), or a model traced with "
                  "torch.jit.trace(...).save(FILE.pt)")
      ->required();
  cmd->add_option("--batch,-b", o.batch, "samples per iteration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--image", o.image, "input size: N, HxW or DxHxW (default: model's own)");
  cmd->add_option("--width", o.width, "channel width multiplier")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--classes", o.classes, "output classes (default: model's own)")
      ->check(CLI::PositiveNumber);
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

ModelConfig model_config(const ModelOptions& o) {
  if (is_torchscript_path(o.model)) {
    if (o.input_shapes.empty())
      throw UsageError("--model " + o.model + " is a traced model: give its input with " +
                       "--input-shape B,C,H,W (e.g. --input-shape 8,3,224,224)");
    LossKind loss;
    try {
      loss = loss_kind_from_name(o.loss);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--loss: ") + e.what());
    }
    if (!o.image.empty() || o.width != 1.0 || o.classes > 0)
      throw UsageError(
          "--image, --width and --classes apply to zoo models; a traced model's "
          "size is its --input-shape and its classes are its output's");
    ModelConfig c;
    try {
      for (const std::string& text : o.input_shapes) c.inputs.push_back(parse_input_spec(text));
    } catch (const std::invalid_argument& e) {
      throw UsageError("--input-shape: " + std::string(e.what()));
    }
    c.import = import_options(o.output, loss);
    c.import.activations_and_norms = operator_path_from_name(o.operator_path);
    if (o.lossy) c.import.lossy = LossyOffer::kOffered;
    const std::vector<int64_t>& first = c.inputs[0].shape;
    c.batch = first[0];
    c.image.assign(first.begin() + std::min<size_t>(2, first.size()), first.end());
    return c;
  }
  if (!o.input_shapes.empty())
    throw UsageError("--input-shape applies to traced models (--model FILE.pt); zoo models " +
                     std::string("take --batch and --image"));
  if (!o.output.empty() || o.loss != "cross_entropy" || o.operator_path != "specialised" || o.lossy)
    throw UsageError(
        "--model-output, --loss, --operator-path and --lossy apply to traced models (--model "
        "FILE.pt); zoo model " +
        o.model + " has its own loss and no lossy implementation");
  try {
    const ModelInfo& info = zoo_model_info(o.model);
    ModelConfig c;
    c.batch = o.batch;
    c.width = o.width;
    c.classes = o.classes > 0 ? o.classes : info.default_classes;
    c.image = o.image.empty() ? info.default_image : parse_image_size(o.image, info.spatial_dims);
    return c;
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

ModelSpec model_spec(const ModelOptions& o) {
  const ModelConfig c = model_config(o);
  ModelSpec s;
  s.model = o.model;
  if (!is_torchscript_path(o.model)) {
    s.batch = c.batch;
    s.image = c.image;
    s.width = c.width;
    s.classes = c.classes;
    return s;
  }
  for (const InputSpec& in : c.inputs) s.inputs.push_back({in.shape, in.dtype});
  s.output = o.output;
  s.loss = loss_kind_from_name(o.loss);
  s.lossy = o.lossy ? LossyImplementations::kOffered : LossyImplementations::kExcluded;
  s.operator_path = o.operator_path == "generic" ? TracedOperatorPath::kGeneric
                                                 : TracedOperatorPath::kSpecialised;
  return s;
}

Graph build_graph(const ModelOptions& o) { return build_graph(o.model, model_config(o)); }

Graph build_graph(const std::string& model, const ModelConfig& c) {
  if (is_torchscript_path(model)) {
    if (!std::ifstream(model)) throw UsageError("cannot read traced model '" + model + "'");
    try {
      return import_torchscript(model, c.inputs, c.import);
    } catch (const ImportError& e) {
      throw UsageError(e.what());
    }
  }
  try {
    return build_zoo_model(model, c);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const GraphError& e) {
    throw UsageError("cannot build " + model + " at image size " + image_size_string(c.image) +
                     ": " + e.what());
  }
}

ModelState initial_state(const Graph& g, const std::string& model, uint64_t seed) {
  ModelState state = ModelState::initialize(g, seed);
  if (!is_torchscript_path(model)) return state;
  try {
    load_torchscript_weights(g, state, model);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  return state;
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
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

bool obtain_costs(const Graph& g, const CostOptions& o, bool allow_profiling, CostModel* costs) {
  if (!o.costs_file.empty()) {
    std::ifstream f(o.costs_file);
    if (!f) throw UsageError("cannot read cost file '" + o.costs_file + "'");
    try {
      *costs = cost_model_from_json(g, nlohmann::json::parse(f));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("cost file '" + o.costs_file + "' is not valid JSON: " + e.what());
    } catch (const CostError& e) {
      throw UsageError("cost file '" + o.costs_file + "': " + e.what());
    }
    return true;
  }
  const std::string dir = cost_cache_dir(o);
  if (!dir.empty() && read_cached_costs(g, dir, costs)) {
    std::cerr << "costs: from the cache (" << cost_cache_path(g, dir) << ")\n";
    return true;
  }
  if (!allow_profiling) return false;
  ProfileOptions po;
  po.repeats = o.repeats;
  po.progress = true;
  *costs = cached_profile_costs(g, ModelState::initialize(g, 0), make_batch(g, 1), po, dir);
  return true;
}

std::string cost_cache_dir(const CostOptions& o) {
  if (o.no_cache) return "";
  return o.cache_dir.empty() ? default_cost_cache_dir() : o.cache_dir;
}

// Peak bytes of one autograd iteration (the baseline a ratio budget refers to).
int64_t measure_baseline_peak(const Graph& g) {
  ModelState state = ModelState::initialize(g, 0);
  const Batch batch = make_batch(g, 1);
  AutogradBaseline baseline(g, state);
  std::cerr << "baseline: measuring one autograd iteration ..." << std::flush;
  const IterationResult r = baseline.run_iteration(batch);
  std::cerr << " peak " << format_bytes(r.peak_bytes) << "\n";
  return r.peak_bytes;
}

void add_solver_options(CLI::App* cmd, SolverCliOptions& o) {
  cmd->add_option("--time-limit", o.time_limit, "solver wall-clock limit per plan (seconds)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--gap", o.gap, "relative optimality gap at which the solver stops")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  o.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cmd->add_option("--threads", o.threads,
                  "CBC threads of a branch and cut over a whole program of up to 20,000 "
                  "columns (default: one per core; larger programs and the neighbourhood "
                  "search's sub-programs use one)")
      ->check(CLI::PositiveNumber)
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
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

SearchOptions search_options(const SolverCliOptions& o) {
  SearchOptions m;
  m.time_limit_seconds = o.time_limit;
  m.search_limit = search_limit_from_name(o.search_limit);
  m.max_nodes = o.max_nodes;
  m.relative_gap = o.gap;
  m.threads = o.threads;
  return m;
}

nlohmann::json solve_json(const MonetResult& r) {
  return {{"status", milp_status_name(r.solve.status)},
          {"columns", r.size.columns},
          {"rows", r.size.rows},
          {"nonzeros", r.size.nonzeros},
          {"solve_seconds", r.solve.seconds},
          {"first_incumbent_seconds", r.solve.first_incumbent_seconds},
          {"objective_seconds", r.objective_seconds},
          {"bound_seconds", r.solve.bound},
          {"lp_relaxation_seconds", r.solve.lp_seconds},
          {"gap", r.solve.gap},  // null when no bound is known (infinite)
          {"plan_source", plan_source_name(r.source)},
          {"warm_start", r.warm_start},
          {"floor_bytes", r.floor_bytes},
          {"first_fit_seconds", r.first_fit_seconds},
          {"neighbourhoods", r.solve.neighbourhoods},
          {"planner_seconds", r.seconds},
          {"solves", r.solves},
          {"program_budget_bytes", r.program_budget}};
}

int64_t parse_budget(const std::string& text, const std::function<int64_t()>& baseline_peak) {
  try {
    return monet::parse_budget(text, baseline_peak);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--") + e.what());
  }
}

}  // namespace monet::cli
