// MonetProgram's rows that tighten its LP relaxation (the certified bound) without
// changing its optimum: availability, alternative reads and spans (monet_program.h).
#include <set>

#include "planner/program/monet_program.h"

namespace monet {

void MonetProgram::add_availability_rows() {
  if (stages_.empty()) return;
  const int n_pos = static_cast<int>(s_[0].size());  // positions with a keep column
  std::vector<int>& u = recomputed_;
  u.assign(n_pos, -1);
  for (int p = 0; p < n_pos; ++p) {
    u[p] = milp_.add_continuous(0, 0, 1);
    Terms row = {{u[p], 1}};
    for (int c : recomputations_of(p)) row.push_back({c, -1});
    milp_.add_row(row, -1e30, 0);
    for (int v : g_.node(order_[p]).inputs) {
      if (g_.value(v).kind != ValueKind::kActivation) continue;
      const int q = pos_[g_.value(v).producer];
      milp_.add_row({{u[p], 1}, {s_[0][q], -1}, {u[q], -1}}, -1e30, 0);
    }
  }
  for (size_t t = 0; t < stages_.size(); ++t)
    for (int p : stage_reads(stages_[t], 0))
      milp_.add_row({{s_[t][p], 1}, {r_[t][p], 1}, {s_[0][p], -1}, {u[p], -1}}, -1e30, 0);
}

void MonetProgram::add_alternative_read_rows() {
  if (recomputed_.empty() || milp_.columns() > options_.alternative_read_max_columns) return;
  for (int k : stages_)
    for (size_t pi = 0; pi < parts_[k].size(); ++pi) {
      Terms row;            // the choices reading some tensor of S, less S's availability
      std::set<int> reads;  // S
      for (const auto& c : backward_[k][pi]) {
        if (c.reads.empty()) continue;
        row.push_back({c.col, 1});
        reads.insert(c.reads.begin(), c.reads.end());
      }
      bool any_derived = false;
      for (int p : reads) {
        bool root = true;
        for (int v : g_.node(order_[p]).inputs)
          root &= g_.value(v).kind != ValueKind::kActivation ||
                  !reads.count(pos_[g_.value(v).producer]);
        any_derived |= !root;
        row.push_back({s_[0][p], -1});
        if (root) row.push_back({recomputed_[p], -1});
      }
      if (any_derived) milp_.add_row(row, -1e30, 0);
    }
}

void MonetProgram::add_span_rows() {
  if (stages_.size() < 2) return;
  const size_t cumulative = stages_.size() * s_[0].size();  // an upper bound
  if (milp_.columns() + cumulative > static_cast<size_t>(options_.span_max_columns)) return;
  // recomputed_before[t][q] = sum of r[t'][q] over stages t' <= t.
  std::vector<std::vector<int>> recomputed_before(stages_.size());
  for (size_t t = 0; t < stages_.size(); ++t)
    for (size_t q = 0; q < r_[t].size(); ++q) {
      Terms sum = {{r_[t][q], 1}};
      if (t > 0) sum.push_back({recomputed_before[t - 1][q], 1});
      recomputed_before[t].push_back(define({sum}));
    }
  for (size_t T = 1; T < stages_.size(); ++T)
    for (int p : stage_reads(stages_[T], 0))
      for (int v : g_.node(order_[p]).inputs) {
        if (g_.value(v).kind != ValueKind::kActivation) continue;
        const int q = pos_[g_.value(v).producer];
        for (size_t a = 0; a < T; ++a) {
          Terms row = {{s_[T][p], 1},
                       {r_[T][p], 1},
                       {s_[a][p], -1},
                       {s_[a][q], -1},
                       {recomputed_before[T][q], -1}};
          if (a > 0) row.push_back({recomputed_before[a - 1][q], 1});
          milp_.add_row(row, -1e30, 0);
        }
      }
}

}  // namespace monet
