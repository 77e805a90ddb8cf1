// Shared pieces of the `monet` subcommands: model selection options, usage errors,
// byte formatting and the Command record main() dispatches on.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <monet/image_data.h>
#include <monet/measurement.h>
#include <monet/model_description.h>
#include <monet/monet.h>
#include <monet/operator_costs.h>
#include <monet/plan_file.h>
#include <monet/planning.h>

namespace monet::cli {

/// Bad input from the user: printed as one line, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An error another process has already printed (a data-parallel rank's copy of rank 0's
/// planning error): main() exits with `exit_code` and prints nothing.
struct ReportedElsewhere {
  int exit_code = 1;
};

/// CLI11 checks with messages that say what is wanted: a number above 0 ("--batch: 0 is not
/// positive"), a number of 0 or more, and a file the command can create or replace (its
/// folder exists and is writable, and it is not a folder), checked before any work.
extern const CLI::Validator kPositive;
extern const CLI::Validator kNonNegative;
extern const CLI::Validator kWritableFile;

/// One subcommand: its CLI11 app and what to run when it was chosen (returns exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// --model, --batch, --image, --width, --classes (zoo models); --input-shape (a
/// TorchScript file given as --model).
struct ModelOptions {
  std::string model;  // zoo model name, or path of a traced model (.pt / .pth)
  int64_t batch = 1;
  std::string image;  // "224", "416x608", "64x64x64"; empty = model default
  double width = 1.0;
  int64_t classes = 0;
  /// "8,3,224,224" or "8,16:int64", one per input of forward: imported models only
  std::vector<std::string> input_shapes;
  std::string output;  // imported models returning a tuple or dict: the output trained
  std::string loss = "cross_entropy";         // imported models: loss_kind_from_name's names
  std::string operator_path = "specialised";  // imported models: or "generic"
  bool lossy = false;  // --lossy: imported models may use lossy implementations
};

void add_model_options(CLI::App* cmd, ModelOptions& options, int64_t default_batch = 1);
/// The public API's ModelSpec for the options; bad names, sizes and combinations become
/// UsageError.
ModelSpec model_spec(const ModelOptions& options);
/// The model of the options (weights seeded `seed`; a traced model's own); bad input
/// becomes UsageError.
Model load_model(const ModelOptions& options, uint64_t seed = 0);

/// Calls `f` (an API call on the user's input), turning std::invalid_argument, the API's
/// error for bad input, into a UsageError (exit 2).
template <class F>
auto with_usage_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

void print_json(const nlohmann::json& j);

/// Writes `text` to `path` through a temporary file and a rename, so a failure never
/// leaves a partial file behind. Throws UsageError when the path cannot be written.
void write_file_atomically(const std::string& path, const std::string& text);

/// Memory trace as CSV: label,current_bytes,peak_bytes.
void write_trace_csv(const std::vector<MemoryTracePoint>& trace, const std::string& path);

/// Where a command gets operator costs: a cost file, or the on-disk cache (profiling
/// on a miss).
struct CostOptions {
  std::string costs_file;  // --costs: read these instead of the cache
  std::string cache_dir;   // --cache-dir (default: default_cache_dir())
  bool no_cache = false;   // --no-cache: profile afresh, write nothing
  int repeats = 3;         // --profile-repeats: timed calls per implementation
};
void add_cost_options(CLI::App* cmd, CostOptions& options);
/// The API's CostSource for the options.
CostSource cost_source(const CostOptions& options);
/// The costs of `model`: from --costs, else the cache, else profiled now (progress on
/// stderr) and cached. `allow_profiling` false returns none instead of profiling.
std::optional<OperatorCosts> obtain_costs(const Model& model, const CostOptions& options,
                                          bool allow_profiling);

/// Peak bytes of one autograd iteration of `model` (the baseline a ratio budget refers
/// to), measured now; progress on stderr.
int64_t measure_baseline_peak(const Model& model);
/// The solver's flags, shared by `plan` and `sweep` (one meaning per flag).
struct SolverCliOptions {
  double time_limit = 60;  // --time-limit: wall-clock seconds per plan
  double gap = 0.01;       // --gap: relative optimality gap at which the solver stops
  /// --threads: CBC threads for a branch and cut over a whole program, by default one per
  /// core (programs over 20,000 columns and the neighbourhood search's sub-programs use
  /// one whatever this is).
  int threads = 1;
  /// --search-limit: "wall-clock" (stages end at their share of --time-limit) or "work"
  /// (they end by work counts: the same plan on every machine for the same costs).
  std::string search_limit = "wall-clock";
  int max_nodes = SearchSettings().max_nodes;  // --max-nodes: CBC nodes per solve under "work"
};
/// Adds --time-limit, --gap, --threads, --search-limit and --max-nodes; sets
/// `options.threads` to its default.
void add_solver_options(CLI::App* cmd, SolverCliOptions& options);
/// The API's SearchSettings for `options` (the search policy's strategy, no progress).
SearchSettings search_settings(const SolverCliOptions& options);
/// The figures of a solved 0-1 program, as `plan --json` ("solve") and each row of
/// `sweep`'s sweep.json ("solve") write them: one writer, so each key has one meaning.
nlohmann::json solve_json(const SolveReport& report);
/// "1.5GiB", "800MiB", "123456789", "0.4x" (of `baseline_peak()`) -> bytes; UsageError
/// for anything else.
int64_t parse_budget(const std::string& text, const std::function<int64_t()>& baseline_peak);

void add_sweep_command(CLI::App& root, std::vector<Command>& commands);
void add_models_command(CLI::App& root, std::vector<Command>& commands);
void add_plan_command(CLI::App& root, std::vector<Command>& commands);
void add_run_commands(CLI::App& root, std::vector<Command>& commands);
void add_show_command(CLI::App& root, std::vector<Command>& commands);
void add_baseline_command(CLI::App& root, std::vector<Command>& commands);
void add_profile_command(CLI::App& root, std::vector<Command>& commands);
void add_train_command(CLI::App& root, std::vector<Command>& commands);

}  // namespace monet::cli
