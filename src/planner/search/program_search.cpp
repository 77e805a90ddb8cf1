#include "planner/search/program_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>

#include "base/progress.h"

namespace monet {

MilpResult search_program(const Milp& m, const SearchOptions& o, const SearchPolicy& policy) {
  const bool warm = !o.warm_start.empty() && static_cast<int>(o.warm_start.size()) == m.columns();
  if (!warm || policy.strategy != SearchStrategy::kNeighbourhood) return solve_milp(m, o);
  const auto t0 = std::chrono::steady_clock::now();
  const TimeBudget time(o.search_limit, o.time_limit_seconds);
  MilpResult result;
  // The warm start is the first incumbent, at the search's start.
  result.incumbent_trace.push_back({0.0, m.objective_of(o.warm_start)});
  result.first_incumbent_seconds = 0;
  std::atomic<bool> stop_relaxation(false);
  // The LP relaxation (the certified bound, and the relaxation neighbourhood's fixings) on
  // a thread of its own while the neighbourhood search improves the warm start on this
  // one; recorded and reported (not one given ready, unsolved and taking no time: none was
  // wanted).
  std::shared_future<RelaxationBound> relaxation =
      std::async(std::launch::async, [&] {
        RelaxationBound r = o.relaxation.valid()
                                ? o.relaxation.get()
                                : solve_relaxation(m, relaxation_limit(m, o, o.time_limit_seconds),
                                                   &stop_relaxation);
        result.lp_seconds = r.seconds;
        if (r.solved) result.lp_bound = r.bound;
        if (!o.progress || !(r.solved || r.infeasible || r.seconds > 0)) return r;
        if (r.solved)
          report_progress("solver: %7.1f s  LP relaxation solved, bound %.6g\n", r.seconds,
                          r.bound);
        else
          report_progress("solver: %7.1f s  LP relaxation %s\n", r.seconds,
                          r.infeasible ? "infeasible: no plan of the program fits the budget"
                          : stop_relaxation.load() ? "stopped with the search (no bound)"
                                                   : "stopped at the time limit (no bound)");
        return r;
      }).share();
  NeighbourhoodSearch s =
      neighbourhood_search(m, o.warm_start, relaxation, time, o, o.neighbourhood, &result);
  stop_relaxation = true;  // e.g. at the neighbourhood options' stop_objective
  relaxation.wait();
  result.values = std::move(s.values);
  result.objective = s.objective;
  result.neighbourhoods = s.rounds;
  const double bound = std::max(s.bound, result.lp_bound);
  result.bound =
      bound > -1e300 ? std::min(bound, result.objective) : -std::numeric_limits<double>::infinity();
  result.status = result.objective <= result.bound ? MilpStatus::kOptimal : MilpStatus::kFeasible;
  return finished(std::move(result), t0, o.progress);
}

MilpResult search_program(const Milp& m, const SearchOptions& o) {
  return search_program(m, o, search_policy(m.columns(), o));
}

}  // namespace monet
