#include "planner/neighbourhood_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace monet {
namespace {

// The windows of positions the sub-programs free: consecutive positions, swept with
// half-overlap from the first position to the last; a sweep without a better solution
// doubles the width, until a window spans every position twice.
class WindowSequence {
 public:
  explicit WindowSequence(const std::vector<int>& positions) : positions_(positions) {
    for (int p : positions_) places_ = std::max(places_, p + 1);
    width_ = std::max(2, places_ / 48);
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

  /// Moves on after a sub-program solved with (`improved`) or without a better solution.
  void advance(bool improved) {
    improved_in_sweep_ = improved_in_sweep_ || improved;
    start_ += std::max(1, width_ / 2);
    if (start_ < places_) return;
    start_ = 0;
    if (!improved_in_sweep_) width_ *= 2;
    improved_in_sweep_ = false;
  }

 private:
  std::vector<int> positions_;
  int places_ = 0, width_ = 0, start_ = 0;
  bool improved_in_sweep_ = false;
};

}  // namespace

NeighbourhoodSearch neighbourhood_search(const Milp& milp, std::vector<double> incumbent,
                                         const std::shared_future<RelaxationBound>& relaxation,
                                         std::chrono::steady_clock::time_point t0, double deadline,
                                         const MilpOptions& options, MilpResult* result) {
  using Clock = std::chrono::steady_clock;
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const auto ready = [&] {
    return relaxation.valid() &&
           relaxation.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  };
  // The solved relaxation, once it is ready; null before and when it did not solve.
  const auto lp = [&]() -> const RelaxationBound* {
    return ready() && relaxation.get().solved ? &relaxation.get() : nullptr;
  };
  const auto gap = [&](double objective) {
    const RelaxationBound* r = lp();
    const double bound = r ? r->bound : -std::numeric_limits<double>::infinity();
    return (objective - bound) / std::max(1e-12, std::fabs(objective));
  };
  NeighbourhoodSearch out;
  out.values = std::move(incumbent);
  out.objective = milp.objective_of(out.values);
  int integers = 0;
  for (int c = 0; c < milp.columns(); ++c) integers += milp.is_integer(c);
  std::vector<int> positions = options.column_positions;
  if (static_cast<int>(positions.size()) != milp.columns()) {
    positions.resize(milp.columns());
    for (int c = 0; c < milp.columns(); ++c) positions[c] = c;
  }
  // Solves the restriction to the columns `fixed` leaves NaN (started from the incumbent
  // when `from_incumbent`) in at most `seconds`; keeps a better solution. Returns whether
  // it found one.
  const auto search = [&](const char* what, std::vector<double> fixed, double seconds,
                          bool from_incumbent) {
    int free_integers = 0;
    for (int c = 0; c < milp.columns(); ++c)
      free_integers += milp.is_integer(c) && std::isnan(fixed[c]);
    double offset = 0;
    const Milp sub = milp.without_fixed(&fixed, &offset);
    MilpOptions so;
    so.time_limit_seconds = seconds;
    so.relative_gap = options.relative_gap;
    so.threads = options.threads;
    so.search = MilpSearch::kBranchAndCut;
    if (from_incumbent)
      for (int c = 0; c < milp.columns(); ++c)
        if (std::isnan(fixed[c])) so.warm_start.push_back(out.values[c]);
    const MilpResult r = solve_milp(sub, so);
    ++out.rounds;
    const bool better =
        !r.values.empty() && r.objective + offset < out.objective - 1e-9 * std::fabs(out.objective);
    if (better) {
      for (int c = 0, s = 0; c < milp.columns(); ++c)
        out.values[c] = std::isnan(fixed[c]) ? r.values[s++] : fixed[c];
      out.objective = milp.objective_of(out.values);
      result->incumbent_trace.push_back({elapsed(), out.objective});
    }
    if (options.progress) {
      char gap_text[48] = "no bound yet";
      if (std::isfinite(gap(out.objective)))
        std::snprintf(gap_text, sizeof gap_text, "gap %.2f%%", 100 * gap(out.objective));
      std::fprintf(stderr,
                   "solver: %7.1f s  %s %d: %d of %d binaries free (%d columns), %s, "
                   "incumbent %.6g  %s\n",
                   elapsed(), what, out.rounds, free_integers, integers, sub.columns(),
                   better ? "better" : milp_status_name(r.status), out.objective, gap_text);
    }
    return better;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bool relaxation_neighbourhood_done = false;
  WindowSequence windows(positions);
  for (;;) {
    const double left = deadline - elapsed();
    if (left < 1.0 || gap(out.objective) <= options.relative_gap ||
        out.objective <= options.stop_objective)
      break;
    if (!relaxation_neighbourhood_done && lp() &&
        static_cast<int>(lp()->values.size()) == milp.columns()) {
      relaxation_neighbourhood_done = true;
      if (gap(out.objective) > kRelaxationNeighbourhoodGap) {
        // Integer columns the LP optimum sets whole keep that value; the others are free.
        std::vector<double> fixed(milp.columns(), nan);
        for (int c = 0; c < milp.columns(); ++c) {
          const double v = lp()->values[c];
          if (milp.is_integer(c) && std::fabs(v - std::round(v)) <= 1e-6) fixed[c] = std::round(v);
        }
        search("relaxation neighbourhood", std::move(fixed), std::max(1.0, left / 3),
               /*from_incumbent=*/false);
        continue;
      }
    }
    const std::vector<int> free = windows.next(milp);
    if (free.empty()) {
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
    windows.advance(search("neighbourhood", std::move(fixed),
                           std::min(left, std::max(5.0, left / 4)),
                           /*from_incumbent=*/true));
  }
  return out;
}

}  // namespace monet
