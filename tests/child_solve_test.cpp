// ChildSolve: a Milp solved in a child process gives what solve_milp() gives here; the
// neighbourhood search's windows on the second core (children) and on this one combine
// their improvements.
#include "planner/solver/child_solve.h"
#include "planner/search/program_search.h"
#include "planner/solver/solver_request.h"

#include <gtest/gtest.h>

#include "knapsack_program.h"

#include "slow_relaxation.h"

#include <sys/types.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "base/progress.h"

namespace monet {
namespace {

using testing::knapsack;

TEST(ChildSolve, SolvesAsThisProcessDoes) {
  const Milp m = knapsack(14, 31);
  MilpOptions o;
  o.time_limit_seconds = 20;
  o.search_limit = SearchLimit::kWork;
  o.process = SolveProcess::kThisProcess;
  const MilpResult here = solve_milp(m, o);
  ASSERT_EQ(here.status, MilpStatus::kOptimal);
  ChildSolve child(m, o);
  const MilpResult there = child.wait();
  EXPECT_TRUE(child.finished());
  EXPECT_EQ(there.status, MilpStatus::kOptimal);
  EXPECT_NEAR(there.objective, here.objective, 1e-9);
  ASSERT_EQ(there.values.size(), here.values.size());
  EXPECT_TRUE(m.satisfies(there.values));
  EXPECT_NEAR(m.objective_of(there.values), here.objective, 1e-9);
  o.process = SolveProcess::kChild;
  const MilpResult child_default = solve_milp(m, o);
  EXPECT_EQ(child_default.status, MilpStatus::kOptimal);
  EXPECT_NEAR(child_default.objective, here.objective, 1e-9);
  EXPECT_EQ(child_default.incumbent_trace.size(), here.incumbent_trace.size());

  const RelaxationBound lp_here = solve_relaxation(m, {10}, nullptr, SolveProcess::kThisProcess);
  const RelaxationBound lp_there = solve_relaxation(m, {10}, nullptr, SolveProcess::kChild);
  ASSERT_TRUE(lp_here.solved);
  ASSERT_TRUE(lp_there.solved);
  EXPECT_NEAR(lp_there.bound, lp_here.bound, 1e-9);
  EXPECT_EQ(lp_there.values, lp_here.values);
  // Above presolve_max_nonzeros the relaxation runs without CLP's presolve: the same
  // optimum.
  RelaxationLimit unpresolved{10};
  unpresolved.presolve_max_nonzeros = m.nonzeros() - 1;
  const RelaxationBound lp_unpresolved = solve_relaxation(m, unpresolved, nullptr);
  ASSERT_TRUE(lp_unpresolved.solved);
  EXPECT_NEAR(lp_unpresolved.bound, lp_here.bound, 1e-9);
}

// The child processes of this one (Linux: /proc/self/task/*/children).
std::vector<pid_t> child_processes() {
  std::vector<pid_t> pids;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "children");
    for (pid_t pid; in >> pid;) pids.push_back(pid);
  }
  return pids;
}

// A market-split program (Cornuejols and Dawande): 0-1 columns whose weighted sums should
// hit a target in each row, with continuous slacks on both sides whose sum is minimised.
// Branch and cut takes far longer than these tests to close its gap (the LP bound is 0).
Milp market_split(int rows, int items, std::vector<double>* all_zero_start) {
  Milp m;
  uint32_t state = 12345;
  std::vector<std::vector<std::pair<int, double>>> terms(rows);
  std::vector<double> targets(rows, 0);
  for (int j = 0; j < items; ++j) {
    const int x = m.add_binary(0);
    all_zero_start->push_back(0);
    for (int i = 0; i < rows; ++i) {
      state = state * 1664525u + 1013904223u;
      const double a = (state >> 16) % 100;
      terms[i].push_back({x, a});
      targets[i] += a / 2;
    }
  }
  for (int i = 0; i < rows; ++i) {
    const int over = m.add_continuous(1, 0, 1e9), under = m.add_continuous(1, 0, 1e9);
    terms[i].push_back({over, -1});
    terms[i].push_back({under, 1});
    const double target = std::floor(targets[i]);
    m.add_row(terms[i], target, target);
    all_zero_start->push_back(0);
    all_zero_start->push_back(target);
  }
  return m;
}

TEST(ChildSolve, RunsInTheSolverExecutableBesideTheLibrary) {
  // The build tree's monet-solver (solver_location.cpp), not a fork of this
  // (multi-threaded) test process.
  const std::string& solver = solver_executable();
  ASSERT_FALSE(solver.empty()) << "monet-solver not found";
  EXPECT_EQ(std::filesystem::path(solver).filename(), "monet-solver");
  EXPECT_TRUE(std::filesystem::exists(solver));
  // Started by hand it refuses in one line, with the usage exit code.
  EXPECT_EQ(std::system(("'" + solver + "' 2>/dev/null").c_str()), 2 << 8);
}

TEST(SolverRequest, RoundTripsAndRefusesDamagedBytes) {
  Milp m = knapsack(9, 17);
  m.add_continuous(0.5, -1, 2);
  m.fix(2, 1);
  MilpOptions o;
  o.time_limit_seconds = 7;
  o.search_limit = SearchLimit::kWork;
  o.max_nodes = 33;
  o.progress = true;
  o.primal_pricing = PrimalPricing::kDantzig;
  o.presolve_max_nonzeros = 12345;
  o.warm_start.assign(m.columns(), 0.0);
  const std::string bytes = solver_request_bytes(m, &o, {});
  SolverRequest r;
  ASSERT_TRUE(parse_solver_request(bytes.data(), bytes.size(), &r));
  EXPECT_EQ(r.task, SolverTask::kBranchAndCut);
  EXPECT_EQ(r.milp.columns(), m.columns());
  EXPECT_EQ(r.milp.rows(), m.rows());
  EXPECT_EQ(r.milp.nonzeros(), m.nonzeros());
  EXPECT_EQ(r.options.time_limit_seconds, 7);
  EXPECT_EQ(r.options.search_limit, SearchLimit::kWork);
  EXPECT_EQ(r.options.max_nodes, 33);
  EXPECT_TRUE(r.options.progress);
  EXPECT_EQ(r.options.primal_pricing, PrimalPricing::kDantzig);
  EXPECT_EQ(r.options.presolve_max_nonzeros, 12345);
  EXPECT_EQ(r.options.warm_start, o.warm_start);
  EXPECT_EQ(r.options.process, SolveProcess::kThisProcess);
  for (int pattern = 0; pattern < 8; ++pattern) {  // the same program: same answers
    std::vector<double> x(m.columns());
    for (int c = 0; c < m.columns(); ++c) x[c] = ((c * 3 + pattern) % 4 == 0) ? 1 : 0;
    EXPECT_EQ(r.milp.objective_of(x), m.objective_of(x));
    EXPECT_EQ(r.milp.satisfies(x), m.satisfies(x));
  }
  const std::string lp = solver_request_bytes(m, nullptr, {3, 99, 7});
  ASSERT_TRUE(parse_solver_request(lp.data(), lp.size(), &r));
  EXPECT_EQ(r.task, SolverTask::kRelaxation);
  EXPECT_EQ(r.relaxation.seconds, 3);
  EXPECT_EQ(r.relaxation.iterations, 99);
  EXPECT_EQ(r.relaxation.presolve_max_nonzeros, 7);
  for (size_t n = 0; n < bytes.size(); ++n)  // every truncation
    EXPECT_FALSE(parse_solver_request(bytes.data(), n, &r)) << n << " bytes";
  std::string longer = bytes + "x";
  EXPECT_FALSE(parse_solver_request(longer.data(), longer.size(), &r));
  std::string other_version = bytes;
  other_version[0] ^= 0x40;
  EXPECT_FALSE(parse_solver_request(other_version.data(), other_version.size(), &r));
}

// A solver that aborts (as CLP does on a failed internal assertion) ends its child process,
// not this one. The solve starts again with Dantzig pricing; when that aborts too, the best
// solution known (here the warm start) stands as feasible, with no bound, and warnings say
// why.
TEST(SolveInAChildProcess, AnAbortedSolverLeavesItsBestSolutionAndThisProcess) {
  std::vector<double> start;
  const Milp m = market_split(4, 40, &start);
  ASSERT_TRUE(m.satisfies(start));
  MilpOptions o;
  o.time_limit_seconds = 120;
  o.search_limit = SearchLimit::kWork;
  o.progress = true;
  o.warm_start = start;
  std::vector<std::string> lines;
  int aborted = 0;
  set_progress_sink([&](ProgressLevel, const std::string& text) {
    lines.push_back(text);
    if (text.find("LP relaxation solved") == std::string::npos) return;
    for (pid_t pid : child_processes()) aborted += kill(pid, SIGABRT) == 0;
  });
  const MilpResult r = solve_milp(m, o);
  set_progress_sink(nullptr);
  EXPECT_EQ(aborted, 2);
  EXPECT_EQ(r.status, MilpStatus::kFeasible);
  ASSERT_TRUE(m.satisfies(r.values));
  EXPECT_LE(r.objective, m.objective_of(start));
  EXPECT_TRUE(std::isinf(r.gap));
  int warnings = 0;
  for (const std::string& line : lines)
    warnings += line.find("signal 6") != std::string::npos &&
                line.find("assertion") != std::string::npos &&
                (line.find("solving again with Dantzig") != std::string::npos ||
                 line.find("the best solution it had reported stands") != std::string::npos);
  EXPECT_EQ(warnings, 2);
}

TEST(ChildSolve, ReportsNoSolutionForAnInfeasibleProgram) {
  Milp m;
  const int x = m.add_binary(1), y = m.add_binary(1);
  m.add_row({{x, 1}, {y, 1}}, 3, 1e30);
  MilpOptions o;
  o.search_limit = SearchLimit::kWork;
  ChildSolve child(m, o);
  const MilpResult r = child.wait();
  EXPECT_EQ(r.status, MilpStatus::kInfeasible);
  EXPECT_TRUE(r.values.empty());
}

// The second core runs only under SearchLimit::kWallClock, so these two tests keep it: their
// programs are solved to the optimum they check in well under a second of the 60 s limit,
// which never ends them.
TEST(NeighbourhoodSearchOnTwoCores, WindowsKeepTheImprovementsOfBothCores) {
  // Blocks at positions 0..15, each a small knapsack of its own (three items, capacity 4),
  // joined by one loose row over all of them; the warm start takes the worst feasible
  // item of every block. Once the relaxation is ready (and taken as too slow to solve for a
  // branch and cut over the whole program beside), windows alternate between a child
  // process and this one, each improving blocks the other's incumbent does not have.
  Milp m;
  std::vector<int> positions;
  std::vector<double> warm;
  std::vector<std::pair<int, double>> all;
  for (int p = 0; p < 16; ++p) {
    std::vector<std::pair<int, double>> row;
    const double values[3] = {-5, -4, -1}, weights[3] = {3, 2, 1};
    for (int i = 0; i < 3; ++i) {
      const int x = m.add_binary(values[i]);
      row.push_back({x, weights[i]});
      all.push_back({x, 1});
      positions.push_back(p);
      warm.push_back(i == 2 ? 1 : 0);
    }
    m.add_row(row, -1e30, 4);
  }
  m.add_row(all, -1e30, 40);
  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.time_limit_seconds = 60;
  o.relative_gap = 0;
  o.warm_start = warm;
  o.neighbourhood.column_positions = positions;
  o.relaxation = testing::slow_relaxation(m);
  const MilpResult r = search_program(m, o);
  // Each block's best is items 0 and 2 (value 6, weight 4): 32 items in all, within 40.
  EXPECT_TRUE(m.satisfies(r.values));
  EXPECT_NEAR(r.objective, -16 * 6.0, 1e-9);
}

TEST(NeighbourhoodSearchOnTwoCores, WholeBranchAndCutFindsAndProvesTheOptimum) {
  // No column has a place along the model, so there are no windows; the relaxation solves
  // in no time, so the second core runs CBC over the whole program, from the empty
  // knapsack: its solution is the optimum, and its bound proves it (the LP's is lower).
  const Milp m = knapsack(14, 31);
  MilpOptions exact;
  const MilpResult optimum = solve_milp(m, exact);
  ASSERT_EQ(optimum.status, MilpStatus::kOptimal);
  SearchOptions o;
  o.strategy = SearchStrategy::kNeighbourhood;
  o.time_limit_seconds = 60;
  o.warm_start.assign(m.columns(), 0);
  o.neighbourhood.column_positions.assign(m.columns(), -1);
  const MilpResult r = search_program(m, o);
  EXPECT_LT(r.lp_bound, optimum.objective - 1e-6);
  EXPECT_NEAR(r.objective, optimum.objective, 1e-9);
  EXPECT_TRUE(m.satisfies(r.values));
  EXPECT_GE(r.bound, optimum.objective * (1 + o.relative_gap) - 1e-9);
  EXPECT_EQ(r.status, MilpStatus::kOptimal);
}

}  // namespace
}  // namespace monet
