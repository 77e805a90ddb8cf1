// MonetProgram's translation between plans and column assignments: encoding a plan (for
// warm starts), decoding a solution, and reading its budget and time.
#include <algorithm>
#include <cmath>

#include "planner/program/implementation_dominance.h"
#include "planner/program/monet_program.h"

namespace monet {

bool MonetProgram::pick(const std::vector<Choice>& choices, const std::string& name,
                        const SameImpl& same, const CostOf& cost, std::vector<double>& x) {
  for (const auto& c : choices)
    if (c.name == name) return x[c.col] = 1, true;
  for (const auto& c : choices)
    if (same(c.name, name) && no_worse(cost(c.name), cost(name))) return x[c.col] = 1, true;
  return false;
}

bool MonetProgram::encode_recomputation(const Instruction& in, int t, bool nearest,
                                        std::vector<double>& x, std::vector<int>* reads) const {
  const Node& n = g_.node(in.node);
  const int p = pos_[n.id];
  if (p >= static_cast<int>(s_[t].size())) return false;
  for (int v : n.inputs)
    if (g_.value(v).kind == ValueKind::kActivation) reads->push_back(pos_[g_.value(v).producer]);
  // Implementations emitting the intermediate follow the `plain` ones; only those stand
  // in for an implementation the program leaves out.
  const auto& impls = recompute_impls_[n.id];
  const auto fs = forward_impls(g_, n);
  // In place where the program offers it: as its out-of-place twin, with the in-place
  // column set.
  const bool inplace = find_forward_impl(fs, n, in.impl).inplace && !inplace_impls_[n.id].empty();
  const std::string impl = inplace ? out_of_place(in.impl) : in.impl;
  const bool emits = find_forward_impl(fs, n, impl).emits_intermediate;
  size_t a = 0;
  while (a < impls.size() && impls[a] != impl) ++a;
  if (a == impls.size() && !emits) {  // dominated: the fastest that is no worse
    for (a = 0; a < plain_recomputes_[n.id]; ++a)
      if (no_worse(costs_.forward(g_, n.id, impls[a]), costs_.forward(g_, n.id, impl))) break;
    if (a == plain_recomputes_[n.id]) a = impls.size();
  }
  // One the program does not recompute with (emitting an intermediate it does not offer
  // to emit again): a nearby plan's.
  if (a == impls.size() && !nearest) return false;
  if (a == impls.size()) a = nearest_plain_recompute(n.id, impl);
  x[r_[t][p]] = 1;
  if (!rec_[t][p].empty()) x[rec_[t][p][a]] = 1;
  if (inplace) x[inplace_[t][p][a]] = 1;
  return true;
}

bool MonetProgram::encode_backward(const Instruction& in, std::vector<double>& x,
                                   std::vector<int>* reads) const {
  const Node& n = g_.node(in.node);
  const auto bs = backward_impls(g_, n);
  const auto b = find_backward_impl(bs, n, in.part, in.impl);
  for (int i : b.reads_inputs)
    if (g_.value(n.inputs[i]).kind == ValueKind::kActivation)
      reads->push_back(pos_[g_.value(n.inputs[i]).producer]);
  if (b.reads_output) reads->push_back(pos_[n.id]);
  const size_t pi =
      std::find(parts_[n.id].begin(), parts_[n.id].end(), in.part) - parts_[n.id].begin();
  const auto same = [&](const std::string& a, const std::string& c) {
    return same_backward(find_backward_impl(bs, n, in.part, a),
                         find_backward_impl(bs, n, in.part, c));
  };
  const auto cost = [&](const std::string& name) -> const ImplCost& {
    return costs_.backward(g_, n.id, in.part, name);
  };
  return pi < backward_[n.id].size() && pick(backward_[n.id][pi], in.impl, same, cost, x);
}

std::vector<double> MonetProgram::assignment_of(const Plan& plan, bool nearest) const {
  std::vector<double> x(milp_.columns(), 0);
  // need[t][q]: stage t reads x_q before recomputing it.
  std::vector<std::vector<bool>> need(stages_.size());
  for (size_t t = 0; t < stages_.size(); ++t) need[t].assign(s_[t].size(), false);
  std::vector<bool> computed(g_.nodes().size(), false);
  int t = -1;  // -1: the forward pass (a node's first forward instruction)
  size_t next_backward = 0;
  for (const Instruction& in : plan.program) {
    if (in.kind == InstrKind::kFree) continue;
    const Node& n = g_.node(in.node);
    if (t < 0 && in.kind == InstrKind::kForward && !computed[n.id]) {
      computed[n.id] = true;
      const auto fs = forward_impls(g_, n);
      const auto same = [&](const std::string& a, const std::string& b) {
        return same_forward(find_forward_impl(fs, n, a), find_forward_impl(fs, n, b));
      };
      const auto cost = [&](const std::string& name) -> const ImplCost& {
        return costs_.forward(g_, n.id, name);
      };
      if (!pick(forward_[n.id], in.impl, same, cost, x)) return {};
      continue;
    }
    // The instruction belongs to the stage of the next backward instruction.
    while (next_backward < plan.program.size() &&
           (plan.program[next_backward].kind != InstrKind::kBackward ||
            &plan.program[next_backward] < &in))
      ++next_backward;
    if (next_backward == plan.program.size()) return {};
    t = stage_of_[plan.program[next_backward].node];
    if (t < 0) return {};
    std::vector<int> reads;
    const bool encoded = in.kind == InstrKind::kForward
                             ? encode_recomputation(in, t, nearest, x, &reads)
                             : encode_backward(in, x, &reads);
    if (!encoded) return {};
    for (int q : reads) {
      if (q >= static_cast<int>(s_[t].size())) return {};
      if (!x[r_[t][q]]) need[t][q] = true;
    }
  }
  if (!read_recomputed_intermediates(x, nearest)) return {};
  for (int u = static_cast<int>(stages_.size()) - 1; u >= 0; --u)
    for (size_t q = 0; q < s_[u].size(); ++q) {
      const int next = next_keep(u, static_cast<int>(q));
      const bool later = next >= 0 && x[next] > 0.5;
      x[s_[u][q]] = (need[u][q] || (later && !x[r_[u][q]])) ? 1 : 0;
    }
  if (!keep_storage_bases(x) && !nearest) return {};
  complete(x);
  fit_budget(x);
  return x;
}

size_t MonetProgram::nearest_plain_recompute(int id, const std::string& impl) const {
  // The fastest in no more workspace than `impl`, else the one of least workspace.
  const auto& impls = recompute_impls_[id];
  const int64_t workspace = costs_.forward(g_, id, impl).workspace_bytes;
  auto better = [&](size_t b, size_t c) {
    const ImplCost &x = costs_.forward(g_, id, impls[b]), &y = costs_.forward(g_, id, impls[c]);
    const bool x_fits = x.workspace_bytes <= workspace, y_fits = y.workspace_bytes <= workspace;
    if (x_fits != y_fits) return x_fits;
    return x_fits ? x.seconds < y.seconds : x.workspace_bytes < y.workspace_bytes;
  };
  size_t a = 0;
  for (size_t b = 1; b < plain_recomputes_[id]; ++b)
    if (better(b, a)) a = b;
  return a;
}

bool MonetProgram::read_recomputed_intermediates(std::vector<double>& x, bool nearest) const {
  for (int id : stages_) {
    const size_t p = pos_[id];
    // The emitting recomputation a backward reads: the last one, if any reads it.
    int last = -1;  // stage
    for (size_t t = 0; t < rec_.size() && p < rec_[t].size(); ++t)
      for (size_t a = plain_recomputes_[id]; a < rec_[t][p].size(); ++a)
        if (x[rec_[t][p][a]] > 0.5) last = static_cast<int>(t);
    for (size_t t = 0; t < rec_.size() && p < rec_[t].size(); ++t)
      for (size_t a = plain_recomputes_[id]; a < rec_[t][p].size(); ++a) {
        const int col = rec_[t][p][a];
        if (x[col] < 0.5) continue;
        bool read = static_cast<int>(t) == last;
        if (read) {
          read = false;
          for (int b : intermediate_readers(id, recompute_impls_[id][a])) read = read || x[b] > 0.5;
        }
        if (read) continue;
        if (!nearest) return false;
        x[col] = 0;  // a plain recomputation instead (in place if this one was)
        const size_t plain = nearest_plain_recompute(id, recompute_impls_[id][a]);
        x[rec_[t][p][plain]] = 1;
        if (!inplace_[t][p].empty() && x[inplace_[t][p][a]] > 0.5)
          x[inplace_[t][p][a]] = 0, x[inplace_[t][p][plain]] = 1;
      }
  }
  return true;
}

bool MonetProgram::keep_storage_bases(std::vector<double>& x) const {
  // Stages in order, views before their bases: a base kept for a view in stage u was kept or
  // recomputed in stage u - 1, because the view was (and recomputing it read the base).
  bool same_plan = true;
  for (size_t u = 0; u < stages_.size(); ++u)
    for (int q = static_cast<int>(s_[u].size()) - 1; q >= 0; --q) {
      const int b = storage_base_[q];
      if (b < 0 || x[s_[u][q]] < 0.5) continue;
      x[s_[u][b]] = 1;
      // Recomputing a base that a kept view holds makes a second storage for it; the
      // program keeps the base instead (a nearby plan, faster and no larger).
      if (x[r_[u][b]] > 0.5) same_plan = false;
      x[r_[u][b]] = 0;
      for (int c : rec_[u][b]) x[c] = 0;
      for (int c : inplace_[u][b]) x[c] = 0;
    }
  return same_plan;
}

void MonetProgram::fit_budget(std::vector<double>& x) const {
  if (elastic_) {
    for (const auto& [row, col] : excess_) x[col] = 0;
    std::vector<double> over(milp_.rows(), 0);
    for (const auto& [row, excess] : milp_.violations(x, 0)) over[row] = excess;
    for (const auto& [row, col] : excess_)
      x[col] = over[row] > 0 ? over[row] * (1 + 1e-9) + 1e-9 : 0;
    return;
  }
  if (budget_col_ < 0) return;
  x[budget_col_] = 0;
  double need = 0;  // the largest excess of a memory row over a zero budget (MiB)
  for (const auto& [row, excess] : milp_.violations(x, 0)) need = std::max(need, excess);
  x[budget_col_] = need * (1 + 1e-9) + 1e-9;
}

Plan MonetProgram::decode(const std::vector<double>& x) const {
  auto on = [&](int col) { return x.at(col) > 0.5; };
  Plan plan;
  plan.graph_fingerprint = g_.fingerprint();
  std::vector<std::string> forward_choice(g_.nodes().size());
  for (int id : order_) {
    for (const auto& c : forward_[id])
      if (on(c.col)) forward_choice[id] = c.name;
    plan.program.push_back(
        {InstrKind::kForward, id, forward_choice[id], BackwardPart::kAll, Slot::kOutput});
  }
  for (size_t t = 0; t < stages_.size(); ++t) {
    const int k = stages_[t];
    for (size_t p = 0; p < r_[t].size(); ++p) {
      if (!on(r_[t][p])) continue;
      const int j = order_[p];
      size_t chosen = 0;
      for (size_t a = 0; a < rec_[t][p].size(); ++a)
        if (on(rec_[t][p][a])) chosen = a;
      const bool inplace = !inplace_[t][p].empty() && on(inplace_[t][p][chosen]);
      const std::string& impl = (inplace ? inplace_impls_ : recompute_impls_)[j][chosen];
      plan.program.push_back({InstrKind::kForward, j, impl, BackwardPart::kAll, Slot::kOutput});
    }
    for (size_t pi = 0; pi < parts_[k].size(); ++pi)
      for (const auto& c : backward_[k][pi])
        if (on(c.col))
          plan.program.push_back({InstrKind::kBackward, k, c.name, parts_[k][pi], Slot::kOutput});
  }
  return plan;
}

int64_t MonetProgram::budget_of(const std::vector<double>& x) const {
  return budget_col_ < 0 ? budget_ : static_cast<int64_t>(std::ceil(x.at(budget_col_) * kMiB));
}

double MonetProgram::excess_of(const std::vector<double>& x) const {
  double sum = 0;
  for (const auto& [row, col] : excess_) sum += x.at(col);
  return sum;
}

double MonetProgram::seconds_of(const std::vector<double>& x) const {
  double s = 0;
  for (size_t c = 0; c < time_.size() && c < x.size(); ++c) s += time_[c] * x[c];
  return s;
}

}  // namespace monet
