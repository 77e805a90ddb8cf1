// MonetProgram: the MONeT 0-1 program for one graph, cost model and mode, its variables
// and its decoding into a Plan. Memory rows are in MiB; the budget is either a constant
// (rows <= budget), a variable column the program minimises (minimum_budget), or a
// constant each row may exceed by its own excess column, whose sum the program
// minimises (the elastic program: every plan is feasible, and a plan within the budget
// is one of excess 0, so a search that lowers one stage's excess at a time makes
// progress where lowering the largest row, the peak, would need every stage at once).
//
// Stages are the backward steps of the nodes needing one, in reverse topological order.
// For stage t (backward node k) and every node j at or before k: s[t][j] = x_j is alive
// when stage t starts, r[t][j] = node j is recomputed in stage t (when several
// recomputation implementations are on the Pareto front of time and workspace, a choice
// column per implementation, delta^k in the paper), out of place or, for a node with an
// in-place twin of each (ReLU, add) whose input no other node reads, in place (a column
// per twin, q in the paper's Appendix E). Memory rows follow the
// paper (Section 3, Appendix B/C) with Appendix B's tighter local-memory bound:
//  - forward pass, node i: tensors later forward nodes read, kept outputs s[0], kept
//    intermediates, the output, the chosen workspace;
//  - recomputation of node i in stage t: checkpoints of later nodes s[t][j > i], the
//    output and workspace of i, and of the earlier tensors those a node in [i, k] reads
//    (kept or recomputed), those the backward of k reads, and those kept for the next
//    stage s[t+1]; plus gradients, kept intermediates and per-iteration state; a
//    recomputation in place (its input neither kept for the next stage nor read by the
//    stage's backward) adds no output bytes, and the in-place twin's workspace;
//  - each backward part of k: the tensors its chosen implementation (or a later part's)
//    reads, those kept for the next stage, gradients (alive, new, accumulation copies:
//    exact, from a replay of the store-all plan) and the chosen workspace.
// An intermediate (argmax indices, a mask, a noise tensor) lives from the forward pass to its
// node's backward, unless no implementation of that backward reads it or a recomputation
// emits it again first: then the executor frees it at once, and so does the program. A
// recomputation may emit the intermediate for the backward to read (a choice column per
// such implementation); it is alive from there to the node's backward. Small
// intermediates (exact_intermediate_min_fraction) are counted from the forward pass to the
// backward instead, an upper bound.
// A view (an operator whose every implementation returns its input's storage: flatten,
// reshape, permute) owns no bytes: a read of it is a read of its base, and keeping it keeps
// the base (s[t][view] <= s[t][base]), so a storage shared by views is counted once.
// Running sums (s[t][j >= i], s[t+1][j < i], intermediates) are continuous columns
// defined by equality rows, so every memory row has O(1 + tensors crossing i) terms and
// the program O(N^2) non-zeros. Every count is an upper bound of what the executor holds
// (checked exactly by the simulator afterwards). Implementations dominated in both time
// and workspace by an equivalent one are left out (no optimal plan needs them).
//
// Availability rows (valid for every 0-1 solution, so the program's optimum is unchanged)
// tighten the LP relaxation, the certified bound. Without them the relaxation keeps a few
// per cent of a tensor, recomputes its consumer by that fraction in each of many stages,
// and carries the sum along (s[t+1] <= s[t] + r[t]) until the consumer is whole, so a
// recomputation costs almost no memory for its input. With u_p ("node p is recomputed in
// some stage"): u_p <= sum_t r[t][p]; u_p <= s[0][q] + u_q for each activation input q (a
// recomputation needs q kept from the forward pass or recomputed); and wherever the stage
// backward may read x_p, s[t][p] + r[t][p] <= s[0][p] + u_p.
// Two refinements, valid for the same reason:
//  - alternative reads (only in programs of at most alternative_read_max_columns columns;
//    on larger ones they made the LP slower than the time limit): where a backward part's
//    implementations read different tensors S (a batch norm's input or its output), the chosen
//    one's tensor is available, and a member of S recomputed from another member adds nothing: sum
//    of the choices reading S <= sum over S of s[0][p], plus u_p of S's roots (no activation input
//    in S);
//  - spans (only in programs small enough for branch and cut, span_max_columns with
//    them): x_p available in stage T, which reads it, was alive at an earlier stage a or
//    recomputed from an input q alive then or recomputed since: s[T][p] + r[T][p] <=
//    s[a][p] + s[a][q] + sum over a <= t <= T of r[t][q], for every a < T. Without them
//    the relaxation keeps a tenth of q and recomputes a tenth of p in each of ten stages.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "planner/program/monet_mode.h"
#include "planner/solver/milp.h"

namespace monet {

/// How the program's memory rows meet the budget.
enum class BudgetRows {
  kFixed,      // every memory row <= the budget; objective: profiled seconds
  kMinimised,  // the budget is a column the program minimises (objective: the budget in
               // MiB plus a tiny multiple of the time, to pick a fast plan among equals)
  kElastic,    // each memory row may exceed the budget by its own excess column (objective:
               // total excess in MiB plus a tiny multiple of the time)
};

struct MonetProgramOptions {
  MonetMode mode = MonetMode::kAll;
  BudgetRows budget_rows = BudgetRows::kFixed;
  int64_t budget_bytes = 0;  // kFixed, kElastic: the peak allowed (bytes)
  /// The availability rows (never in the elastic program, which needs no bound); false
  /// only to measure what they add.
  bool availability_rows = true;
  /// Alternative-read rows only in programs of at most this many columns (on larger ones
  /// they slow CLP's LP far more than they raise the bound; docs/PLANNER.md, "Why the
  /// defaults").
  int alternative_read_max_columns = 75000;
  /// Span rows only where the program with them has at most this many columns (they need
  /// a column per stage and position, and make the LP of the largest programs two to three
  /// times slower): programs a branch and cut searches whole.
  int span_max_columns = 20000;
  /// Intermediates of at least this fraction of their node's output bytes (max-pool argmax
  /// indices: 2 in int64, 0.25 in 8 bits; a dropout's noise: 1) are modelled exactly: a
  /// recomputation may emit one again for the backward, and one nothing reads is freed at
  /// once. Smaller ones (a ReLU's 1-bit mask, 1/32) are counted from the forward pass to
  /// the backward, an upper bound that saves a column per stage for each and keeps the LP
  /// relaxation tighter.
  double exact_intermediate_min_fraction = kExactIntermediateMinFraction;
  Recomputations recomputations = Recomputations::kOutOfPlace;
};

class MonetProgram {
 public:
  MonetProgram(const Graph& graph, const CostModel& costs, const MonetProgramOptions& options);

  const Milp& milp() const { return milp_; }
  /// A plan as a column assignment when the program can express it (its recomputations
  /// out of place, in the stage of the next backward instruction; dominated
  /// implementations replaced by their dominators), else empty. `nearest`: a recomputation
  /// with an implementation the program leaves out of recomputations (one that emits an
  /// intermediate) becomes the program's fastest in no more workspace, so the assignment is
  /// a nearby plan rather than this one. For warm starts: check milp().satisfies() before use.
  std::vector<double> assignment_of(const Plan& plan, bool nearest = false) const;
  /// Per column, the topological position of the node it is about (schedule columns:
  /// the node kept or recomputed; implementation choices: their node), -1 for the
  /// continuous columns. Neighbourhood search frees windows of consecutive positions.
  std::vector<int> column_positions() const;
  /// The Plan a solution describes.
  Plan decode(const std::vector<double>& values) const;
  /// The budget column's value in a solution (bytes), for the minimise-budget variant.
  int64_t budget_of(const std::vector<double>& values) const;
  /// Profiled seconds of a solution (the objective without the budget term).
  double seconds_of(const std::vector<double>& values) const;
  /// The elastic program's total excess of a solution over the budget (MiB); 0 otherwise.
  double excess_of(const std::vector<double>& values) const;
  /// Weight of the time (per second) in the objectives that minimise memory.
  static constexpr double kTimeWeight = 1e-6;

 private:
  static constexpr double kMiB = 1024.0 * 1024.0;  // memory rows and sums are in MiB
  using Terms = std::vector<std::pair<int, double>>;
  struct Choice {
    std::string name;
    int col = -1;
    std::vector<int> reads;  // backward choices: positions of the activations it reads
    std::vector<int> holds;  // and of those whose storage it holds: reads and their bases
  };
  // A continuous column (MiB) defined from earlier columns: the sum of one term list
  // (an equality row), or the largest of several (>= rows; memory rows push it down).
  struct Definition {
    int col = -1;
    std::vector<Terms> sums;
  };

  void add_variables();
  void add_recompute_choices(int id);
  /// Appends to recompute_impls_[id] the allowed forward implementations that emit an
  /// intermediate an allowed backward implementation of the node reads.
  void add_emitting_recompute_choices(int id);
  /// Whether an intermediate of node `n` of these bytes is modelled exactly (see
  /// MonetProgramOptions::exact_intermediate_min_fraction).
  bool modelled_exactly(const Node& n, double intermediate_bytes) const;
  /// The backward choices of node `id` that read the intermediate `forward` emits.
  std::vector<int> intermediate_readers(int id, const std::string& forward) const;
  /// Of the recomputations that emit nothing, the fastest in no more workspace than
  /// `impl`, else the one of least workspace (an index into recompute_impls_[id]).
  size_t nearest_plain_recompute(int id, const std::string& impl) const;
  /// Whether two implementations of one node do the same (implementation_dominance.h).
  using SameImpl = std::function<bool(const std::string&, const std::string&)>;
  /// An implementation's profiled cost.
  using CostOf = std::function<const ImplCost&(const std::string&)>;
  /// Sets in `x` the column of `choices` named `name`, or of one that does the same no
  /// slower and in no more workspace (the program leaves dominated implementations out).
  /// False when there is none.
  static bool pick(const std::vector<Choice>& choices, const std::string& name,
                   const SameImpl& same, const CostOf& cost, std::vector<double>& x);
  /// assignment_of's columns for `in`, a recomputation in stage `t` (its r, rec and
  /// in-place columns), appending to `reads` the positions it reads. False where the
  /// program cannot express it (with `nearest`, a plain recomputation stands in).
  bool encode_recomputation(const Instruction& in, int t, bool nearest, std::vector<double>& x,
                            std::vector<int>* reads) const;
  /// Likewise for `in`, a backward instruction: its backward choice.
  bool encode_backward(const Instruction& in, std::vector<double>& x,
                       std::vector<int>* reads) const;
  /// Checks that each recomputation emitting an intermediate in `x` is its node's last
  /// and has a backward implementation reading it; where not, false, or with `nearest` a
  /// plain recomputation instead (nearest_plain_recompute).
  bool read_recomputed_intermediates(std::vector<double>& x, bool nearest) const;
  /// The in-place twins of node `id`'s recomputation implementations (recompute_impls_),
  /// allowed in the mode, where each has one and input 0 is an activation of its own
  /// storage that no other node reads; empty otherwise.
  std::vector<std::string> inplace_recompute_impls(int id) const;
  /// The rows of in-place recomputations in stage t: only of a recomputed node, and only
  /// where the input is neither kept for the next stage nor read by the stage's backward.
  void add_inplace_recompute_rows(size_t t);
  void add_schedule_rows();
  void add_backward_read_rows(size_t t);
  void add_availability_rows();
  void add_alternative_read_rows();
  void add_span_rows();
  /// Fills intermediates_; returns, by position, the forward choices that emit an
  /// intermediate with its bytes.
  std::vector<Terms> add_forward_intermediate_sums();
  /// The backward choices of the node's one part whose implementations read its
  /// intermediate that do not read it (empty when no part, or several, read it).
  std::vector<int> unread_intermediate_choices(int id) const;
  void add_forward_memory_rows();
  void add_recomputed_intermediate_sums();
  /// Stage t's running sums (MiB columns): later[p] of s[t][q] |x_q| over q >= p, and
  /// carried[p] of what the next stage keeps, |x_q| over q < p.
  void add_kept_sums(size_t t, std::vector<int>* later, std::vector<int>* carried);
  /// alive[part][q]: the binary column "x_q is held during backward part `part` of stage
  /// t" (a chosen implementation of it or of a later part reads it, or the next stage
  /// keeps it).
  std::vector<std::map<int, int>> add_alive_columns(size_t t);
  /// The memory row of each recomputation in stage t (`alive_first`: alive[0]).
  void add_recomputation_memory_rows(size_t t, const std::vector<int>& later,
                                     const std::vector<int>& carried,
                                     const std::map<int, int>& alive_first);
  void add_stage_memory_rows(size_t t);
  void compute_gradient_memory();
  bool forward_allowed(const Node& n, const ForwardImplInfo& f, bool is_default) const;
  bool backward_allowed(const Node& n, const BackwardImplInfo& b, bool is_default) const;
  int binary(double seconds);
  int define(std::vector<Terms> sums);
  /// Marks the base of every view kept in a stage as kept there too (not recomputed): the
  /// program counts a view's storage as its base's. False when that drops a recomputation
  /// of a base (x then describes a nearby plan).
  bool keep_storage_bases(std::vector<double>& x) const;
  /// Sets the budget column (when there is one) to the least value `x` needs.
  void fit_budget(std::vector<double>& x) const;
  /// Fills the defined columns of `x` from the binaries.
  void complete(std::vector<double>& x) const;
  /// Adds terms (binaries with byte coefficients, defined columns with MiB coefficient
  /// 1) <= budget - constant_bytes.
  void memory_row(const Terms& byte_terms, const std::vector<int>& mib_columns,
                  double constant_bytes);
  /// The r[t][p] columns of position p, over the stages that have it.
  std::vector<int> recomputations_of(size_t p) const;
  /// s[t+1][p] when the next stage has position p, else -1.
  int next_keep(size_t t, int p) const;
  /// Positions of the activations any allowed implementation of parts >= `part` of the
  /// stage node reads, with the bases of those that are views.
  std::vector<int> stage_reads(int k, size_t part) const;
  /// Fills out_bytes_ and storage_base_.
  void add_storage_bases();
  /// Bytes of the intermediate recomputation implementation `a` (recompute_impls_[id][a])
  /// emits: 0 for the first plain_recomputes_[id].
  int64_t recomputed_intermediate_bytes(int id, size_t a) const;
  /// The rec_ columns, over all stages, of the node's recomputations that emit its
  /// intermediate, with their implementation's index.
  std::vector<std::pair<int, size_t>> emitting_recomputations(int id) const;
  /// `positions` and, for each view among them, its base, the base's base, and so on.
  std::vector<int> with_storage_bases(const std::vector<int>& positions) const;

  const Graph& g_;
  const CostModel& costs_;
  MonetProgramOptions options_;
  MonetMode mode_;
  int64_t budget_;
  Milp milp_;
  int budget_col_ = -1;
  bool elastic_ = false;
  std::vector<std::pair<int, int>> excess_;  // elastic program: (memory row, its excess column)
  std::vector<double> time_;                 // per column: profiled seconds it costs
  std::vector<Definition> definitions_;
  // By position: the availability column u_p, completed as min(1, sum_t r[t][p]) (empty
  // without availability rows).
  std::vector<int> recomputed_;

  std::vector<int> order_, pos_;      // topological order; position of each node
  std::vector<int> stages_;           // node ids with a backward, in backward order
  std::vector<int> stage_of_;         // by node id: its stage, -1 without a backward
  std::vector<bool> needs_backward_;  // by node id
  // By position: bytes of the storage the node's output allocates (0 for a view).
  std::vector<int64_t> out_bytes_;
  // By position: for a view (every forward implementation returns a view of input 0, an
  // activation), the position of that input; else -1. The view holds the base's storage.
  std::vector<int> storage_base_;
  // By position: positions reading the output or a view of it (those hold its storage).
  std::vector<std::vector<int>> consumers_;
  std::vector<std::vector<Choice>> forward_;  // node -> allowed forward implementations
  // node -> part index -> allowed backward implementations
  std::vector<std::vector<std::vector<Choice>>> backward_;
  std::vector<std::vector<BackwardPart>> parts_;
  // node -> recomputation implementations: the Pareto front of those that emit nothing,
  // then those that also emit the node's intermediate for its backward to read (kept from
  // the recomputation until that backward); one entry: r carries its cost.
  std::vector<std::vector<std::string>> recompute_impls_;
  std::vector<size_t> plain_recomputes_;  // node -> how many emit nothing
  // s_[t][p], r_[t][p]: columns for stage t and the node at position p (p <= stage pos);
  // rec_[t][p]: one column per recomputation implementation when there are several.
  std::vector<std::vector<int>> s_, r_;
  std::vector<std::vector<std::vector<int>>> rec_;
  // node -> the in-place twin of each recompute_impls_ entry, where a recomputation may
  // overwrite its input (empty: none; inplace_recompute_impls).
  std::vector<std::vector<std::string>> inplace_impls_;
  // inplace_[t][p][a]: the recomputation of position p in stage t runs in place, in its
  // input's storage, with the twin of recompute_impls_[j][a] (empty: not offered).
  std::vector<std::vector<std::vector<int>>> inplace_;
  // By position: MiB of the forward pass's intermediates alive after nodes <= p (one a
  // recomputation emits again before the backward reads it is freed at once).
  std::vector<int> intermediates_;
  // By stage and position p (0 to the stage node's position + 1): MiB of intermediates
  // recomputations emitted that are alive before p's recomputation (-1: none possible).
  std::vector<std::vector<int>> recomputed_intermediates_;
  // node -> backward part: bytes of gradient storages alive before it, of the gradients
  // it returns, and the most alive during it (accumulation copies included).
  std::vector<std::vector<int64_t>> grads_before_, grads_result_, grads_peak_;
  int64_t start_bytes_ = 0, state_bytes_ = 0;  // bytes: the batch and weights; all node states
  std::vector<int64_t> stage_state_bytes_;     // per stage: node states alive in it (bytes)
};

}  // namespace monet
