// The MONeT planner: one 0-1 program (paper Section 4, Appendices B-D) chooses jointly
// which activations each backward stage keeps (s) or recomputes (r), which forward
// implementation every operator uses in the forward pass (delta), and which backward
// implementation every backward step uses (delta-hat), under a peak-memory budget, at
// the least profiled time. plan_monet() is a pipeline: heuristic plans (segment keeping,
// chain checkpointing; on small programs also the recomputation-first plan) -> the
// program and its bound (the LP relaxation) -> a warm start
// (the fastest heuristic plan the program accepts, else the elastic program's search on
// large programs; small ones are searched from no plan) ->
// the search (program_search.h) -> decode and check with the simulator; when the exact
// peak exceeds the budget the program is solved again with the budget lowered by the
// excess.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "cost/simulator.h"
#include "plan/plan.h"
#include "planner/program/monet_mode.h"
#include "planner/search/program_search.h"
#include "planner/solver/time_budget.h"

namespace monet {

/// What the planner does when no heuristic plan fits the program's memory rows (they
/// bound the simulated peak from above).
enum class NoFittingHeuristic {
  /// The program that models every intermediate exactly and recomputes in place where
  /// possible (larger; its LP slower) takes its place if it accepts one (it expresses
  /// chain checkpointing's schedules, whose recomputations emit the ReLUs' 1-bit masks
  /// again); else the elastic search.
  kExactProgramThenElastic,
  kElastic,  // the elastic search's plan
};

/// What the planner does when its program, every recomputation out of place, is proven to
/// have no plan within the budget.
enum class InfeasibleSmallProgram {
  /// On programs of at most SearchOptions::neighbourhood_min_columns columns: the program
  /// that also recomputes ReLUs and adds in place where possible (Recomputations) is
  /// searched in the time left; its plans recompute a ReLU over the recomputed convolution's
  /// output and keep its 1-bit mask for the backward, and meet budgets the out-of-place
  /// program has no plan for (docs/PLANNER.md, "Why the defaults").
  kRecomputeInPlace,
  kNoPlan,  // no plan
};

/// What the planner does when no heuristic plan fits a program of at most
/// SearchOptions::neighbourhood_min_columns columns (and the exact program accepts none).
enum class SmallProgramFirstFit {
  /// CBC's branch and cut over the program from no plan, with the whole time left: its own
  /// heuristics find a first plan within the budget where the elastic search stalls far
  /// above it (docs/PLANNER.md, "Why the defaults").
  kBranchAndCut,
  kElastic,  // the elastic search's plan as the warm start, as on larger programs
};

/// Where plan_monet's heuristic plans come from.
enum class HeuristicPlansSource {
  kRun,            // segment keeping and chain checkpointing, and MonetOptions::warm_plans
  kWarmPlansOnly,  // MonetOptions::warm_plans alone (e.g. plans found for the same budget)
};

struct MonetOptions {
  int64_t budget_bytes = 0;  // absolute peak allowed for the iteration (bytes)
  MonetMode mode = MonetMode::kAll;
  /// The search: time limit of the whole planner (seconds), gap, strategy, threads.
  SearchOptions solver;
  int max_corrections = 3;  // re-solves with a lowered budget when the simulated peak exceeds it
  /// Plans to start the solver from when the program accepts them (besides store-all and
  /// Chen): e.g. the minimum-budget plan, or a plan solved before. In MonetMode::kAll, one
  /// whose simulated peak fits the budget is also the answer when nothing faster is found.
  std::vector<Plan> warm_plans;
  HeuristicPlansSource heuristics = HeuristicPlansSource::kRun;
  /// The stages' limits (time_budget.h) are shares of solver.time_limit_seconds, the whole
  /// planner's limit; their sum may exceed 1 because each is within what is left.
  /// Segment keeping's limit.
  TimeShare segment_keeping_share{1.0 / 6, ShareBase::kWholeLimit};
  /// Chain checkpointing's limit (the simulations of its schedules and their
  /// rematerialization) where segment keeping has a plan within the budget.
  TimeShare chain_checkpointing_share{1.0 / 6, ShareBase::kWholeLimit};
  /// Chain checkpointing's limit where segment keeping has none: lowering a fast schedule
  /// into a tight budget takes long on large models (docs/PLANNER.md, "Why the defaults").
  TimeShare tight_chain_checkpointing_share{0.55, ShareBase::kWholeLimit};
  /// Intermediates of at least this fraction of their node's output bytes are modelled
  /// exactly in the program (MonetProgramOptions::exact_intermediate_min_fraction).
  double exact_intermediate_min_fraction = kExactIntermediateMinFraction;
  Recomputations recomputations = Recomputations::kOutOfPlace;  // of the program
  InfeasibleSmallProgram infeasible_small_program = InfeasibleSmallProgram::kRecomputeInPlace;
  /// The default: at tight budgets the exact program's plans are faster (predicted) than the
  /// elastic search's (docs/PLANNER.md, "Why the defaults").
  NoFittingHeuristic no_fitting_heuristic = NoFittingHeuristic::kExactProgramThenElastic;
  SmallProgramFirstFit small_program_first_fit = SmallProgramFirstFit::kBranchAndCut;
  /// The recomputation-first plan's limit, within what is left less the return reserve: in
  /// MonetMode::kAll, on programs of at most solver.neighbourhood_min_columns columns
  /// searched by neighbourhoods (SearchOptions::small_program_neighbourhood_min_seconds),
  /// the program with every operator at its default implementation (what to keep and
  /// recompute alone, as Checkmate chooses) is searched first; its plan, each convolution
  /// then switched to the fastest algorithm that fits (as Checkmate-O), is a warm start of
  /// the whole program, whose search then chooses the other implementations, for faster
  /// plans than the whole program's search alone (docs/PLANNER.md, "Why the defaults").
  /// Fraction 0: none.
  TimeShare recomputation_first_share{0.25, ShareBase::kWholeLimit};
  /// The elastic search's limit (when no heuristic plan fits the program), within what is
  /// left less the return reserve.
  TimeShare elastic_share{0.5, ShareBase::kWholeLimit};
  /// The elastic search stops at excess 0 with a plan up to this many times slower than
  /// the plan it starts from.
  double elastic_slowdown = 10;
  /// The LP relaxation started beside the heuristics stops this long (seconds) before the
  /// time limit.
  double relaxation_reserve_seconds = 1.0;
  /// The search stops this long (seconds) before the time limit: CbcMain1 can take a while
  /// to return after its deadline on large programs (docs/PLANNER.md, "Why the defaults"),
  /// and decoding and simulating take the rest.
  double return_reserve_seconds = 2.0;
  /// A correction lowers the program's budget by the simulated excess and this margin more
  /// (bytes).
  int64_t correction_margin_bytes = 4096;
};

/// Where the plan plan_monet() returns comes from.
enum class PlanSource {
  kProgram,             // the program's solution
  kSegmentKeeping,      // segment keeping's plan (segment_keeping.h)
  kChainCheckpointing,  // chain checkpointing's plan (chain_checkpointing.h)
  kRecomputationFirst,  // the recomputation-first plan (MonetOptions::recomputation_first_share)
  kWarmPlan,            // one of MonetOptions::warm_plans (in MonetMode::kAll)
  kStoreAll,            // the store-all plan (in MonetMode::kAll, at budgets it fits)
};
/// "program", "segment keeping", "chain checkpointing", "recomputation first", "warm plan",
/// "store-all".
const char* plan_source_name(PlanSource source);

struct ProgramSize {
  int columns = 0;
  int rows = 0;
  int64_t nonzeros = 0;
};

struct MonetResult {
  bool found = false;  // a plan within the budget was found
  /// A heuristic's plan is returned when it is within the budget by the simulator and
  /// faster than any the program found (the program's memory rows, an upper bound on the
  /// simulated peak, may reject it); objective_seconds and solve.gap are then its
  /// simulated seconds and its gap to the program's bound. Heuristic plans are taken only
  /// in the mode that allows every implementation (they use any).
  PlanSource source = PlanSource::kProgram;
  Plan plan;
  SimulationResult predicted;  // the simulator's replay of the plan
  MilpResult solve;            // of the last solve
  ProgramSize size;
  /// What the last search started from ("the chain plan", "the elastic search's plan",
  /// with " (the program with every intermediate modelled exactly, recomputing in place)"
  /// when that program took the place of the planner's; "": no warm start).
  std::string warm_start;
  int solves = 0;                // 1 + budget corrections
  int64_t program_budget = 0;    // budget given to the last program (bytes)
  double objective_seconds = 0;  // the program's objective: profiled seconds
  double seconds = 0;            // wall time of plan_monet: programs, warm starts, solves
  /// No plan can peak lower than this (bytes): what is alive before the iteration, the
  /// parameters' gradients, and the largest working set of one operator call.
  int64_t floor_bytes = 0;
  /// Wall time (seconds) until a plan within the budget was known (a heuristic's or the
  /// program's); -1: none was found.
  double first_fit_seconds = -1;
  /// Predicted seconds of the recomputation-first plan (MonetOptions::recomputation_first_share)
  /// within the budget, the program's warm start when it is the fastest; -1: none.
  double recomputation_first_seconds = -1;
};

/// Solves the program for `options.budget_bytes`. A budget below the floor returns at
/// once: found false, no solve, solve.status kInfeasible.
MonetResult plan_monet(const Graph& graph, const CostModel& costs, const MonetOptions& options);

}  // namespace monet
