// MonetProgram: the MONeT 0-1 program for one graph, cost model and mode, its variables
// and its decoding into a Plan. Memory rows are in MiB; the budget is either a constant
// (rows <= budget) or a variable column the program minimises (minimum_budget).
//
// Stages are the backward steps of the nodes needing one, in reverse topological order.
// For stage k and every node j at or before k: s[k][j] = x_j is alive when stage k
// starts, r[k][j] = node j is recomputed in stage k (out of place, with its fastest
// non-intermediate implementation). Memory rows, per the paper with Appendix B's tighter
// local-memory bound (nothing after the current backward node is recomputed):
//  - forward pass, node i: live forward inputs of later nodes, kept outputs s[first],
//    intermediates kept for the backward, the output, the chosen workspace;
//  - recomputation of i in stage k and each backward part of k: live gradients and
//    parameter gradients (computed from the graph), s + r of every x_j, j <= k, the new
//    gradients, accumulation copies and the chosen workspace.
// Every count is an upper bound of what the executor holds, so a solution's plan stays
// within the program's budget up to what the simulator then checks exactly.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "planner/milp.h"
#include "planner/monet_planner.h"

namespace monet {

class MonetProgram {
 public:
  /// budget_bytes < 0: the budget is a column to minimise (the objective is then the
  /// budget in MiB plus a tiny multiple of the time, to pick a fast plan among equals).
  MonetProgram(const Graph& graph, const CostModel& costs, MonetMode mode, int64_t budget_bytes);

  const Milp& milp() const { return milp_; }
  /// The store-all schedule with default implementations as a column assignment (for a
  /// warm start; check milp().satisfies() before use).
  std::vector<double> store_all_assignment() const;
  /// The Plan a solution describes.
  Plan decode(const std::vector<double>& values) const;
  /// The budget column's value in a solution (bytes), for the minimise-budget variant.
  int64_t budget_of(const std::vector<double>& values) const;
  /// Profiled seconds of a solution (the objective without the budget term).
  double seconds_of(const std::vector<double>& values) const;

 private:
  struct Choice {
    std::string name;
    int col = -1;
  };
  void add_variables();
  void add_schedule_rows();
  void add_memory_rows();
  void compute_gradient_memory();
  bool forward_allowed(const Node& n, const ForwardImplInfo& f, bool is_default) const;
  bool backward_allowed(const Node& n, const BackwardImplInfo& b, bool is_default) const;
  void memory_row(std::vector<std::pair<int, double>> terms, double constant_bytes);

  const Graph& g_;
  const CostModel& costs_;
  MonetMode mode_;
  int64_t budget_;
  Milp milp_;
  int budget_col_ = -1;
  std::vector<double> time_;  // per column: profiled seconds it costs

  std::vector<int> order_, pos_;              // topological order; position of each node
  std::vector<int> stages_;                   // node ids with a backward, in backward order
  std::vector<bool> needs_backward_;          // by node id
  std::vector<int64_t> out_bytes_;            // by position: bytes of the node's output
  std::vector<std::vector<Choice>> forward_;  // node -> allowed forward implementations
  // node -> part index -> allowed backward implementations
  std::vector<std::vector<std::vector<Choice>>> backward_;
  std::vector<std::vector<BackwardPart>> parts_;
  std::vector<std::string> recompute_impl_;  // node -> implementation used to recompute
  // s_[t][p], r_[t][p]: columns for stage t and the node at position p (p <= stage pos).
  std::vector<std::vector<int>> s_, r_;
  // Bytes of live activation and parameter gradients before each backward part, the new
  // gradients it returns, and copies made when accumulating into a shared slot.
  std::vector<std::vector<int64_t>> grads_before_, grads_new_, accumulate_extra_;
  int64_t start_bytes_ = 0, state_bytes_ = 0;
};

}  // namespace monet
