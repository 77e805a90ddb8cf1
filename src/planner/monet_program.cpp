#include "planner/monet_program.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "plan/simulator.h"

namespace monet {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Bytes the rows add to every memory point for what they do not itemise: the loss
// gradient (a scalar) and allocator-size rounding of the smallest tensors.
constexpr int64_t kSlackBytes = 4096;

bool is_conv(const Node& n) { return n.op == OpKind::kConv || n.op == OpKind::kConvTranspose; }
bool intermediate_family(const Node& n) {
  return n.op == OpKind::kMaxPool || n.op == OpKind::kDropout;
}

}  // namespace

MonetProgram::MonetProgram(const Graph& g, const CostModel& costs, MonetMode mode,
                           int64_t budget_bytes)
    : g_(g), costs_(costs), mode_(mode), budget_(budget_bytes) {
  order_ = g_.topological_order();
  pos_.assign(g_.nodes().size(), -1);
  for (size_t p = 0; p < order_.size(); ++p) pos_[order_[p]] = static_cast<int>(p);
  needs_backward_ = nodes_needing_backward(g_);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if (needs_backward_[*it]) stages_.push_back(*it);
  for (int id : order_) out_bytes_.push_back(g_.value(g_.node(id).output).bytes());
  start_bytes_ = iteration_start_bytes(g_);
  for (const auto& n : g_.nodes()) state_bytes_ += node_state_bytes(g_, n);
  if (budget_ < 0) budget_col_ = milp_.add_continuous(1.0, 0, 1e12);
  add_variables();
  compute_gradient_memory();
  add_schedule_rows();
  add_memory_rows();
}

bool MonetProgram::forward_allowed(const Node& n, const ForwardImplInfo& f, bool is_default) const {
  if (is_default || mode_ == MonetMode::kAll) return true;
  if (is_conv(n)) return mode_ == MonetMode::kConv;
  if (f.emits_intermediate || intermediate_family(n)) return mode_ == MonetMode::kIntermediate;
  return mode_ == MonetMode::kInplace;  // the in-place / out-of-place alternative
}

bool MonetProgram::backward_allowed(const Node& n, const BackwardImplInfo& b,
                                    bool is_default) const {
  if (is_default || mode_ == MonetMode::kAll) return true;
  if (is_conv(n)) return mode_ == MonetMode::kConv;
  if (b.reads_output) return mode_ == MonetMode::kOutput;
  if (b.reads_intermediate || intermediate_family(n)) return mode_ == MonetMode::kIntermediate;
  return mode_ == MonetMode::kInplace;  // input-activated instead of an in-place default
}

void MonetProgram::add_variables() {
  const size_t nodes = g_.nodes().size();
  forward_.resize(nodes);
  backward_.resize(nodes);
  parts_.resize(nodes);
  recompute_impl_.resize(nodes);
  auto binary = [&](double seconds) {
    const int c = milp_.add_binary(budget_col_ >= 0 ? 1e-6 * seconds : seconds);
    time_.resize(c + 1, 0);
    time_[c] = seconds;
    return c;
  };
  if (budget_col_ >= 0) time_.assign(1, 0);
  for (int id : order_) {
    const Node& n = g_.node(id);
    const auto fs = forward_impls(g_, n);
    double best = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < fs.size(); ++a) {
      const auto& f = fs[a];
      if (!f.inplace && !f.emits_intermediate) {
        const double t = costs_.forward(g_, id, f.name).seconds;
        if (t < best || recompute_impl_[id].empty()) best = t, recompute_impl_[id] = f.name;
      }
      if (!forward_allowed(n, f, a == 0)) continue;
      forward_[id].push_back({f.name, binary(costs_.forward(g_, id, f.name).seconds)});
    }
    if (recompute_impl_[id].empty()) recompute_impl_[id] = out_of_place(fs.front().name);
    if (!needs_backward_[id]) continue;
    parts_[id] = backward_parts(g_, n);
    const auto bs = backward_impls(g_, n);
    for (BackwardPart part : parts_[id]) {
      std::vector<Choice> choices;
      bool first = true;
      for (const auto& b : bs) {
        if (b.part != part) continue;
        if (backward_allowed(n, b, first))
          choices.push_back({b.name, binary(costs_.backward(g_, id, part, b.name).seconds)});
        first = false;
      }
      backward_[id].push_back(choices);
    }
  }
  // Schedule variables: stage t covers nodes at positions <= the stage node's position.
  s_.resize(stages_.size());
  r_.resize(stages_.size());
  for (size_t t = 0; t < stages_.size(); ++t) {
    const int pk = pos_[stages_[t]];
    for (int p = 0; p <= pk; ++p) {
      const int j = order_[p];
      s_[t].push_back(binary(0));
      const double rec = costs_.forward(g_, j, recompute_impl_[j]).seconds;
      r_[t].push_back(binary(rec));
    }
  }
}

void MonetProgram::compute_gradient_memory() {
  const auto needs = values_needing_grad(g_);
  std::set<int> live;  // activation values with a gradient tensor
  int64_t live_bytes = 0, param_bytes = 0;
  std::vector<bool> param_has(g_.values().size(), false);
  grads_before_.resize(g_.nodes().size());
  grads_new_.resize(g_.nodes().size());
  accumulate_extra_.resize(g_.nodes().size());
  for (int k : stages_) {
    const Node& n = g_.node(k);
    const auto bs = backward_impls(g_, n);
    for (size_t p = 0; p < parts_[k].size(); ++p) {
      const auto mask = backward_grad_mask(g_, n, parts_[k][p], needs);
      // Whether gradients are views is a property of the operator, not the implementation.
      const auto& b = *std::find_if(bs.begin(), bs.end(),
                                    [&](const auto& x) { return x.part == parts_[k][p]; });
      int64_t extra = 0;
      for (size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) continue;
        const Value& v = g_.value(n.inputs[i]);
        const bool exists =
            v.kind == ValueKind::kParameter ? param_has[v.id] : live.count(v.id) > 0;
        if (exists || b.grads_alias_output) extra += v.bytes();
      }
      grads_before_[k].push_back(live_bytes + param_bytes);
      grads_new_[k].push_back(backward_result_bytes(g_, n, b, mask));
      accumulate_extra_[k].push_back(extra);
      for (size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) continue;
        const Value& v = g_.value(n.inputs[i]);
        if (v.kind == ValueKind::kParameter) {
          if (!param_has[v.id]) param_bytes += v.bytes();
          param_has[v.id] = true;
        } else if (live.insert(v.id).second) {
          live_bytes += v.bytes();
        }
      }
    }
    if (live.erase(n.output)) live_bytes -= g_.value(n.output).bytes();
  }
}

void MonetProgram::add_schedule_rows() {
  for (int id : order_) {
    std::vector<std::pair<int, double>> one;
    for (const auto& c : forward_[id]) one.push_back({c.col, 1});
    milp_.add_row(one, 1, 1);
    for (const auto& part : backward_[id]) {
      std::vector<std::pair<int, double>> terms;
      for (const auto& c : part) terms.push_back({c.col, 1});
      milp_.add_row(terms, 1, 1);
    }
  }
  if (stages_.empty()) return;
  // In place in the forward pass: only on an activation no later forward node reads;
  // the killed input is then not kept.
  for (int id : order_) {
    const Node& n = g_.node(id);
    const auto fs = forward_impls(g_, n);
    for (const auto& c : forward_[id]) {
      if (!find_forward_impl(fs, n, c.name).inplace) continue;
      const Value& x = g_.value(n.inputs[0]);
      if (x.kind != ValueKind::kActivation || x.consumers.size() != 1) {
        milp_.fix(c.col, 0);
        continue;
      }
      milp_.add_row({{c.col, 1}, {s_[0][pos_[x.producer]], 1}}, -1e30, 1);
    }
  }
  for (size_t t = 0; t < stages_.size(); ++t) {
    const int k = stages_[t];
    const int pk = pos_[k];
    for (int p = 0; p <= pk; ++p) {
      // Not both kept and recomputed; recomputation needs its inputs kept or recomputed.
      milp_.add_row({{s_[t][p], 1}, {r_[t][p], 1}}, -1e30, 1);
      for (int v : g_.node(order_[p]).inputs) {
        if (g_.value(v).kind != ValueKind::kActivation) continue;
        const int q = pos_[g_.value(v).producer];
        milp_.add_row({{r_[t][p], 1}, {s_[t][q], -1}, {r_[t][q], -1}}, -1e30, 0);
      }
      // What stage t+1 starts with was kept or recomputed in stage t.
      if (t + 1 < stages_.size() && p <= pos_[stages_[t + 1]])
        milp_.add_row({{s_[t + 1][p], 1}, {s_[t][p], -1}, {r_[t][p], -1}}, -1e30, 0);
    }
    // Backward reads: the chosen implementation's activations are kept or recomputed; its
    // intermediate comes from a forward implementation that leaves it; no reading of an
    // input that an in-place forward overwrote.
    const Node& n = g_.node(k);
    const auto bs = backward_impls(g_, n);
    const auto fs = forward_impls(g_, n);
    for (size_t pi = 0; pi < parts_[k].size(); ++pi)
      for (const auto& c : backward_[k][pi]) {
        const auto b = find_backward_impl(bs, n, parts_[k][pi], c.name);
        std::vector<int> reads;
        for (int i : b.reads_inputs)
          if (g_.value(n.inputs[i]).kind == ValueKind::kActivation)
            reads.push_back(pos_[g_.value(n.inputs[i]).producer]);
        if (b.reads_output) reads.push_back(pk);
        for (int q : reads) milp_.add_row({{c.col, 1}, {s_[t][q], -1}, {r_[t][q], -1}}, -1e30, 0);
        std::vector<std::pair<int, double>> producers = {{c.col, 1}};
        for (const auto& fc : forward_[k]) {
          const auto f = find_forward_impl(fs, n, fc.name);
          if (!compatible(f, b)) milp_.add_row({{c.col, 1}, {fc.col, 1}}, -1e30, 1);
          if (b.reads_intermediate &&
              std::count(b.requires_forward.begin(), b.requires_forward.end(), f.name))
            producers.push_back({fc.col, -1});
        }
        if (b.reads_intermediate) milp_.add_row(producers, -1e30, 0);
      }
  }
}

void MonetProgram::memory_row(std::vector<std::pair<int, double>> terms, double constant_bytes) {
  for (auto& [col, coef] : terms) coef /= kMiB;
  const double constant = (constant_bytes + kSlackBytes) / kMiB;
  if (budget_col_ >= 0) {
    terms.push_back({budget_col_, -1});
    milp_.add_row(terms, -1e30, -constant);
  } else {
    milp_.add_row(terms, -1e30, budget_ / kMiB - constant);
  }
}

void MonetProgram::add_memory_rows() {
  const int n_pos = static_cast<int>(order_.size());
  // Last forward reader of each node's output (position), -1 if none.
  std::vector<int> last_reader(n_pos, -1);
  for (int p = 0; p < n_pos; ++p)
    for (int v : g_.node(order_[p]).inputs)
      if (g_.value(v).kind == ValueKind::kActivation)
        last_reader[pos_[g_.value(v).producer]] =
            std::max(last_reader[pos_[g_.value(v).producer]], p);
  // Intermediates kept from the forward pass until their node's backward.
  auto intermediates = [&](int up_to, std::vector<std::pair<int, double>>& terms) {
    for (int p = 0; p <= up_to; ++p) {
      const Node& n = g_.node(order_[p]);
      const auto fs = forward_impls(g_, n);
      for (const auto& c : forward_[n.id])
        if (find_forward_impl(fs, n, c.name).emits_intermediate)
          terms.push_back({c.col, static_cast<double>(intermediate_bytes(g_, n, c.name))});
    }
  };
  auto workspace = [&](int id, std::vector<std::pair<int, double>>& terms) {
    for (const auto& c : forward_[id])
      terms.push_back({c.col, static_cast<double>(costs_.forward(g_, id, c.name).workspace_bytes)});
  };
  // Forward pass.
  int64_t states = 0;
  for (int p = 0; p < n_pos; ++p) {
    const Node& n = g_.node(order_[p]);
    states += node_state_bytes(g_, n);
    const int64_t out = out_bytes_[p];
    double constant = static_cast<double>(start_bytes_ + states + out);
    std::vector<std::pair<int, double>> terms;
    const auto fs = forward_impls(g_, n);
    for (const auto& c : forward_[n.id])
      if (find_forward_impl(fs, n, c.name).inplace) terms.push_back({c.col, -double(out)});
    workspace(n.id, terms);
    intermediates(p, terms);
    for (int q = 0; q < p; ++q) {
      if (last_reader[q] >= p)
        constant += out_bytes_[q];
      else if (!stages_.empty())
        terms.push_back({s_[0][q], double(out_bytes_[q])});
    }
    memory_row(terms, constant);
  }
  // Backward stages: recomputations and backward parts.
  for (size_t t = 0; t < stages_.size(); ++t) {
    const int k = stages_[t];
    const int pk = pos_[k];
    std::vector<std::pair<int, double>> common;
    intermediates(pk, common);
    const double base = static_cast<double>(start_bytes_ + state_bytes_);
    for (int p = 0; p <= pk; ++p) {
      const int j = order_[p];
      std::vector<std::pair<int, double>> terms = common;
      for (int q = 0; q <= pk; ++q) {
        terms.push_back({s_[t][q], double(out_bytes_[q])});
        if (q < p) terms.push_back({r_[t][q], double(out_bytes_[q])});
      }
      terms.push_back(
          {r_[t][p], double(out_bytes_[p]) +
                         double(costs_.forward(g_, j, recompute_impl_[j]).workspace_bytes)});
      memory_row(terms, base + double(grads_before_[k].front()));
    }
    for (size_t pi = 0; pi < parts_[k].size(); ++pi) {
      std::vector<std::pair<int, double>> terms = common;
      for (int q = 0; q <= pk; ++q) {
        terms.push_back({s_[t][q], double(out_bytes_[q])});
        terms.push_back({r_[t][q], double(out_bytes_[q])});
      }
      for (const auto& c : backward_[k][pi])
        terms.push_back(
            {c.col, double(costs_.backward(g_, k, parts_[k][pi], c.name).workspace_bytes)});
      memory_row(terms, base + double(grads_before_[k][pi] + grads_new_[k][pi] +
                                      accumulate_extra_[k][pi]));
    }
  }
}

std::vector<double> MonetProgram::store_all_assignment() const {
  std::vector<double> x(milp_.columns(), 0);
  for (int id : order_) {
    if (!forward_[id].empty()) x[forward_[id].front().col] = 1;
    for (const auto& part : backward_[id])
      if (!part.empty()) x[part.front().col] = 1;
  }
  // Keep everything a default in-place forward does not overwrite.
  std::vector<bool> killed(g_.nodes().size(), false);
  for (int id : order_) {
    const Node& n = g_.node(id);
    if (!forward_[id].empty() &&
        find_forward_impl(forward_impls(g_, n), n, forward_[id].front().name).inplace)
      killed[g_.value(n.inputs[0]).producer] = true;
  }
  for (size_t t = 0; t < stages_.size(); ++t)
    for (size_t p = 0; p < s_[t].size(); ++p) x[s_[t][p]] = killed[order_[p]] ? 0 : 1;
  if (budget_col_ >= 0) x[budget_col_] = 1e12;
  return x;
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
    for (size_t p = 0; p < r_[t].size(); ++p)
      if (on(r_[t][p]))
        plan.program.push_back({InstrKind::kForward, order_[p], recompute_impl_[order_[p]],
                                BackwardPart::kAll, Slot::kOutput});
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

double MonetProgram::seconds_of(const std::vector<double>& x) const {
  double s = 0;
  for (size_t c = 0; c < time_.size() && c < x.size(); ++c) s += time_[c] * x[c];
  return s;
}

}  // namespace monet
