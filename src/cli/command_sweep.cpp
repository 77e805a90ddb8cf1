// `monet sweep`: the memory / overhead trade-off of several planners on one model and
// machine. Profiles once, plans every budget with every planner, then runs each plan
// interleaved with the autograd baseline, and writes DIR/sweep.csv, DIR/sweep.json, the
// plans under DIR/plans/, and DIR/tradeoff.gp (plotted to DIR/tradeoff.png when gnuplot
// is installed). The CSV and JSON are written once every plan is made and rewritten after
// every run, so an interrupted sweep keeps what it planned and measured.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"

namespace monet::cli {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  ModelOptions model;
  CostOptions costs;
  std::string planners = "monet,monet-noop,checkmate,checkmate-o,chen,gist,storeall";
  std::string budgets = "0.4x,0.5x,0.6x,0.7x,0.8x,0.9x";
  SolverCliOptions solver;
  int warmup = 1;
  int iters = 2;
  bool post_optimise = false;
  std::string output;
  bool json = false;
  ModelSpec spec;  // the model's, once built
  ModelDescription description;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Row {
  std::string planner, budget;  // budget as given ("0.5x"), empty for budget-free planners
  int64_t budget_bytes = -1;
  std::string
      status;  // "ok", "planned" (not yet run), "no plan fits", "no plan in time", "error: ..."
  int64_t predicted_peak = -1, checkmate_model_peak = -1;
  double predicted_seconds = -1;
  nlohmann::json solve;           // solve_json of a program-based planner, else null
  double make_plan_seconds = -1;  // make_plan_file's wall time (post-optimisation included)
  double seconds_to_5pct = -1;    // solver: first incumbent within 5% of the final bound
  int algorithm_switches = -1;    // convolutions switched by post-optimisation
  AutogradComparison measured;
  bool ran = false;
};

std::string csv_number(double v, bool valid) {
  if (!valid) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A number of the row's solve_json; -1 when there is none (no program, no bound).
double solve_figure(const Row& r, const char* key) {
  if (r.solve.is_null()) return -1;
  const auto& v = r.solve.at(key);
  return v.is_number() && std::isfinite(v.get<double>()) ? v.get<double>() : -1;
}

std::string to_csv(const std::vector<Row>& rows) {
  std::ostringstream o;
  o << "planner,budget,budget_bytes,status,predicted_peak_bytes,checkmate_model_peak_bytes,"
       "measured_peak_bytes,baseline_peak_bytes,memory_ratio,overhead,median_seconds,"
       "baseline_median_seconds,predicted_seconds,make_plan_seconds,gap,first_incumbent_seconds,"
       "seconds_to_5pct,columns,rows,algorithm_switches\n";
  for (const auto& r : rows) {
    const auto& m = r.measured;
    o << r.planner << ',' << r.budget << ','
      << (r.budget_bytes > 0 ? std::to_string(r.budget_bytes) : "") << ",\"" << r.status << "\","
      << (r.predicted_peak >= 0 ? std::to_string(r.predicted_peak) : "") << ','
      << (r.checkmate_model_peak >= 0 ? std::to_string(r.checkmate_model_peak) : "") << ','
      << (r.ran ? std::to_string(m.peak_bytes) : "") << ','
      << (r.ran ? std::to_string(m.autograd_peak_bytes) : "") << ','
      << csv_number(m.memory_ratio, r.ran) << ',' << csv_number(m.overhead, r.ran) << ','
      << csv_number(m.seconds, r.ran) << ',' << csv_number(m.autograd_seconds, r.ran) << ','
      << csv_number(r.predicted_seconds, r.predicted_seconds >= 0) << ','
      << csv_number(r.make_plan_seconds, r.make_plan_seconds >= 0) << ',';
    for (double v : {solve_figure(r, "gap"), solve_figure(r, "first_incumbent_seconds"),
                     r.seconds_to_5pct, solve_figure(r, "columns"), solve_figure(r, "rows")})
      o << csv_number(v, v >= 0) << ',';
    o << csv_number(r.algorithm_switches, r.algorithm_switches >= 0) << '\n';
  }
  return o.str();
}

nlohmann::json to_json(const SweepOptions& o, const std::vector<Row>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = {{"planner", r.planner}, {"budget", r.budget}, {"status", r.status}};
    if (r.budget_bytes > 0) j["budget_bytes"] = r.budget_bytes;
    if (r.predicted_peak >= 0) j["predicted_peak_bytes"] = r.predicted_peak;
    if (r.predicted_seconds >= 0) j["predicted_seconds"] = r.predicted_seconds;
    if (r.checkmate_model_peak >= 0) j["checkmate_model_peak_bytes"] = r.checkmate_model_peak;
    if (!r.solve.is_null()) {
      j["solve"] = r.solve;
      j["seconds_to_5pct"] = r.seconds_to_5pct;
    }
    if (r.algorithm_switches >= 0) j["algorithm_switches"] = r.algorithm_switches;
    if (r.ran) {
      const auto& m = r.measured;
      j["measured_peak_bytes"] = m.peak_bytes;
      j["baseline_peak_bytes"] = m.autograd_peak_bytes;
      j["memory_ratio"] = m.memory_ratio;
      j["overhead"] = m.overhead;
      j["seconds"] = m.iteration_seconds;
      j["baseline_seconds"] = m.autograd_iteration_seconds;
    }
    list.push_back(j);
  }
  const ModelDescription& c = o.description;
  nlohmann::json config = {
      {"batch", c.batch}, {"image", c.image}, {"width", c.width}, {"classes", c.classes}};
  if (!o.spec.inputs.empty()) config["input_shape"] = o.spec.inputs[0].shape;
  if (o.model.input_shapes.size() > 1)
    for (const std::string& in : o.model.input_shapes) config["inputs"].push_back(in);
  return {{"model", o.model.model},
          {"config", config},
          {"iters", o.iters},
          {"warmup", o.warmup},
          {"post_optimise", o.post_optimise},
          {"rows", list}};
}

// A gnuplot script: measured memory ratio against overhead, one line per planner.
std::string plot_script(const std::vector<Row>& rows, const std::string& title) {
  std::vector<std::string> planners;
  for (const auto& r : rows)
    if (r.ran && std::find(planners.begin(), planners.end(), r.planner) == planners.end())
      planners.push_back(r.planner);
  std::ostringstream s;
  s << "# monet sweep: memory ratio against overhead (measured, interleaved with autograd)\n"
    << "set terminal pngcairo size 900,600\nset output 'tradeoff.png'\n"
    << "set datafile separator ','\nset key outside right\nset grid\n"
    << "set title '" << title << "'\n"
    << "set xlabel 'overhead over autograd (%)'\nset ylabel 'peak memory / autograd peak'\n"
    << "plot";
  for (size_t i = 0; i < planners.size(); ++i)
    s << (i ? ", \\\n    " : " ") << "'sweep.csv' using (strcol(1) eq '" << planners[i]
      << "' ? 100*$10 : 1/0):9 with linespoints title '" << planners[i] << "'";
  if (planners.empty()) s << " 0 notitle";
  s << "\n";
  return s.str();
}

// The solver's figures: time, gap, program size, and how fast it got close.
void record_solve(const PlanFileOutcome& out, Row* row) {
  row->solve = solve_json(*out.solve);
  row->make_plan_seconds = out.seconds;
  row->algorithm_switches = out.algorithm_switches;
  if (out.solve->seconds_to_within_5_percent)
    row->seconds_to_5pct = *out.solve->seconds_to_within_5_percent;
}

std::string plan_file_name(const Row& r) {
  std::string name = r.planner + (r.budget.empty() ? "" : "-" + r.budget);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return name + ".json";
}

// Refuses planner lists and budgets that cannot run, and an output directory that is
// not empty, before any work (exit 2).
void check_sweep_request(const SweepOptions& o, const std::vector<std::string>& planners,
                         const std::vector<std::string>& budgets) {
  if (planners.empty()) throw UsageError("--planners lists no planner");
  for (const auto& p : planners) {
    PlannerInfo info;
    try {
      info = planner_info(p);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--planners: ") + e.what());
    }
    if (info.requires_budget && budgets.empty())
      throw UsageError("--planners " + p + " needs --budgets");
  }
  if (fs::exists(o.output) && !(fs::is_directory(o.output) && fs::is_empty(o.output)))
    throw UsageError("output directory '" + o.output +
                     "' exists and is not empty; choose another -o (nothing is overwritten)");
}

// A failure as the row's status (commas and quotes made safe for the CSV).
void record_error(const std::exception& e, Row* row) {
  row->status = std::string("error: ") + e.what();
  std::replace(row->status.begin(), row->status.end(), ',', ';');
  std::replace(row->status.begin(), row->status.end(), '"', '\'');
}

// Plans `row`'s planner at its budget and writes the plan under plans/; a failure is the
// row's status.
std::optional<PlanFile> plan_cell(const SweepOptions& o, const Model& model,
                                  const OperatorCosts& costs, Row* row) {
  PlanFileRequest request;
  request.planner = row->planner;
  if (row->budget_bytes > 0) request.budget_bytes = row->budget_bytes;
  request.search = search_settings(o.solver);
  request.post_optimise_convolutions = o.post_optimise;
  try {
    PlanFileOutcome out = make_plan_file(model, &costs, request);
    if (out.solve) record_solve(out, row);
    row->checkmate_model_peak = out.checkmate_model_peak_bytes.value_or(-1);
    const bool fits = out.plan && (!request.budget_bytes ||
                                   costs.predict(*out.plan).peak_bytes <= *request.budget_bytes);
    if (!fits) {
      row->status = out.out_of_time ? "no plan in time" : "no plan fits";
      return std::nullopt;
    }
    const Prediction sim = costs.predict(*out.plan);
    row->predicted_peak = sim.peak_bytes;
    row->predicted_seconds = sim.seconds;
    out.plan->save((fs::path(o.output) / "plans" / plan_file_name(*row)).string());
    row->status = "planned";
    return std::move(out.plan);
  } catch (const std::exception& e) {
    record_error(e, row);
    return std::nullopt;
  }
}

// Runs `plan` against autograd, interleaved; a failure is the row's status.
void measure_cell(const SweepOptions& o, const PlanFile& plan, Row* row) {
  MeasurementOptions mo;
  mo.warmup = o.warmup;
  mo.iters = o.iters;
  mo.progress = [](const std::string& line) { std::cerr << "  " << line << "\n"; };
  try {
    row->measured = compare_with_autograd(plan, mo);
    row->ran = true;
    row->status = "ok";
  } catch (const std::exception& e) {
    record_error(e, row);
  }
}

// Writes tradeoff.gp and, where gnuplot is installed, runs it. Returns whether it plotted.
bool plot(const SweepOptions& o, const std::vector<Row>& rows) {
  const std::string title = o.model.model + ", batch " + std::to_string(o.description.batch);
  write_file_atomically((fs::path(o.output) / "tradeoff.gp").string(), plot_script(rows, title));
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::cerr << "sweep: gnuplot is not installed; no plot (script: " << o.output
              << "/tradeoff.gp)\n";
    return false;
  }
  const std::string cmd = "cd '" + o.output + "' && gnuplot tradeoff.gp";
  const bool plotted = std::system(cmd.c_str()) == 0;
  if (!plotted)
    std::cerr << "sweep: gnuplot failed; the script is " << o.output << "/tradeoff.gp\n";
  return plotted;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-14s %-8s %-16s %12s %12s %8s %9s %8s %7s\n", "planner", "budget", "status",
              "predicted", "measured", "ratio", "overhead", "solve s", "gap");
  for (const auto& r : rows) {
    std::printf("%-14s %-8s %-16.16s %12s %12s ", r.planner.c_str(),
                r.budget.empty() ? "-" : r.budget.c_str(), r.status.c_str(),
                r.predicted_peak >= 0 ? format_bytes(r.predicted_peak, false).c_str() : "-",
                r.ran ? format_bytes(r.measured.peak_bytes, false).c_str() : "-");
    if (r.ran)
      std::printf("%8.3f %+8.1f%% ", r.measured.memory_ratio, 100 * r.measured.overhead);
    else
      std::printf("%8s %9s ", "-", "-");
    const double gap = solve_figure(r, "gap");
    if (r.make_plan_seconds >= 0 && gap >= 0)
      std::printf("%8.1f %6.2f%%\n", r.make_plan_seconds, 100 * gap);
    else if (r.make_plan_seconds >= 0)
      std::printf("%8.1f %7s\n", r.make_plan_seconds, "-");
    else
      std::printf("%8s %7s\n", "-", "-");
  }
}

// One row per planner and budget into `rows`, planned (plans/) but not yet run, and each
// row's plan (none where planning failed). `o` gets the model's spec and description.
std::vector<std::optional<PlanFile>> plan_cells(SweepOptions& o,
                                                const std::vector<std::string>& planners,
                                                const std::vector<std::string>& budgets,
                                                std::vector<Row>* rows) {
  const Model model = load_model(o.model);
  o.spec = model.spec();
  o.description = describe(model);
  int64_t baseline_peak = -1;
  auto baseline = [&] {
    if (baseline_peak < 0) baseline_peak = measure_baseline_peak(model);
    return baseline_peak;
  };
  std::vector<int64_t> budget_bytes;
  for (const auto& b : budgets) budget_bytes.push_back(parse_budget(b, baseline));
  std::error_code ec;
  fs::create_directories(fs::path(o.output) / "plans", ec);
  if (ec) throw UsageError("cannot create '" + o.output + "': " + ec.message());
  const OperatorCosts costs = *obtain_costs(model, o.costs, true);
  std::vector<std::optional<PlanFile>> plans;
  for (const auto& p : planners) {
    const bool budgeted = planner_info(p).takes_budget;
    for (size_t bi = 0; bi < (budgeted ? budgets.size() : 1); ++bi) {
      Row row;
      row.planner = p;
      if (budgeted) row.budget = budgets[bi], row.budget_bytes = budget_bytes[bi];
      std::cerr << "sweep: planning " << p << (budgeted ? " at " + row.budget : "") << " ...\n";
      plans.push_back(plan_cell(o, model, costs, &row));
      if (!plans.back()) std::cerr << "sweep: " << p << ": " << row.status << "\n";
      rows->push_back(std::move(row));
    }
  }
  return plans;
}

int run_sweep(SweepOptions o) {
  const auto planners = split_list(o.planners);
  const auto budgets = split_list(o.budgets);
  check_sweep_request(o, planners, budgets);
  // Every plan first; then each runs from fresh weights (loaded by the measurement) with no
  // other copy of the weights alive: a kept one would add its bytes to both sides' peaks
  // and pull every ratio towards 1.
  std::vector<Row> rows;
  const std::vector<std::optional<PlanFile>> plans = plan_cells(o, planners, budgets, &rows);
  auto write_rows = [&] {
    write_file_atomically((fs::path(o.output) / "sweep.csv").string(), to_csv(rows));
    write_file_atomically((fs::path(o.output) / "sweep.json").string(),
                          to_json(o, rows).dump(1) + "\n");
  };
  write_rows();
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i]) continue;
    Row& row = rows[i];
    const std::string cell = row.planner + (row.budget.empty() ? "" : " at " + row.budget);
    std::cerr << "sweep: running " << cell << " ...\n";
    measure_cell(o, *plans[i], &row);
    if (row.ran)
      std::cerr << "sweep: " << cell << ": memory ratio " << row.measured.memory_ratio
                << ", overhead " << 100 * row.measured.overhead << "%\n";
    else
      std::cerr << "sweep: " << cell << ": " << row.status << "\n";
    write_rows();
  }
  const bool plotted = plot(o, rows);
  if (o.json) {
    print_json(to_json(o, rows));
    return 0;
  }
  print_table(rows);
  std::printf("wrote %s/sweep.csv, sweep.json, plans/%s\n", o.output.c_str(),
              plotted ? ", tradeoff.png" : "");
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand(
      "sweep",
      "plan every budget with every planner, run each against autograd, write CSV/JSON/plot");
  auto o = std::make_shared<SweepOptions>();
  add_model_options(cmd, o->model);
  add_cost_options(cmd, o->costs);
  cmd->add_option("--planners", o->planners, "comma-separated planners")->capture_default_str();
  cmd->add_option("--budgets", o->budgets,
                  "comma-separated budgets (bytes, KiB/MiB/GiB, or ratios of the baseline peak)")
      ->capture_default_str();
  add_solver_options(cmd, o->solver);
  cmd->add_option("--iters", o->iters, "measured iterations per plan")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "unmeasured iterations per plan")
      ->check(kNonNegative)
      ->capture_default_str();
  cmd->add_flag("--post-optimise", o->post_optimise,
                "MONeT modes that do not choose convolution algorithms: then switch each "
                "convolution greedily to the fastest algorithm that still fits the budget");
  cmd->add_option("-o,--output", o->output, "directory to write (must not exist or be empty)")
      ->required();
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_sweep(*o); }});
}

}  // namespace monet::cli
