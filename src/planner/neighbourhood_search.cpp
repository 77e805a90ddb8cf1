#include "planner/neighbourhood_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <thread>

#include "base/progress.h"
#include "planner/child_solve.h"

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

}  // namespace

NeighbourhoodSearch neighbourhood_search(const Milp& milp, std::vector<double> incumbent,
                                         const std::shared_future<RelaxationBound>& relaxation,
                                         const SearchClock& clock, double deadline,
                                         const MilpOptions& solver,
                                         const NeighbourhoodOptions& options, MilpResult* result) {
  const auto elapsed = [&] { return clock.elapsed(); };
  // Under SearchLimit::kWork: the relaxation is awaited first and nothing runs on the second
  // core, so that the windows' sequence and results do not depend on timing.
  const bool one_core = solver.search_limit == SearchLimit::kWork;
  if (one_core && relaxation.valid()) relaxation.wait();
  const auto ready = [&] {
    return relaxation.valid() &&
           relaxation.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  };
  // The solved relaxation, once it is ready; null before and when it did not solve.
  const auto lp = [&]() -> const RelaxationBound* {
    return ready() && relaxation.get().solved ? &relaxation.get() : nullptr;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  NeighbourhoodSearch out;
  out.values = std::move(incumbent);
  out.objective = milp.objective_of(out.values);
  // The best certified bound: the LP relaxation's, or the whole program's branch and cut's.
  const auto bound = [&] {
    const RelaxationBound* r = lp();
    return std::max(out.bound, r ? r->bound : out.bound);
  };
  const auto gap = [&](double objective) {
    return (objective - bound()) / std::max(1e-12, std::fabs(objective));
  };
  int integers = 0;
  for (int c = 0; c < milp.columns(); ++c) integers += milp.is_integer(c);
  std::vector<int> positions = options.column_positions;
  if (static_cast<int>(positions.size()) != milp.columns()) {
    positions.resize(milp.columns());
    for (int c = 0; c < milp.columns(); ++c) positions[c] = c;
  }
  // A restriction of the program: the columns `fixed` leaves NaN are free.
  struct Restriction {
    std::vector<double> fixed;  // as without_fixed() leaves it
    Milp sub;
    double offset = 0;  // the fixed columns' share of the objective
    int free_integers = 0;
    MilpOptions options;
  };
  // The restriction to the columns `fixed` leaves NaN, to solve in at most `seconds`
  // (started from the incumbent when `from_incumbent`).
  const auto restrict = [&](std::vector<double> fixed, double seconds, bool from_incumbent) {
    Restriction r;
    for (int c = 0; c < milp.columns(); ++c)
      r.free_integers += milp.is_integer(c) && std::isnan(fixed[c]);
    r.sub = milp.without_fixed(&fixed, &r.offset);
    r.options.time_limit_seconds = seconds;
    r.options.search_limit = solver.search_limit;
    r.options.max_nodes = solver.max_nodes;
    r.options.relaxation_work_per_second = solver.relaxation_work_per_second;
    r.options.search_work_per_second = solver.search_work_per_second;
    r.options.min_iterations = solver.min_iterations;
    r.options.relative_gap = solver.relative_gap;
    r.options.root_cuts_max_columns = solver.root_cuts_max_columns;
    r.options.threads = 1;  // the relaxation or the second core's search runs beside it
    if (from_incumbent)
      for (int c = 0; c < milp.columns(); ++c)
        if (std::isnan(fixed[c])) r.options.warm_start.push_back(out.values[c]);
    r.fixed = std::move(fixed);
    return r;
  };
  // The whole solution a restriction's solution `values` stands for.
  const auto whole = [&](const Restriction& r, const std::vector<double>& values) {
    std::vector<double> x = r.fixed;
    for (int c = 0, s = 0; c < milp.columns(); ++c)
      if (std::isnan(r.fixed[c])) x[c] = values[s++];
    return x;
  };
  const auto better_than_incumbent = [&](double objective) {
    return objective < out.objective - 1e-9 * std::fabs(out.objective);
  };
  const auto accept = [&](std::vector<double> x) {
    out.values = std::move(x);
    out.objective = milp.objective_of(out.values);
    result->incumbent_trace.push_back({clock.wall_seconds(), out.objective});
  };
  const auto report = [&](const char* what, const Restriction& r, const char* outcome) {
    if (!solver.progress) return;
    char gap_text[48] = "no bound yet";
    if (std::isfinite(gap(out.objective)))
      std::snprintf(gap_text, sizeof gap_text, "gap %.2f%%", 100 * gap(out.objective));
    report_progress(
        "solver: %7.1f s  %s %d: %d of %d binaries free (%d columns), %s, "
        "incumbent %.6g  %s\n",
        clock.wall_seconds(), what, out.rounds, r.free_integers, integers, r.sub.columns(), outcome,
        out.objective, gap_text);
  };
  // Solves a restriction here; keeps a better solution. Returns whether it found one.
  const auto search = [&](const char* what, Restriction r) {
    const MilpResult s = solve_milp(r.sub, r.options);
    ++out.rounds;
    const bool better = !s.values.empty() && better_than_incumbent(s.objective + r.offset);
    if (better) accept(whole(r, s.values));
    report(what, r, better ? "better" : milp_status_name(s.status));
    return better;
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
  std::unique_ptr<ChildSearch> child;
  const auto launch = [&](Restriction r, bool whole_program) {
    child.reset(new ChildSearch{std::move(r), out.values, whole_program, nullptr});
    child->solve.reset(new ChildSolve(child->restriction.sub, child->restriction.options));
  };
  // The incumbent with the integer columns where `x` differs from `base` set to x's, and the
  // continuous columns that follows (an LP, when fixing does not determine them all); empty
  // when that is infeasible.
  const auto with_changes = [&](const std::vector<double>& x, const std::vector<double>& base) {
    std::vector<double> fixed(milp.columns(), nan);
    for (int c = 0; c < milp.columns(); ++c)
      if (milp.is_integer(c)) fixed[c] = std::round(x[c] != base[c] ? x[c] : out.values[c]);
    double offset = 0;
    const Milp rest = milp.without_fixed(&fixed, &offset);
    if (rest.columns() > 0) {
      const RelaxationBound lp =
          solve_relaxation(rest, relaxation_limit(rest, solver, options.merge_lp_seconds), nullptr);
      if (!lp.solved) return std::vector<double>();
      for (int c = 0, s = 0; c < milp.columns(); ++c)
        if (std::isnan(fixed[c])) fixed[c] = lp.values[s++];
    }
    return milp.satisfies(fixed) ? fixed : std::vector<double>();
  };
  // Takes the child's solution `values` (of its restriction): its changes to the incumbent
  // it started from, applied to the incumbent, or the whole solution when that is better
  // still. Returns whether the incumbent improved.
  const auto take = [&](const std::vector<double>& values) {
    const std::vector<double> x = whole(child->restriction, values);
    const double objective = milp.objective_of(x);
    if (!(objective < milp.objective_of(child->base) - 1e-9 * std::fabs(objective))) return false;
    std::vector<double> merged = child->base == out.values ? x : with_changes(x, child->base);
    if (!merged.empty() && better_than_incumbent(milp.objective_of(merged))) {
      accept(std::move(merged));
      return true;
    }
    if (!better_than_incumbent(objective)) return false;
    accept(x);
    return true;
  };
  const char* const whole_search = "branch and cut (second core)";
  // Takes the child's result (waiting for it). Returns whether the incumbent improved.
  const auto absorb_child = [&] {
    const MilpResult s = child->solve->wait();
    ++out.rounds;
    // The whole program's bound, proven by its branch and cut (before any deadline).
    if (child->whole && (s.status == MilpStatus::kOptimal || s.status == MilpStatus::kFeasible))
      out.bound = std::max(out.bound, s.bound);
    const bool better = !s.values.empty() && take(s.values);
    report(child->whole ? whole_search : "neighbourhood (second core)", child->restriction,
           better ? "better" : milp_status_name(s.status));
    child.reset();
    return better;
  };
  // Takes a newer incumbent of the child's branch and cut, if any.
  const auto poll_child = [&] {
    std::vector<double> values;
    if (!child || !child->whole || !child->solve->newer_incumbent(&values) || !take(values))
      return false;
    report(whole_search, child->restriction, "better (under way)");
    return true;
  };
  bool relaxation_neighbourhood_done = false;
  WindowSequence windows(positions, options.initial_windows);
  bool out_of_time = false, whole_search_started = false;
  for (;;) {
    if (poll_child()) windows.restart();
    if (child && child->solve->finished() && absorb_child()) windows.restart();
    const double left = deadline - elapsed();
    out_of_time = left < 1.0 || (one_core && out.rounds >= options.work_rounds);
    if (out_of_time || gap(out.objective) <= solver.relative_gap ||
        out.objective <= options.stop_objective)
      break;
    if (!relaxation_neighbourhood_done && lp() &&
        static_cast<int>(lp()->values.size()) == milp.columns()) {
      relaxation_neighbourhood_done = true;
      if (gap(out.objective) > options.relaxation_neighbourhood_gap) {
        // Integer columns the LP optimum sets whole keep that value; the others are free.
        std::vector<double> fixed(milp.columns(), nan);
        for (int c = 0; c < milp.columns(); ++c) {
          const double v = lp()->values[c];
          if (milp.is_integer(c) && std::fabs(v - std::round(v)) <= 1e-6) fixed[c] = std::round(v);
        }
        search(
            "relaxation neighbourhood",
            restrict(std::move(fixed), std::max(1.0, left * options.relaxation_neighbourhood_share),
                     /*from_incumbent=*/false));
        continue;
      }
    }
    if (!one_core && !child && !whole_search_started && lp() &&
        left > options.whole_search_relaxations * lp()->seconds) {
      whole_search_started = true;
      // Time for CBC to solve the root again and run its heuristics: the whole program's
      // branch and cut on the second core for the rest of the time.
      launch(restrict(std::vector<double>(milp.columns(), nan), left - 0.5,
                      /*from_incumbent=*/true),
             /*whole_program=*/true);
      continue;
    }
    const std::vector<int> free = windows.next(milp);
    if (free.empty()) {
      if (child && child->whole) {  // its incumbents may start the windows again
        if (!child->solve->finished())
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        else if (absorb_child())
          windows.restart();
        continue;
      }
      if (child) {  // a window: its result, before the search ends
        absorb_child();
        continue;
      }
      // Windows exhausted: only the relaxation neighbourhood is left, once the LP is solved.
      if (relaxation_neighbourhood_done || !relaxation.valid() || ready()) break;
      relaxation.wait_for(std::chrono::duration<double>(left - 1.0));
      continue;
    }
    // Every integer column outside the window keeps the incumbent's value.
    std::vector<double> fixed(milp.columns(), nan);
    for (int c = 0; c < milp.columns(); ++c)
      if (milp.is_integer(c)) fixed[c] = std::round(out.values[c]);
    for (int c : free) fixed[c] = nan;
    const double limit =
        std::min(left, std::max(options.window_min_seconds, left * options.window_share));
    Restriction r = restrict(std::move(fixed), limit, /*from_incumbent=*/true);
    if (!one_core && !child && ready()) {
      launch(std::move(r), /*whole_program=*/false);
      windows.advance(false);  // a better result restarts the windows when it comes
      continue;
    }
    windows.advance(search("neighbourhood", std::move(r)));
  }
  if (child && child->whole) {
    poll_child();  // its last incumbent; the search itself ends with the child
  } else if (child && out_of_time) {
    absorb_child();  // a window ends within its own limit
  }                  // else the search stopped early (gap reached): the child is not needed
  return out;
}

}  // namespace monet
