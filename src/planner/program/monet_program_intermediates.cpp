// MonetProgram's intermediates (argmax indices, masks, noise tensors): the recomputations
// that emit one again for the backward to read, the rows that tie each backward
// implementation to the intermediate it reads, and the running sums of the intermediates
// alive in the forward pass and in each stage.
#include <algorithm>

#include "planner/program/monet_program.h"

namespace monet {

std::vector<std::pair<int, size_t>> MonetProgram::emitting_recomputations(int id) const {
  std::vector<std::pair<int, size_t>> out;
  const size_t p = pos_[id];
  for (size_t t = 0; t < rec_.size() && p < rec_[t].size(); ++t)
    for (size_t a = plain_recomputes_[id]; a < rec_[t][p].size(); ++a)
      out.push_back({rec_[t][p][a], a});
  return out;
}

int64_t MonetProgram::recomputed_intermediate_bytes(int id, size_t a) const {
  return a < plain_recomputes_[id] ? 0
                                   : intermediate_bytes(g_, g_.node(id), recompute_impls_[id][a]);
}

std::vector<int> MonetProgram::intermediate_readers(int id, const std::string& forward) const {
  const Node& n = g_.node(id);
  const auto bs = backward_impls(g_, n);
  std::vector<int> cols;
  for (size_t pi = 0; pi < backward_[id].size(); ++pi)
    for (const auto& c : backward_[id][pi]) {
      const auto b = find_backward_impl(bs, n, parts_[id][pi], c.name);
      if (b.reads_intermediate &&
          std::count(b.requires_forward.begin(), b.requires_forward.end(), forward))
        cols.push_back(c.col);
    }
  return cols;
}

bool MonetProgram::modelled_exactly(const Node& n, double intermediate_bytes) const {
  return intermediate_bytes >=
         options_.exact_intermediate_min_fraction * double(g_.value(n.output).bytes());
}

void MonetProgram::add_emitting_recompute_choices(int id) {
  const Node& n = g_.node(id);
  const auto fs = forward_impls(g_, n);
  for (size_t a = 0; a < fs.size(); ++a) {
    const auto& f = fs[a];
    if (!f.inplace && f.emits_intermediate && forward_allowed(n, f, a == 0) &&
        !intermediate_readers(id, f.name).empty() &&
        modelled_exactly(n, double(intermediate_bytes(g_, n, f.name))))
      recompute_impls_[id].push_back(f.name);
  }
}

void MonetProgram::add_backward_read_rows(size_t t) {
  // The chosen implementation's activations are kept or recomputed; its intermediate comes
  // from a forward implementation that leaves it, or from a recomputation in this stage
  // that emits it again (then any forward implementation will do, and one emitting
  // another kind of intermediate is excluded); no reading of an input that an in-place
  // forward overwrote.
  const int k = stages_[t];
  const Node& n = g_.node(k);
  const auto bs = backward_impls(g_, n);
  const auto fs = forward_impls(g_, n);
  const std::vector<std::pair<int, size_t>> again = emitting_recomputations(k);
  // One recomputation at most emits the intermediate (an earlier one's would be freed
  // unread), and only for a backward implementation to read.
  Terms once;
  for (const auto& [col, a] : again) once.push_back({col, 1});
  if (once.size() > 1) milp_.add_row(once, -1e30, 1);
  for (const auto& [col, a] : again) {
    Terms row = {{col, 1}};
    for (int reader : intermediate_readers(k, recompute_impls_[k][a])) row.push_back({reader, -1});
    milp_.add_row(row, -1e30, 0);
  }
  for (size_t pi = 0; pi < parts_[k].size(); ++pi)
    for (const auto& c : backward_[k][pi]) {
      const auto b = find_backward_impl(bs, n, parts_[k][pi], c.name);
      for (int q : c.reads) milp_.add_row({{c.col, 1}, {s_[t][q], -1}, {r_[t][q], -1}}, -1e30, 0);
      auto accepts = [&](const std::string& forward) {
        return std::count(b.requires_forward.begin(), b.requires_forward.end(), forward) > 0;
      };
      Terms emitted_again;  // the accepted recomputations, negated
      for (const auto& [col, a] : again) {
        if (!b.reads_intermediate) break;
        if (accepts(recompute_impls_[k][a]))
          emitted_again.push_back({col, -1});
        else
          milp_.add_row({{c.col, 1}, {col, 1}}, -1e30, 1);
      }
      Terms producers = emitted_again;
      producers.push_back({c.col, 1});
      const bool reads_input0 = std::count(b.reads_inputs.begin(), b.reads_inputs.end(), 0) > 0;
      for (const auto& fc : forward_[k]) {
        const auto f = find_forward_impl(fs, n, fc.name);
        if (!compatible(f, b)) {
          Terms row = {{c.col, 1}, {fc.col, 1}};
          if (!(f.inplace && reads_input0))  // only the intermediate is missing
            row.insert(row.end(), emitted_again.begin(), emitted_again.end());
          milp_.add_row(row, -1e30, 1);
        }
        if (b.reads_intermediate && accepts(f.name)) producers.push_back({fc.col, -1});
      }
      if (b.reads_intermediate) milp_.add_row(producers, -1e30, 0);
    }
}

std::vector<MonetProgram::Terms> MonetProgram::add_forward_intermediate_sums() {
  // Intermediates the forward pass emits (bytes, by position), and those kept until their
  // node's backward as running sums (MiB). One no backward implementation reads, or one a
  // recomputation emits again, is freed at once: kept = max(0, emitted - largest * (a
  // backward implementation of the part reading intermediates that reads none, or a
  // recomputation that emits one)).
  const int n_pos = static_cast<int>(order_.size());
  std::vector<Terms> emitted(n_pos);
  intermediates_.assign(n_pos, -1);
  for (int p = 0; p < n_pos; ++p) {
    const Node& n = g_.node(order_[p]);
    const auto fs = forward_impls(g_, n);
    double largest = 0;
    for (const auto& c : forward_[n.id])
      if (find_forward_impl(fs, n, c.name).emits_intermediate) {
        emitted[p].push_back({c.col, double(intermediate_bytes(g_, n, c.name))});
        largest = std::max(largest, emitted[p].back().second);
      }
    const int before = p > 0 ? intermediates_[p - 1] : -1;
    intermediates_[p] = before;
    if (emitted[p].empty() || !needs_backward_[n.id]) continue;  // none, or freed at once
    Terms kept;
    for (const auto& [col, bytes] : emitted[p]) kept.push_back({col, bytes / kMiB});
    Terms freed_at_once;
    for (const auto& [col, a] : emitting_recomputations(n.id)) freed_at_once.push_back({col, 1});
    if (modelled_exactly(n, largest))
      for (int col : unread_intermediate_choices(n.id)) freed_at_once.push_back({col, 1});
    if (!freed_at_once.empty()) {
      for (const auto& [col, one] : freed_at_once) kept.push_back({col, -largest / kMiB});
      kept = {{define({kept, {}}), 1}};
    }
    if (before >= 0) kept.push_back({before, 1});
    intermediates_[p] = define({kept});
  }
  return emitted;
}

std::vector<int> MonetProgram::unread_intermediate_choices(int id) const {
  const Node& n = g_.node(id);
  const auto bs = backward_impls(g_, n);
  std::vector<int> unread;
  int reading_parts = 0;
  for (size_t pi = 0; pi < backward_[id].size(); ++pi) {
    std::vector<int> cols;
    bool reads = false;
    for (const auto& c : backward_[id][pi]) {
      if (find_backward_impl(bs, n, parts_[id][pi], c.name).reads_intermediate)
        reads = true;
      else
        cols.push_back(c.col);
    }
    if (reads) ++reading_parts, unread = cols;
  }
  return reading_parts == 1 ? unread : std::vector<int>{};
}

void MonetProgram::add_recomputed_intermediate_sums() {
  // alive: MiB emitted by recomputations of earlier stages whose node's backward is to come.
  int alive = -1;
  recomputed_intermediates_.resize(stages_.size());
  for (size_t t = 0; t < stages_.size(); ++t) {
    const int pk = pos_[stages_[t]];
    auto& sums = recomputed_intermediates_[t];
    sums.assign(pk + 2, -1);
    sums[0] = alive;
    for (int p = 0; p <= pk; ++p) {
      const int j = order_[p];
      Terms sum;
      for (size_t a = plain_recomputes_[j]; a < rec_[t][p].size(); ++a)
        sum.push_back({rec_[t][p][a], double(recomputed_intermediate_bytes(j, a)) / kMiB});
      if (!sum.empty() && sums[p] >= 0) sum.push_back({sums[p], 1});
      sums[p + 1] = sum.empty() ? sums[p] : define({sum});
    }
    // The stage node's backward frees the intermediates recomputed for it (in this stage
    // or an earlier one: its position is in no later stage).
    Terms freed;
    for (const auto& [col, a] : emitting_recomputations(stages_[t]))
      freed.push_back({col, -double(recomputed_intermediate_bytes(stages_[t], a)) / kMiB});
    alive = sums[pk + 1];
    if (!freed.empty()) {
      freed.push_back({alive, 1});
      alive = define({freed});
    }
  }
}

}  // namespace monet
