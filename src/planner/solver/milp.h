// Milp: a 0-1 mixed-integer linear program (minimise c'x subject to row bounds) and its
// solution with CBC, linked as a library. This is the solver layer: it knows programs and
// CBC, no planner and no search strategy (program_search.h chooses those). solve_milp()
// solves the LP relaxation with CLP (the certified bound), then runs CBC's branch and cut
// from that basis (cuts, heuristics) under one wall-clock limit for both and a relative
// gap, reports incumbent, bound and gap on stderr while it runs, and returns the best
// solution with the solve statistics. Solves run in a child process by default
// (child_solve.h), where a solver's failed assertion costs the solve, not the program.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "planner/solver/search_clock.h"

class OsiClpSolverInterface;  // CLP's solver interface (COIN-OR)

namespace monet {

struct MilpOptions;
struct MilpResult;
struct RelaxationBound;
struct RelaxationLimit;
struct SolverRequest;

class Milp {
 public:
  /// A binary column with objective coefficient `cost`; returns its index.
  int add_binary(double cost);
  /// A continuous column in [lb, ub].
  int add_continuous(double cost, double lb, double ub);
  /// lb <= sum coef * x[col] <= ub. Terms on the same column are merged; zero terms
  /// dropped. Returns the row index.
  int add_row(std::vector<std::pair<int, double>> terms, double lb, double ub);
  /// Fixes a column's bounds (e.g. a binary to 0).
  void fix(int col, double value);

  /// Whether `x` satisfies every bound and row (within `tolerance`).
  bool satisfies(const std::vector<double>& x, double tolerance = 1e-6) const;

  /// Rows `x` violates, with the amount (row units).
  std::vector<std::pair<int, double>> violations(const std::vector<double>& x,
                                                 double tolerance = 1e-6) const;
  /// The objective value of `x`.
  double objective_of(const std::vector<double>& x) const;

  /// The program with every column whose `fixed` entry is not NaN fixed at that value
  /// and removed, and the columns those fixings determine (a row left with one free
  /// column whose bounds then meet) fixed and removed too. The other columns keep their
  /// order (renumbered; `fixed` is updated to say which were removed and at what value),
  /// rows lose the fixed terms (their bounds shift by them) and rows left without terms
  /// are dropped. `objective_offset` receives the fixed columns' share of the objective.
  Milp without_fixed(std::vector<double>* fixed, double* objective_offset) const;
  bool is_integer(int col) const { return integer_[col]; }

  int columns() const { return static_cast<int>(cost_.size()); }
  int rows() const { return static_cast<int>(row_lb_.size()); }
  int64_t nonzeros() const { return static_cast<int64_t>(elements_.size()); }

 private:
  friend MilpResult solve_milp(const Milp& milp, const MilpOptions& options);
  friend void load_program(const Milp& milp, OsiClpSolverInterface* lp);
  friend std::string solver_request_bytes(const Milp& milp, const MilpOptions* options,
                                          RelaxationLimit relaxation);
  friend bool parse_solver_request(const char* data, size_t size, SolverRequest* out);

  std::vector<double> cost_, col_lb_, col_ub_;
  std::vector<bool> integer_;
  std::vector<double> row_lb_, row_ub_;
  std::vector<int> row_start_, indices_;
  std::vector<double> elements_;
};

/// The optimum of a Milp's LP relaxation: a certified lower bound on its optimum.
struct RelaxationBound {
  bool solved = false;         // to optimality (else: time limit, stopped or infeasible)
  bool infeasible = false;     // proven primal infeasible
  double bound = 0;            // the LP optimum when solved
  double seconds = 0;          // wall time of the solve
  std::vector<double> values;  // the LP optimum, per column (when solved)
};

/// Where a solve runs. CLP and CBC as Debian builds them keep their internal assertions,
/// and some fail on some programs (ClpPrimalColumnSteepest's, depending on the numbers) and
/// abort the process: in a child process, that costs the solve and not the program.
enum class SolveProcess {
  kChild,        // a solver process (child_solve.h); its progress and incumbents come back live
  kThisProcess,  // this process (what the child runs)
};

/// The default of RelaxationLimit::iterations: no limit.
inline constexpr int64_t kNoIterationLimit = std::numeric_limits<int64_t>::max();

/// The default of MilpOptions::presolve_max_nonzeros and RelaxationLimit's.
inline constexpr int64_t kPresolveMaxNonzeros = 5'000'000;

/// What ends an LP relaxation short of its optimum (then it gives no bound).
struct RelaxationLimit {
  double seconds = kNoTimeLimit;           // wall seconds (kNoTimeLimit: none)
  int64_t iterations = kNoIterationLimit;  // CLP simplex iterations (kNoIterationLimit: none)
  /// CLP's presolve, which neither limit bounds, runs on programs of at most this many
  /// nonzeros (MilpOptions::presolve_max_nonzeros).
  int64_t presolve_max_nonzeros = kPresolveMaxNonzeros;
};

/// Solves the LP relaxation of `milp` with CLP within `limit`, or until `*stop` (when not
/// null) is set. A child that ends abnormally gives no bound.
RelaxationBound solve_relaxation(const Milp& milp, RelaxationLimit limit,
                                 const std::atomic<bool>* stop,
                                 SolveProcess process = SolveProcess::kChild);

/// The default of MilpOptions::child_overrun_seconds, and the overrun of
/// solve_relaxation()'s child (seconds).
inline constexpr double kChildOverrunSeconds = 60;

/// How CLP's primal simplex (the root LP, CBC's heuristics) picks the column to enter.
enum class PrimalPricing {
  kAutomatic,  // CLP's choice (steepest edge and its variants)
  kDantzig,    // the most negative reduced cost: none of steepest edge's assertions
};

/// The default of MilpOptions::max_nodes.
inline constexpr int kWorkLimitNodes = 2000;
/// The defaults of MilpOptions::relaxation_work_per_second and search_work_per_second
/// (iterations x nonzeros per nominal second) and min_iterations.
inline constexpr double kRelaxationWorkPerSecond = 2.5e8;
inline constexpr double kSearchWorkPerSecond = 2.5e7;
inline constexpr int64_t kWorkMinIterations = 1000;

struct MilpOptions {
  /// Limit of LP relaxation and branch and bound (seconds): of wall time under
  /// SearchLimit::kWallClock; under kWork only a nominal figure from which the planner
  /// chooses strategies and shares.
  double time_limit_seconds = 60;
  /// What ends a solve short of proven optimality (search_clock.h).
  SearchLimit search_limit = SearchLimit::kWallClock;
  /// Under SearchLimit::kWork: CBC's branch and cut stops after this many nodes.
  int max_nodes = kWorkLimitNodes;
  /// Under SearchLimit::kWork: the simplex iterations of the LP relaxation and of CBC's
  /// branch and cut (its nodes' and its heuristics' together), as work per nominal second
  /// of time_limit_seconds. One unit is one iteration on a program of one nonzero: a
  /// relaxation makes at most time_limit_seconds * relaxation_work_per_second / nonzeros
  /// iterations, the branch and cut after it as many at search_work_per_second, and each
  /// at least min_iterations. An iteration's cost grows with the program's size, and a
  /// node's re-solve costs CBC about ten of the relaxation's; the rates make a nominal
  /// second about one to two seconds of one core on the test programs (docs/PLANNER.md,
  /// "Why the defaults").
  double relaxation_work_per_second = kRelaxationWorkPerSecond;
  double search_work_per_second = kSearchWorkPerSecond;
  int64_t min_iterations = kWorkMinIterations;  // the fewest under kWork, whatever the size
  double relative_gap = 1e-4;  // stop when (incumbent - bound) / |incumbent| <= this
  /// CBC threads (when CBC was built with them) of a branch and cut over a program of at
  /// most root_cuts_max_columns columns (on larger ones CbcMain1 spends the limit
  /// re-solving its root LP, which one thread does).
  int threads = 1;  // 1 under SearchLimit::kWork (CBC's threads race)
  /// CBC's root cuts (Gomory and the others) and threads run only on programs of at most
  /// this many columns: on larger ones the cuts take longer than the time limit and move the
  /// bound little (docs/PLANNER.md, "Why the defaults").
  int root_cuts_max_columns = 20000;
  /// CLP's presolve (duplicate rows, doubletons: passes no time or iteration limit ends)
  /// runs before an LP relaxation only on programs of at most this many nonzeros. The
  /// zoo's and the imported models' programs have up to 4.4M and keep it; on MViT V2-S's
  /// at a small clip (80M nonzeros, 9.2M columns) it ran over 20 minutes, and over 7 on
  /// one of its neighbourhoods' sub-programs.
  int64_t presolve_max_nonzeros = kPresolveMaxNonzeros;
  bool progress = false;  // incumbent / bound / gap lines on stderr
  /// A feasible assignment of every column to start from (empty: none).
  std::vector<double> warm_start;
  /// Called with each new incumbent of the search over the whole program (its heuristics'
  /// included; not the warm start), as CBC finds it (in a child's solve: as this process
  /// learns of it, on the calling thread).
  std::function<void(const std::vector<double>& values)> on_incumbent;
  /// Where the solve runs. A child that ends abnormally (and its retry, below) leaves the
  /// best incumbent it had reported, or the warm start, with no bound.
  SolveProcess process = SolveProcess::kChild;
  /// Primal simplex pricing. A child solve that aborts is solved again, for the time left,
  /// from its best incumbent with kDantzig.
  PrimalPricing primal_pricing = PrimalPricing::kAutomatic;
  /// Seconds a child solve may run past time_limit_seconds before it is killed (CBC checks
  /// its limit between nodes and simplex iterations; this only ends one that hangs). Under
  /// SearchLimit::kWork a child is never killed for its time.
  double child_overrun_seconds = kChildOverrunSeconds;
};

enum class MilpStatus { kOptimal, kFeasible, kInfeasible, kNoSolution };
const char* milp_status_name(MilpStatus status);

struct MilpResult {
  MilpStatus status = MilpStatus::kNoSolution;
  double objective = 0;      // of the incumbent
  double bound = 0;          // best proven lower bound (LP relaxation or CBC's)
  double lp_bound = -1e300;  // optimum of the LP relaxation (when solved)
  double lp_seconds = 0;     // wall time of the LP relaxation
  /// (objective - bound) / |objective|: 0 when optimal, +infinity when no bound is known
  /// (the LP relaxation was not solved in time).
  double gap = 0;
  double seconds = 0;              // wall time of the solve
  int64_t simplex_iterations = 0;  // of CBC's branch and cut (the LP relaxation's not counted)
  double first_incumbent_seconds =
      -1;                      // when the first solution was found (0: the warm start; -1: never)
  int neighbourhoods = 0;      // sub-programs solved by neighbourhood search
  std::vector<double> values;  // per column (empty without a solution)
  std::vector<std::pair<double, double>> incumbent_trace;  // (seconds, objective), warm start first
};

/// CBC's branch and cut over the whole of `milp`, from the LP relaxation's basis, where
/// options.process says.
MilpResult solve_milp(const Milp& milp, const MilpOptions& options);

/// The simplex iterations a solve of `milp` for a nominal `seconds` may make under the
/// work limit at `work_per_second` (one of options' two rates): seconds * work_per_second /
/// nonzeros, at least options.min_iterations.
int64_t work_iterations(const Milp& milp, const MilpOptions& options, double seconds,
                        double work_per_second);

/// The limit of an LP relaxation of `milp` for a nominal `seconds` under
/// options.search_limit: that wall time, or the iterations the work limit gives it.
RelaxationLimit relaxation_limit(const Milp& milp, const MilpOptions& options, double seconds);

/// `result` with its wall time (since `t0`) and gap set, its outcome reported on stderr
/// when `progress`.
MilpResult finished(MilpResult result, std::chrono::steady_clock::time_point t0, bool progress);

}  // namespace monet
