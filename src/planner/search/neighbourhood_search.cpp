#include "planner/search/neighbourhood_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <thread>

#include "base/progress.h"
#include "planner/solver/child_solve.h"

namespace monet {
namespace {

// The windows of positions the sub-programs free: consecutive positions, swept with
// half-overlap from the first position to the last and on from the first again. Once
// every window of a width has been solved without a better solution since the last one,
// the incumbent is optimal in all of them and the width doubles, until a window spans
// every position twice.
class WindowSequence {
 public:
  WindowSequence(const std::vector<int>& positions, int initial_windows) : positions_(positions) {
    for (int p : positions_) places_ = std::max(places_, p + 1);
    width_ = initial_width_ = std::max(2, places_ / std::max(1, initial_windows));
  }

  /// Columns to free (integer columns only); empty when the sequence is exhausted.
  std::vector<int> next(const Milp& milp) const {
    std::vector<int> out;
    if (width_ > 2 * places_) return out;
    for (int c = 0; c < milp.columns(); ++c)
      if (milp.is_integer(c) && positions_[c] >= start_ && positions_[c] < start_ + width_)
        out.push_back(c);
    return out;
  }

  /// Starts again with the narrowest windows (after a better solution from elsewhere).
  void restart() {
    width_ = initial_width_;
    start_ = 0;
    unimproved_ = 0;
  }

  /// Moves on after a sub-program solved with (`improved`) or without a better solution.
  void advance(bool improved) {
    unimproved_ = improved ? 0 : unimproved_ + 1;
    start_ += step();
    if (start_ >= places_) start_ = 0;
    if (unimproved_ < windows_per_sweep()) return;
    width_ *= 2;  // every window of this width is solved from the incumbent
    start_ = 0;
    unimproved_ = 0;
  }

 private:
  int step() const { return std::max(1, width_ / 2); }
  int windows_per_sweep() const { return (places_ + step() - 1) / step(); }

  std::vector<int> positions_;
  int places_ = 0, width_ = 0, initial_width_ = 0, start_ = 0;
  int unimproved_ = 0;  // windows solved since the last better solution
};

// A restriction of the program: the columns `fixed` leaves NaN are free.
struct Restriction {
  std::vector<double> fixed;  // as without_fixed() leaves it
  Milp sub;
  double offset = 0;  // the fixed columns' share of the objective
  int free_integers = 0;
  MilpOptions options;
};

// The search on the second core (free once the LP relaxation is ready), in a child
// process: a window, or the branch and cut over the whole program. `base` is the
// incumbent it started from (this core's windows may have changed the incumbent since).
struct ChildSearch {
  Restriction restriction;
  std::vector<double> base;
  bool whole = false;
  std::unique_ptr<ChildSolve> solve;
};

const char* const kWholeSearch = "branch and cut (second core)";

// One neighbourhood search (neighbourhood_search's arguments): the incumbent, the
// relaxation's bound, the window sequence and the second core's search.
class NeighbourhoodSearcher {
 public:
  NeighbourhoodSearcher(const Milp& milp, std::vector<double> incumbent,
                        const std::shared_future<RelaxationBound>& relaxation,
                        const TimeBudget& time, const MilpOptions& solver,
                        const NeighbourhoodOptions& options, MilpResult* result);
  NeighbourhoodSearch run();

 private:
  bool ready() const;
  const RelaxationBound* lp() const;
  double bound() const;
  double gap(double objective) const;
  Restriction restrict(std::vector<double> fixed, double seconds, bool from_incumbent) const;
  std::vector<double> whole(const Restriction& r, const std::vector<double>& values) const;
  bool better_than_incumbent(double objective) const;
  void accept(std::vector<double> x);
  void report(const char* what, const Restriction& r, const char* outcome) const;
  bool search(const char* what, Restriction r);
  void launch(Restriction r, bool whole_program);
  std::vector<double> with_changes(const std::vector<double>& x,
                                   const std::vector<double>& base) const;
  bool take(const std::vector<double>& values);
  bool absorb_child();
  bool poll_child();
  bool relaxation_neighbourhood();
  bool start_whole_search(double left);
  bool wait_after_windows(double left, WindowSequence* windows);
  std::vector<double> window_fixing(const std::vector<int>& free) const;

  const Milp& milp_;
  const std::shared_future<RelaxationBound>& relaxation_;
  const TimeBudget& time_;
  const MilpOptions& solver_;
  const NeighbourhoodOptions& options_;
  MilpResult* result_;
  // Under SearchLimit::kWork: the relaxation is awaited first and nothing runs on the second
  // core, so that the windows' sequence and results do not depend on timing.
  const bool one_core_;
  NeighbourhoodSearch out_;
  int integers_ = 0;
  std::vector<int> positions_;
  std::unique_ptr<ChildSearch> child_;
  bool relaxation_neighbourhood_done_ = false;
  bool whole_search_started_ = false;
};

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

NeighbourhoodSearcher::NeighbourhoodSearcher(const Milp& milp, std::vector<double> incumbent,
                                             const std::shared_future<RelaxationBound>& relaxation,
                                             const TimeBudget& time, const MilpOptions& solver,
                                             const NeighbourhoodOptions& options,
                                             MilpResult* result)
    : milp_(milp),
      relaxation_(relaxation),
      time_(time),
      solver_(solver),
      options_(options),
      result_(result),
      one_core_(solver.search_limit == SearchLimit::kWork),
      positions_(options.column_positions) {
  if (one_core_ && relaxation_.valid()) relaxation_.wait();
  out_.values = std::move(incumbent);
  out_.objective = milp_.objective_of(out_.values);
  for (int c = 0; c < milp_.columns(); ++c) integers_ += milp_.is_integer(c);
  if (static_cast<int>(positions_.size()) != milp_.columns()) {
    positions_.resize(milp_.columns());
    for (int c = 0; c < milp_.columns(); ++c) positions_[c] = c;
  }
}

bool NeighbourhoodSearcher::ready() const {
  return relaxation_.valid() &&
         relaxation_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// The solved relaxation, once it is ready; null before and when it did not solve.
const RelaxationBound* NeighbourhoodSearcher::lp() const {
  return ready() && relaxation_.get().solved ? &relaxation_.get() : nullptr;
}

// The best certified bound: the LP relaxation's, or the whole program's branch and cut's.
double NeighbourhoodSearcher::bound() const {
  const RelaxationBound* r = lp();
  return std::max(out_.bound, r ? r->bound : out_.bound);
}

double NeighbourhoodSearcher::gap(double objective) const {
  return (objective - bound()) / std::max(1e-12, std::fabs(objective));
}

// The restriction to the columns `fixed` leaves NaN, to solve in at most `seconds`
// (started from the incumbent when `from_incumbent`).
Restriction NeighbourhoodSearcher::restrict(std::vector<double> fixed, double seconds,
                                            bool from_incumbent) const {
  Restriction r;
  for (int c = 0; c < milp_.columns(); ++c)
    r.free_integers += milp_.is_integer(c) && std::isnan(fixed[c]);
  r.sub = milp_.without_fixed(&fixed, &r.offset);
  r.options.time_limit_seconds = seconds;
  r.options.search_limit = solver_.search_limit;
  r.options.max_nodes = solver_.max_nodes;
  r.options.relaxation_work_per_second = solver_.relaxation_work_per_second;
  r.options.search_work_per_second = solver_.search_work_per_second;
  r.options.min_iterations = solver_.min_iterations;
  r.options.relative_gap = solver_.relative_gap;
  r.options.root_cuts_max_columns = solver_.root_cuts_max_columns;
  r.options.presolve_max_nonzeros = solver_.presolve_max_nonzeros;
  r.options.threads = 1;  // the relaxation or the second core's search runs beside it
  if (from_incumbent)
    for (int c = 0; c < milp_.columns(); ++c)
      if (std::isnan(fixed[c])) r.options.warm_start.push_back(out_.values[c]);
  r.fixed = std::move(fixed);
  return r;
}

// The whole solution a restriction's solution `values` stands for.
std::vector<double> NeighbourhoodSearcher::whole(const Restriction& r,
                                                 const std::vector<double>& values) const {
  std::vector<double> x = r.fixed;
  for (int c = 0, s = 0; c < milp_.columns(); ++c)
    if (std::isnan(r.fixed[c])) x[c] = values[s++];
  return x;
}

bool NeighbourhoodSearcher::better_than_incumbent(double objective) const {
  return objective < out_.objective - 1e-9 * std::fabs(out_.objective);
}

void NeighbourhoodSearcher::accept(std::vector<double> x) {
  out_.values = std::move(x);
  out_.objective = milp_.objective_of(out_.values);
  result_->incumbent_trace.push_back({time_.clock().wall_seconds(), out_.objective});
}

void NeighbourhoodSearcher::report(const char* what, const Restriction& r,
                                   const char* outcome) const {
  if (!solver_.progress) return;
  char gap_text[48] = "no bound yet";
  if (std::isfinite(gap(out_.objective)))
    std::snprintf(gap_text, sizeof gap_text, "gap %.2f%%", 100 * gap(out_.objective));
  report_progress(
      "solver: %7.1f s  %s %d: %d of %d binaries free (%d columns), %s, "
      "incumbent %.6g  %s\n",
      time_.clock().wall_seconds(), what, out_.rounds, r.free_integers, integers_, r.sub.columns(),
      outcome, out_.objective, gap_text);
}

// Solves a restriction here; keeps a better solution. Returns whether it found one.
bool NeighbourhoodSearcher::search(const char* what, Restriction r) {
  const MilpResult s = solve_milp(r.sub, r.options);
  ++out_.rounds;
  const bool better = !s.values.empty() && better_than_incumbent(s.objective + r.offset);
  if (better) accept(whole(r, s.values));
  report(what, r, better ? "better" : milp_status_name(s.status));
  return better;
}

void NeighbourhoodSearcher::launch(Restriction r, bool whole_program) {
  child_.reset(new ChildSearch{std::move(r), out_.values, whole_program, nullptr});
  child_->solve.reset(new ChildSolve(child_->restriction.sub, child_->restriction.options));
}

// The incumbent with the integer columns where `x` differs from `base` set to x's, and the
// continuous columns that follows (an LP, when fixing does not determine them all); empty
// when that is infeasible.
std::vector<double> NeighbourhoodSearcher::with_changes(const std::vector<double>& x,
                                                        const std::vector<double>& base) const {
  std::vector<double> fixed(milp_.columns(), kNan);
  for (int c = 0; c < milp_.columns(); ++c)
    if (milp_.is_integer(c)) fixed[c] = std::round(x[c] != base[c] ? x[c] : out_.values[c]);
  double offset = 0;
  const Milp rest = milp_.without_fixed(&fixed, &offset);
  if (rest.columns() > 0) {
    const RelaxationBound lp =
        solve_relaxation(rest, relaxation_limit(rest, solver_, options_.merge_lp_seconds), nullptr);
    if (!lp.solved) return std::vector<double>();
    for (int c = 0, s = 0; c < milp_.columns(); ++c)
      if (std::isnan(fixed[c])) fixed[c] = lp.values[s++];
  }
  return milp_.satisfies(fixed) ? fixed : std::vector<double>();
}

// Takes the child's solution `values` (of its restriction): its changes to the incumbent
// it started from, applied to the incumbent, or the whole solution when that is better
// still. Returns whether the incumbent improved.
bool NeighbourhoodSearcher::take(const std::vector<double>& values) {
  const std::vector<double> x = whole(child_->restriction, values);
  const double objective = milp_.objective_of(x);
  if (!(objective < milp_.objective_of(child_->base) - 1e-9 * std::fabs(objective))) return false;
  std::vector<double> merged = child_->base == out_.values ? x : with_changes(x, child_->base);
  if (!merged.empty() && better_than_incumbent(milp_.objective_of(merged))) {
    accept(std::move(merged));
    return true;
  }
  if (!better_than_incumbent(objective)) return false;
  accept(x);
  return true;
}

// Takes the child's result (waiting for it). Returns whether the incumbent improved.
bool NeighbourhoodSearcher::absorb_child() {
  const MilpResult s = child_->solve->wait();
  ++out_.rounds;
  // The whole program's bound, proven by its branch and cut (before any deadline).
  if (child_->whole && (s.status == MilpStatus::kOptimal || s.status == MilpStatus::kFeasible))
    out_.bound = std::max(out_.bound, s.bound);
  const bool better = !s.values.empty() && take(s.values);
  report(child_->whole ? kWholeSearch : "neighbourhood (second core)", child_->restriction,
         better ? "better" : milp_status_name(s.status));
  child_.reset();
  return better;
}

// Takes a newer incumbent of the child's branch and cut, if any.
bool NeighbourhoodSearcher::poll_child() {
  std::vector<double> values;
  if (!child_ || !child_->whole || !child_->solve->newer_incumbent(&values) || !take(values))
    return false;
  report(kWholeSearch, child_->restriction, "better (under way)");
  return true;
}

// The relaxation neighbourhood, once, when the LP is solved and the gap is wide. Returns
// whether it ran.
bool NeighbourhoodSearcher::relaxation_neighbourhood() {
  if (relaxation_neighbourhood_done_ || !lp() ||
      static_cast<int>(lp()->values.size()) != milp_.columns())
    return false;
  relaxation_neighbourhood_done_ = true;
  if (gap(out_.objective) <= options_.relaxation_neighbourhood_gap) return false;
  // Integer columns the LP optimum sets whole keep that value; the others are free.
  std::vector<double> fixed(milp_.columns(), kNan);
  for (int c = 0; c < milp_.columns(); ++c) {
    const double v = lp()->values[c];
    if (milp_.is_integer(c) && std::fabs(v - std::round(v)) <= 1e-6) fixed[c] = std::round(v);
  }
  search(
      "relaxation neighbourhood",
      restrict(std::move(fixed), stage_seconds(time_.of(options_.relaxation_neighbourhood_share)),
               /*from_incumbent=*/false));
  return true;
}

// The whole program's branch and cut on the second core for the rest of the time, once,
// when there is time for CBC to solve the root again and run its heuristics. Returns
// whether it started.
bool NeighbourhoodSearcher::start_whole_search(double left) {
  if (one_core_ || child_ || whole_search_started_ || !lp() ||
      left <= options_.whole_search_relaxations * lp()->seconds)
    return false;
  whole_search_started_ = true;
  launch(restrict(std::vector<double>(milp_.columns(), kNan), left - 0.5,
                  /*from_incumbent=*/true),
         /*whole_program=*/true);
  return true;
}

// With the windows exhausted: waits for the second core's search or the relaxation (whose
// neighbourhood is left to try). Returns false when the search is over.
bool NeighbourhoodSearcher::wait_after_windows(double left, WindowSequence* windows) {
  if (child_ && child_->whole) {  // its incumbents may start the windows again
    if (!child_->solve->finished())
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    else if (absorb_child())
      windows->restart();
    return true;
  }
  if (child_) {  // a window: its result, before the search ends
    absorb_child();
    return true;
  }
  if (relaxation_neighbourhood_done_ || !relaxation_.valid() || ready()) return false;
  relaxation_.wait_for(std::chrono::duration<double>(left - 1.0));
  return true;
}

// Every integer column outside the window `free` keeps the incumbent's value.
std::vector<double> NeighbourhoodSearcher::window_fixing(const std::vector<int>& free) const {
  std::vector<double> fixed(milp_.columns(), kNan);
  for (int c = 0; c < milp_.columns(); ++c)
    if (milp_.is_integer(c)) fixed[c] = std::round(out_.values[c]);
  for (int c : free) fixed[c] = kNan;
  return fixed;
}

NeighbourhoodSearch NeighbourhoodSearcher::run() {
  WindowSequence windows(positions_, options_.initial_windows);
  bool out_of_time = false;
  for (;;) {
    if (poll_child()) windows.restart();
    if (child_ && child_->solve->finished() && absorb_child()) windows.restart();
    const double left = time_.left();
    out_of_time = left < kMinimumStageSeconds || (one_core_ && out_.rounds >= options_.work_rounds);
    if (out_of_time || gap(out_.objective) <= solver_.relative_gap ||
        out_.objective <= options_.stop_objective)
      break;
    if (relaxation_neighbourhood() || start_whole_search(left)) continue;
    const std::vector<int> free = windows.next(milp_);
    if (free.empty()) {
      if (!wait_after_windows(left, &windows)) break;
      continue;
    }
    const double limit =
        std::min(left, std::max(options_.window_min_seconds, time_.of(options_.window_share)));
    Restriction r = restrict(window_fixing(free), limit, /*from_incumbent=*/true);
    if (!one_core_ && !child_ && ready()) {
      launch(std::move(r), /*whole_program=*/false);
      windows.advance(false);  // a better result restarts the windows when it comes
      continue;
    }
    windows.advance(search("neighbourhood", std::move(r)));
  }
  if (child_ && child_->whole) {
    poll_child();  // its last incumbent; the search itself ends with the child
  } else if (child_ && out_of_time) {
    absorb_child();  // a window ends within its own limit
  }                  // else the search stopped early (gap reached): the child is not needed
  return std::move(out_);
}

}  // namespace

NeighbourhoodSearch neighbourhood_search(const Milp& milp, std::vector<double> incumbent,
                                         const std::shared_future<RelaxationBound>& relaxation,
                                         const TimeBudget& time, const MilpOptions& solver,
                                         const NeighbourhoodOptions& options, MilpResult* result) {
  return NeighbourhoodSearcher(milp, std::move(incumbent), relaxation, time, solver, options,
                               result)
      .run();
}

}  // namespace monet
