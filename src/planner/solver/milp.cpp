#include "planner/solver/milp.h"

#include <coin/CbcEventHandler.hpp>
#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/ClpEventHandler.hpp>
#include <coin/ClpPrimalColumnDantzig.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/progress.h"
#include "planner/solver/child_solve.h"
#include "planner/solver/time_budget.h"

namespace monet {

int Milp::add_binary(double cost) {
  cost_.push_back(cost);
  col_lb_.push_back(0);
  col_ub_.push_back(1);
  integer_.push_back(true);
  return columns() - 1;
}

int Milp::add_continuous(double cost, double lb, double ub) {
  cost_.push_back(cost);
  col_lb_.push_back(lb);
  col_ub_.push_back(ub);
  integer_.push_back(false);
  return columns() - 1;
}

int Milp::add_row(std::vector<std::pair<int, double>> terms, double lb, double ub) {
  std::sort(terms.begin(), terms.end());
  row_start_.push_back(static_cast<int>(indices_.size()));
  for (size_t i = 0; i < terms.size();) {
    double c = 0;
    const int col = terms[i].first;
    for (; i < terms.size() && terms[i].first == col; ++i) c += terms[i].second;
    if (c != 0) {
      indices_.push_back(col);
      elements_.push_back(c);
    }
  }
  row_lb_.push_back(lb);
  row_ub_.push_back(ub);
  return rows() - 1;
}

void Milp::fix(int col, double value) {
  col_lb_[col] = value;
  col_ub_[col] = value;
}

bool Milp::satisfies(const std::vector<double>& x, double tolerance) const {
  if (static_cast<int>(x.size()) != columns()) return false;
  for (int c = 0; c < columns(); ++c)
    if (x[c] < col_lb_[c] - tolerance || x[c] > col_ub_[c] + tolerance) return false;
  return violations(x, tolerance).empty();
}

std::vector<std::pair<int, double>> Milp::violations(const std::vector<double>& x,
                                                     double tolerance) const {
  std::vector<std::pair<int, double>> out;
  for (int r = 0; r < rows(); ++r) {
    const int end = r + 1 < rows() ? row_start_[r + 1] : static_cast<int>(indices_.size());
    double v = 0;
    for (int e = row_start_[r]; e < end; ++e) v += elements_[e] * x.at(indices_[e]);
    if (v < row_lb_[r] - tolerance) out.push_back({r, row_lb_[r] - v});
    if (v > row_ub_[r] + tolerance) out.push_back({r, v - row_ub_[r]});
  }
  return out;
}

double Milp::objective_of(const std::vector<double>& x) const {
  double v = 0;
  for (int c = 0; c < columns(); ++c) v += cost_[c] * x.at(c);
  return v;
}

Milp Milp::without_fixed(std::vector<double>* fixed_columns, double* objective_offset) const {
  std::vector<double>& fixed = *fixed_columns;
  // Propagate: a row left with one free term bounds that column; bounds that meet fix
  // it (the MONeT program's running sums are equality rows on earlier columns, so fixing
  // the binaries they sum fixes them too), and so on.
  const int end_all = static_cast<int>(indices_.size());
  auto row_end = [&](int r) { return r + 1 < rows() ? row_start_[r + 1] : end_all; };
  std::vector<std::vector<int>> rows_of(columns());
  for (int r = 0; r < rows(); ++r)
    for (int e = row_start_[r]; e < row_end(r); ++e) rows_of[indices_[e]].push_back(r);
  std::vector<double> lb = col_lb_, ub = col_ub_;
  std::vector<int> free_terms(rows(), 0), queue;
  for (int r = 0; r < rows(); ++r) {
    for (int e = row_start_[r]; e < row_end(r); ++e)
      free_terms[r] += std::isnan(fixed[indices_[e]]);
    if (free_terms[r] == 1) queue.push_back(r);
  }
  while (!queue.empty()) {
    const int r = queue.back();
    queue.pop_back();
    if (free_terms[r] != 1) continue;
    double shift = 0, a = 0;
    int col = -1;
    for (int e = row_start_[r]; e < row_end(r); ++e) {
      if (std::isnan(fixed[indices_[e]]))
        col = indices_[e], a = elements_[e];
      else
        shift += elements_[e] * fixed[indices_[e]];
    }
    double lo = -1e300, hi = 1e300;
    if (row_lb_[r] > -1e29) (a > 0 ? lo : hi) = (row_lb_[r] - shift) / a;
    if (row_ub_[r] < 1e29) (a > 0 ? hi : lo) = (row_ub_[r] - shift) / a;
    lb[col] = std::max(lb[col], lo);
    ub[col] = std::min(ub[col], hi);
    if (ub[col] - lb[col] > 1e-9 * std::max(1.0, std::fabs(lb[col]))) continue;
    fixed[col] = integer_[col] ? std::round(lb[col]) : std::max(lb[col], col_lb_[col]);
    for (int q : rows_of[col])
      if (--free_terms[q] == 1) queue.push_back(q);
  }
  Milp out;
  std::vector<int> renumbered(columns(), -1);
  *objective_offset = 0;
  for (int c = 0; c < columns(); ++c) {
    if (!std::isnan(fixed[c])) {
      *objective_offset += cost_[c] * fixed[c];
      continue;
    }
    renumbered[c] = out.columns();
    out.cost_.push_back(cost_[c]);
    out.col_lb_.push_back(col_lb_[c]);
    out.col_ub_.push_back(col_ub_[c]);
    out.integer_.push_back(integer_[c]);
  }
  std::vector<std::pair<int, double>> terms;
  for (int r = 0; r < rows(); ++r) {
    double shift = 0;
    terms.clear();
    for (int e = row_start_[r]; e < row_end(r); ++e) {
      const int c = indices_[e];
      if (renumbered[c] < 0)
        shift += elements_[e] * fixed[c];
      else
        terms.push_back({renumbered[c], elements_[e]});
    }
    if (terms.empty()) continue;
    out.add_row(terms, row_lb_[r] - shift, row_ub_[r] - shift);
  }
  return out;
}

const char* milp_status_name(MilpStatus s) {
  switch (s) {
    case MilpStatus::kOptimal:
      return "optimal";
    case MilpStatus::kFeasible:
      return "feasible (limit reached)";
    case MilpStatus::kInfeasible:
      return "infeasible";
    case MilpStatus::kNoSolution:
      return "no solution found within the limit";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

// Reports incumbent, bound and gap on stderr as CBC finds solutions and explores nodes,
// and keeps a copy of each new incumbent of the whole program's search in `incumbent` and
// its best bound before the deadline or the work limit (`*limit_hit`) in `bound` (CBC drops its
// incumbent, and its final bound means nothing, once an LP stopped at the deadline ends the
// search). A heuristic's sub-search has a parent model: its solutions and bounds are its
// restriction's.
class ProgressHandler : public CbcEventHandler {
 public:
  ProgressHandler(bool print, Clock::time_point t0, double deadline,
                  const std::atomic<bool>* limit_hit, MilpResult* result,
                  std::vector<double>* incumbent, double* bound,
                  std::function<void(const std::vector<double>&)> on_incumbent)
      : print_(print),
        t0_(t0),
        deadline_(deadline),
        limit_hit_(limit_hit),
        result_(result),
        incumbent_(incumbent),
        bound_(bound),
        on_incumbent_(std::move(on_incumbent)) {}
  CbcEventHandler* clone() const override { return new ProgressHandler(*this); }

  CbcAction event(CbcEvent which) override {
    const double t = std::chrono::duration<double>(Clock::now() - t0_).count();
    // CBC's threads each call their own clone; the result, incumbent and bound are shared.
    const std::lock_guard<std::mutex> lock(*mutex_);
    if (which == solution || which == heuristicSolution) {
      const double obj = model_->getObjValue();
      if (result_->first_incumbent_seconds < 0) result_->first_incumbent_seconds = t;
      result_->incumbent_trace.push_back({t, obj});
      const double* x = model_->bestSolution();
      if (x && !model_->parentModel()) {
        incumbent_->assign(x, x + model_->getNumCols());
        if (on_incumbent_) on_incumbent_(*incumbent_);
      }
      report(t, "solution");
    } else if (which == node && t - last_ >= 2.0) {
      report(t, "search");
    }
    // The tree's bound at a node of the whole search, while every LP is still whole.
    const bool over = t > deadline_ || limit_hit_->load();
    if (which == node && !model_->parentModel() && !over)
      *bound_ = std::max(*bound_, model_->getBestPossibleObjValue());
    // CBC checks its own limit between nodes only; root cuts and heuristics can run on.
    if (!over || which == solution || which == heuristicSolution) return noAction;
    return stop;
  }

 private:
  void report(double t, const char* what) {
    last_ = t;
    if (!print_) return;
    const double inc = model_->getObjValue(), bound = model_->getBestPossibleObjValue();
    const bool has = model_->bestSolution() != nullptr;
    if (has)
      report_progress("solver: %7.1f s  %-8s incumbent %.6g  bound %.6g  gap %.2f%%  nodes %d\n", t,
                      what, inc, bound,
                      100 * std::max(0.0, inc - bound) / std::max(1e-12, std::fabs(inc)),
                      model_->getNodeCount());
    else
      report_progress("solver: %7.1f s  %-8s no incumbent yet  bound %.6g  nodes %d\n", t, what,
                      bound, model_->getNodeCount());
  }

  bool print_;
  Clock::time_point t0_;
  double deadline_;                     // seconds after t0_
  const std::atomic<bool>* limit_hit_;  // a simplex stopped at the deadline or the work limit
  MilpResult* result_;
  std::vector<double>* incumbent_;
  double* bound_;
  std::function<void(const std::vector<double>&)> on_incumbent_;
  double last_ = 0;
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();  // shared by the clones
};

// Stops CLP's simplex at the end of an iteration once `stop` is set (the caller no longer
// wants the bound, e.g. a search beside it has finished), once the wall clock passes
// `deadline`, or once `*iterations` (shared by the clones CBC makes of its solver, its
// heuristics' included) has counted `iteration_budget` iterations; records either limit
// in `*limit_hit`.
class SimplexStop : public ClpEventHandler {
 public:
  SimplexStop(const std::atomic<bool>* stop, Clock::time_point deadline,
              std::atomic<bool>* limit_hit, std::atomic<int64_t>* iterations = nullptr,
              int64_t iteration_budget = kNoIterationLimit)
      : stop_(stop),
        deadline_(deadline),
        limit_hit_(limit_hit),
        iterations_(iterations),
        iteration_budget_(iteration_budget) {}
  ClpEventHandler* clone() const override { return new SimplexStop(*this); }
  int event(Event which) override {
    if (which != endOfIteration) return -1;
    if (stop_ && stop_->load()) return 0;
    if (!limit_hit_) return -1;
    const bool out_of_work = iterations_ && iterations_->fetch_add(1) + 1 >= iteration_budget_;
    if (out_of_work || (deadline_ != Clock::time_point::max() && Clock::now() > deadline_)) {
      *limit_hit_ = true;
      return 0;
    }
    return -1;
  }

 private:
  const std::atomic<bool>* stop_;
  Clock::time_point deadline_;
  std::atomic<bool>* limit_hit_;
  std::atomic<int64_t>* iterations_;
  int64_t iteration_budget_;
};

// Solves the LP relaxation loaded into `lp` within `limit` or until `*stop` (when not
// null) is set.
RelaxationBound solve_loaded_relaxation(OsiClpSolverInterface* lp, RelaxationLimit limit,
                                        const std::atomic<bool>* stop) {
  const auto t0 = Clock::now();
  ClpSimplex* clp = lp->getModelPtr();
  const int iteration_limit = clp->maximumIterations();
  if (std::isfinite(limit.seconds)) clp->setMaximumWallSeconds(stage_seconds(limit.seconds));
  if (limit.iterations != kNoIterationLimit)
    clp->setMaximumIterations(
        static_cast<int>(std::min<int64_t>(limit.iterations, std::numeric_limits<int>::max())));
  SimplexStop handler(stop, Clock::time_point::max(), nullptr);
  if (stop) clp->passInEventHandler(&handler);
  if (lp->getNumElements() > limit.presolve_max_nonzeros)
    lp->setHintParam(OsiDoPresolveInInitial, false, OsiHintDo);
  lp->initialSolve();
  clp->setMaximumWallSeconds(-1);
  clp->setMaximumIterations(iteration_limit);
  RelaxationBound r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.solved = lp->isProvenOptimal();
  r.infeasible = lp->isProvenPrimalInfeasible();
  if (r.solved) {
    r.bound = lp->getObjValue();
    r.values.assign(lp->getColSolution(), lp->getColSolution() + lp->getNumCols());
  }
  return r;
}

}  // namespace

MilpResult finished(MilpResult result, Clock::time_point t0, bool progress) {
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!std::isfinite(result.bound))
    result.gap = std::numeric_limits<double>::infinity();
  else if (!result.values.empty())
    result.gap = std::max(0.0, result.objective - result.bound) /
                 std::max(1e-12, std::fabs(result.objective));
  if (progress)
    report_progress("solver: %s after %.1f s, objective %.6g, bound %.6g, gap %.2f%%\n",
                    milp_status_name(result.status), result.seconds, result.objective, result.bound,
                    100 * result.gap);
  return result;
}

void load_program(const Milp& m, OsiClpSolverInterface* lp) {
  lp->messageHandler()->setLogLevel(0);
  std::vector<int> starts = m.row_start_, lengths;
  starts.push_back(static_cast<int>(m.indices_.size()));
  for (int r = 0; r < m.rows(); ++r) lengths.push_back(starts[r + 1] - starts[r]);
  const CoinPackedMatrix matrix(false, m.columns(), m.rows(), static_cast<int>(m.elements_.size()),
                                m.elements_.data(), m.indices_.data(), starts.data(),
                                lengths.data());
  lp->loadProblem(matrix, m.col_lb_.data(), m.col_ub_.data(), m.cost_.data(), m.row_lb_.data(),
                  m.row_ub_.data());
}

RelaxationBound solve_relaxation(const Milp& m, RelaxationLimit limit,
                                 const std::atomic<bool>* stop, SolveProcess process) {
  if (process == SolveProcess::kChild)
    return solve_relaxation_in_child(m, limit, stop, kChildOverrunSeconds);
  OsiClpSolverInterface lp;
  load_program(m, &lp);
  return solve_loaded_relaxation(&lp, limit, stop);
}

int64_t work_iterations(const Milp& m, const MilpOptions& o, double seconds,
                        double work_per_second) {
  const double work = seconds * work_per_second;  // iterations x nonzeros
  const double per_iteration = static_cast<double>(std::max<int64_t>(1, m.nonzeros()));
  return std::max<int64_t>(o.min_iterations, static_cast<int64_t>(work / per_iteration));
}

RelaxationLimit relaxation_limit(const Milp& m, const MilpOptions& o, double seconds) {
  if (o.search_limit == SearchLimit::kWallClock)
    return {seconds, kNoIterationLimit, o.presolve_max_nonzeros};
  return {kNoTimeLimit, work_iterations(m, o, seconds, o.relaxation_work_per_second),
          o.presolve_max_nonzeros};
}

namespace {

// Records the LP relaxation's bound and time in `result`, and reports it.
void record_relaxation(const RelaxationBound& r, bool progress, MilpResult* result) {
  result->lp_seconds = r.seconds;
  if (r.solved) result->lp_bound = r.bound;
  if (!progress) return;
  if (r.solved) {
    report_progress("solver: %7.1f s  LP relaxation solved, bound %.6g\n", result->lp_seconds,
                    result->lp_bound);
    return;
  }
  report_progress("solver: %7.1f s  LP relaxation %s\n", result->lp_seconds,
                  r.infeasible ? "infeasible: no plan of the program fits the budget"
                               : "stopped at the time limit (no bound)");
}

// CbcMain1's command line for `m` under `o`: `limit` is the whole wall-clock limit
// (seconds), of which the LP relaxation took `lp_seconds`.
std::vector<std::string> cbc_arguments(const Milp& m, const MilpOptions& o, double limit,
                                       double lp_seconds) {
  const bool work_limited = o.search_limit == SearchLimit::kWork;
  const int thread_count = work_limited ? 1 : std::max(1, o.threads);
  // CglPreProcess (CBC 2.10) crashes in postProcess on some of these programs once the
  // time limit interrupts the search (seen on ResNet-50): it stays off.
  std::vector<std::string> args = {
      "monet",       "-log", "0", "-timeMode", "elapsed", "-ratio", std::to_string(o.relative_gap),
      "-preprocess", "off"};
  if (work_limited)  // nodes, not seconds: the same search on every machine
    args.insert(args.end(), {"-maxNodes", std::to_string(std::max(0, o.max_nodes))});
  else
    args.insert(args.end(), {"-sec", std::to_string(stage_seconds(limit - lp_seconds))});
  // Gomory and the other root cuts take minutes on programs larger than that on 2 cores
  // and move the bound little (ResNet-50: 12.615 -> 12.645 after 56 s); the LP relaxation
  // is the certified bound, and the time goes to heuristics and the search instead.
  if (m.columns() > o.root_cuts_max_columns) args.insert(args.end(), {"-cuts", "off"});
  // Threads search the tree in parallel. On large programs CbcMain1 spends the time limit
  // re-solving its root LP (solve_milp), which one thread does: one thread there.
  if (thread_count > 1 && m.columns() <= o.root_cuts_max_columns)
    args.insert(args.end(), {"-threads", std::to_string(thread_count)});
  if (o.primal_pricing == PrimalPricing::kDantzig)
    args.insert(args.end(), {"-primalPivot", "dantzig"});
  args.insert(args.end(), {"-solve", "-quit"});
  return args;
}

// The best of the incumbents the handler kept (`incumbent`) and CBC's final one. After a
// stop at the deadline, the model CbcMain1 was given may hold only the warm start: the
// search's own incumbents stay in its copy (MobileNetV2 b8 at 0.5x returned the warm
// start, 0.7527, after its search had found 0.7367). Empty when there is none.
std::vector<double> best_incumbent(const Milp& m, const MilpOptions& o, bool warm,
                                   std::vector<double> incumbent, const CbcModel& model) {
  if (!incumbent.empty() &&
      (static_cast<int>(incumbent.size()) != m.columns() || !m.satisfies(incumbent)))
    incumbent = warm ? o.warm_start : std::vector<double>();
  if (model.bestSolution()) {
    std::vector<double> last(model.bestSolution(), model.bestSolution() + m.columns());
    if (incumbent.empty() ||
        (m.satisfies(last) && m.objective_of(last) < m.objective_of(incumbent)))
      incumbent = std::move(last);
  }
  if (static_cast<int>(incumbent.size()) != m.columns()) incumbent.clear();
  return incumbent;
}

// `result`'s solution, bound and status after CbcMain1 on `model`: `incumbent` is
// best_incumbent's, `cbc_bound` the bound the handler saw, `limit_hit` whether a simplex
// stop ended the search.
void settle_branch_and_cut(const Milp& m, const MilpOptions& o, const CbcModel& model,
                           std::vector<double> incumbent, double cbc_bound, bool limit_hit,
                           MilpResult* result) {
  const bool has_solution = !incumbent.empty();
  // An LP stopped at the deadline reads to CBC as infeasible (and then any incumbent as
  // optimal): only the incumbents and the bounds seen before it stand.
  const double search_bound =
      limit_hit ? cbc_bound : std::max(model.getBestPossibleObjValue(), result->lp_bound);
  if (has_solution) {
    result->values = std::move(incumbent);
    // Evaluated here: CBC's own value is 1e50 once an LP stopped at the deadline has
    // made it declare the program infeasible.
    result->objective = m.objective_of(result->values);
    result->bound = std::min(search_bound, result->objective);
  } else {  // CBC's own bound is only its tree's; the relaxation here is always solved
    result->bound = limit_hit ? cbc_bound : result->lp_bound;
  }
  if (limit_hit) {
    if (o.progress)
      report_progress(o.search_limit == SearchLimit::kWork
                          ? "solver: CBC stopped at its work limit (%lld simplex iterations)\n"
                          : "solver: CBC stopped at the time limit\n",
                      static_cast<long long>(result->simplex_iterations));
    result->status = has_solution ? MilpStatus::kFeasible : MilpStatus::kNoSolution;
  } else if (model.isProvenOptimal() && has_solution) {
    result->status = MilpStatus::kOptimal;
  } else if (model.isProvenInfeasible()) {
    result->status = MilpStatus::kInfeasible;
  } else {
    result->status = has_solution ? MilpStatus::kFeasible : MilpStatus::kNoSolution;
  }
}

// The warm start, or no solution, when the LP relaxation used the whole time limit: CBC
// would solve it again from scratch, with no time limit on that solve (minutes on
// DenseNet-sized programs).
MilpResult relaxation_only(const Milp& m, const MilpOptions& o, bool warm, MilpResult result) {
  if (warm) {
    result.values = o.warm_start;
    result.objective = m.objective_of(o.warm_start);
  }
  result.status = warm ? MilpStatus::kFeasible : MilpStatus::kNoSolution;
  result.bound = -std::numeric_limits<double>::infinity();  // none: gap unknown
  return result;
}

}  // namespace

MilpResult solve_milp(const Milp& m, const MilpOptions& o) {
  if (o.process == SolveProcess::kChild) return solve_milp_in_child(m, o);
  const auto t0 = Clock::now();
  const double limit = wall_limit(o.search_limit, o.time_limit_seconds);  // seconds
  MilpResult result;
  OsiClpSolverInterface lp;
  const bool warm = !o.warm_start.empty() && static_cast<int>(o.warm_start.size()) == m.columns();
  if (warm) {  // the warm start is the first incumbent, at the solver's start
    result.incumbent_trace.push_back({0.0, m.objective_of(o.warm_start)});
    result.first_incumbent_seconds = 0;
  }
  // The LP relaxation first, with CLP: it is the certified lower bound, and CBC starts
  // its root from this basis (CBC's own initial solve of these programs spent minutes in
  // primal clean-up; CLP's default solve takes seconds).
  load_program(m, &lp);
  if (o.primal_pricing == PrimalPricing::kDantzig) {
    ClpPrimalColumnDantzig dantzig;
    lp.getModelPtr()->setPrimalColumnPivotAlgorithm(dantzig);
  }
  const RelaxationBound root =
      solve_loaded_relaxation(&lp, relaxation_limit(m, o, o.time_limit_seconds), nullptr);
  record_relaxation(root, o.progress, &result);
  if (root.infeasible) {
    result.status = MilpStatus::kInfeasible;
    result.seconds = result.lp_seconds;
    return result;
  }
  if (!root.solved) return finished(relaxation_only(m, o, warm, std::move(result)), t0, o.progress);
  for (int c = 0; c < m.columns(); ++c)
    if (m.integer_[c]) lp.setInteger(c);
  CbcModel model(lp);
  model.messageHandler()->setLogLevel(0);
  if (warm) {
    model.setBestSolution(o.warm_start.data(), m.columns(), m.objective_of(o.warm_start), true);
  }
  std::vector<double> incumbent = warm ? o.warm_start : std::vector<double>();
  double cbc_bound = result.lp_bound;
  // CBC checks its own limit only between nodes, and CbcMain1 solves the root LP again
  // from a basis it no longer takes as optimal (50-90 s of primal simplex on ResNet-50):
  // every simplex iteration inside CBC, its heuristics' included, stops at the deadline,
  // or under the work limit once the search has made its budget of iterations (a node's
  // LP on some programs runs for seconds: a node count alone does not bound the time).
  std::atomic<bool> limit_hit(false);
  std::atomic<int64_t> iterations(0);
  const int64_t budget = o.search_limit == SearchLimit::kWork
                             ? work_iterations(m, o, o.time_limit_seconds, o.search_work_per_second)
                             : kNoIterationLimit;
  ProgressHandler handler(o.progress, t0, limit, &limit_hit, &result, &incumbent, &cbc_bound,
                          o.on_incumbent);
  model.passInEventHandler(&handler);
  const SimplexStop clock(nullptr,
                          std::isfinite(limit) ? t0 + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(limit))
                                               : Clock::time_point::max(),
                          &limit_hit, &iterations, budget);
  if (auto* clp = dynamic_cast<OsiClpSolverInterface*>(model.solver()))
    clp->getModelPtr()->passInEventHandler(&clock);
  CbcSolverUsefulData data;
  CbcMain0(model, data);
  model.messageHandler()->setLogLevel(0);
  const std::vector<std::string> args = cbc_arguments(m, o, limit, result.lp_seconds);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  CbcMain1(
      static_cast<int>(argv.size()), argv.data(), model, [](CbcModel*, int) { return 0; }, data);
  result.simplex_iterations = iterations.load();
  if (o.progress)
    report_progress("solver: branch and cut: %lld simplex iterations, %lld nonzeros, %.1f s\n",
                    static_cast<long long>(result.simplex_iterations),
                    static_cast<long long>(m.nonzeros()),
                    std::chrono::duration<double>(Clock::now() - t0).count() - result.lp_seconds);
  settle_branch_and_cut(m, o, model, best_incumbent(m, o, warm, std::move(incumbent), model),
                        cbc_bound, limit_hit, &result);
  return finished(std::move(result), t0, o.progress);
}

}  // namespace monet
