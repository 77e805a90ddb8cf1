#include "planner/program/monet_program.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/program/implementation_dominance.h"

namespace monet {
MonetProgram::MonetProgram(const Graph& g, const CostModel& costs, const MonetProgramOptions& o)
    : g_(g),
      costs_(costs),
      options_(o),
      mode_(o.mode),
      budget_(o.budget_bytes),
      elastic_(o.budget_rows == BudgetRows::kElastic) {
  order_ = g_.topological_order();
  pos_.assign(g_.nodes().size(), -1);
  for (size_t p = 0; p < order_.size(); ++p) pos_[order_[p]] = static_cast<int>(p);
  needs_backward_ = nodes_needing_backward(g_);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if (needs_backward_[*it]) stages_.push_back(*it);
  stage_of_.assign(g_.nodes().size(), -1);
  for (size_t t = 0; t < stages_.size(); ++t) stage_of_[stages_[t]] = static_cast<int>(t);
  add_storage_bases();
  consumers_.resize(order_.size());
  for (int id : order_) {
    for (int v : g_.node(id).inputs) {
      if (g_.value(v).kind != ValueKind::kActivation) continue;
      // A read of a view is a read of the storage it shares with its base (and the base's).
      for (int q = pos_[g_.value(v).producer]; q >= 0; q = storage_base_[q]) {
        auto& c = consumers_[q];
        if (c.empty() || c.back() != pos_[id]) c.push_back(pos_[id]);
      }
    }
  }
  start_bytes_ = iteration_start_bytes(g_);
  for (const auto& n : g_.nodes()) state_bytes_ += node_state_bytes(g_, n);
  // A node's state is released after its last backward part (Liveness::state_free_after).
  stage_state_bytes_.push_back(state_bytes_);
  for (size_t t = 1; t < stages_.size(); ++t)
    stage_state_bytes_.push_back(stage_state_bytes_.back() -
                                 node_state_bytes(g_, g_.node(stages_[t - 1])));
  if (o.budget_rows == BudgetRows::kMinimised) {
    budget_col_ = milp_.add_continuous(1.0, 0, 1e12);
    time_.push_back(0);
  }
  add_variables();
  compute_gradient_memory();
  add_schedule_rows();
  add_forward_memory_rows();
  add_recomputed_intermediate_sums();
  for (size_t t = 0; t < stages_.size(); ++t) add_stage_memory_rows(t);
  if (o.availability_rows && !elastic_) {
    add_availability_rows();
    add_alternative_read_rows();
    add_span_rows();
  }
  time_.resize(milp_.columns(), 0);
}

bool MonetProgram::forward_allowed(const Node& n, const ForwardImplInfo& f, bool is_default) const {
  return mode_allows_forward(mode_, n, f, is_default);
}

bool MonetProgram::backward_allowed(const Node& n, const BackwardImplInfo& b,
                                    bool is_default) const {
  return mode_allows_backward(mode_, n, b, is_default);
}

int MonetProgram::binary(double seconds) {
  const bool memory_objective = budget_col_ >= 0 || elastic_;
  const int c = milp_.add_binary(memory_objective ? kTimeWeight * seconds : seconds);
  time_.resize(c + 1, 0);
  time_[c] = seconds;
  return c;
}

int MonetProgram::define(std::vector<Terms> sums) {
  const int col = milp_.add_continuous(0, 0, 1e12);
  for (const Terms& sum : sums) {
    Terms row = sum;
    row.push_back({col, -1});
    if (sums.size() == 1)
      milp_.add_row(row, 0, 0);
    else
      milp_.add_row(row, -1e30, 0);
  }
  definitions_.push_back({col, std::move(sums)});
  return col;
}

void MonetProgram::complete(std::vector<double>& x) const {
  for (const auto& d : definitions_) {
    double v = d.sums.size() == 1 ? 0 : -std::numeric_limits<double>::infinity();
    for (const Terms& sum : d.sums) {
      double s = 0;
      for (const auto& [col, coef] : sum) s += coef * x[col];
      v = d.sums.size() == 1 ? s : std::max(v, s);
    }
    x[d.col] = std::max(0.0, v);
  }
  for (size_t p = 0; p < recomputed_.size(); ++p) {
    double sum = 0;
    for (int c : recomputations_of(p)) sum += x[c];
    x[recomputed_[p]] = std::min(1.0, sum);
  }
}

void MonetProgram::add_storage_bases() {
  storage_base_.assign(order_.size(), -1);
  for (int id : order_) {
    const Node& n = g_.node(id);
    const auto fs = forward_impls(g_, n);
    const bool view = !n.inputs.empty() && std::all_of(fs.begin(), fs.end(), [](const auto& f) {
      return f.output_aliases_input;
    });
    // A view owns no storage: its bytes are its base's, counted with the base (a view of
    // a parameter or of the batch is counted with them, outside the program).
    out_bytes_.push_back(view ? 0 : g_.value(n.output).bytes());
    if (view && g_.value(n.inputs[0]).kind == ValueKind::kActivation)
      storage_base_[pos_[id]] = pos_[g_.value(n.inputs[0]).producer];
  }
}

std::vector<int> MonetProgram::with_storage_bases(const std::vector<int>& positions) const {
  std::set<int> out;
  for (int p : positions)
    for (int q = p; q >= 0; q = storage_base_[q]) out.insert(q);
  return {out.begin(), out.end()};
}

std::vector<int> MonetProgram::recomputations_of(size_t p) const {
  std::vector<int> out;  // stages cover ever fewer positions
  for (size_t t = 0; t < r_.size() && p < r_[t].size(); ++t) out.push_back(r_[t][p]);
  return out;
}

int MonetProgram::next_keep(size_t t, int p) const {
  if (t + 1 >= stages_.size() || p >= static_cast<int>(s_[t + 1].size())) return -1;
  return s_[t + 1][p];
}

std::vector<int> MonetProgram::stage_reads(int k, size_t part) const {
  std::set<int> reads;
  for (size_t pi = part; pi < parts_[k].size(); ++pi)
    for (const auto& c : backward_[k][pi]) reads.insert(c.holds.begin(), c.holds.end());
  return {reads.begin(), reads.end()};
}

void MonetProgram::add_recompute_choices(int id) {
  const Node& n = g_.node(id);
  const auto fs = forward_impls(g_, n);
  std::vector<ForwardImplInfo> candidates;
  for (bool any_mode : {false, true}) {
    for (size_t a = 0; a < fs.size(); ++a) {
      const auto& f = fs[a];
      const bool is_default = a == 0 || f.name == out_of_place(fs.front().name);
      if (f.inplace || f.emits_intermediate || (!any_mode && !forward_allowed(n, f, is_default)))
        continue;
      candidates.push_back(f);
    }
    if (!candidates.empty()) break;
  }
  auto cost = [&](const ForwardImplInfo& f) { return costs_.forward(g_, id, f.name); };
  for (size_t i : pareto(
           candidates, [](const auto&, const auto&) { return true; }, cost))
    recompute_impls_[id].push_back(candidates[i].name);
  if (recompute_impls_[id].empty()) recompute_impls_[id].push_back(out_of_place(fs[0].name));
  plain_recomputes_[id] = recompute_impls_[id].size();
}

void MonetProgram::add_variables() {
  const size_t nodes = g_.nodes().size();
  forward_.resize(nodes);
  backward_.resize(nodes);
  parts_.resize(nodes);
  recompute_impls_.resize(nodes);
  plain_recomputes_.resize(nodes);
  for (int id : order_) {
    const Node& n = g_.node(id);
    const auto fs = forward_impls(g_, n);
    std::vector<ForwardImplInfo> allowed;
    for (size_t a = 0; a < fs.size(); ++a)
      if (forward_allowed(n, fs[a], a == 0)) allowed.push_back(fs[a]);
    auto forward_cost = [&](const ForwardImplInfo& f) { return costs_.forward(g_, id, f.name); };
    for (size_t i : pareto(allowed, same_forward, forward_cost))
      forward_[id].push_back({allowed[i].name, binary(forward_cost(allowed[i]).seconds), {}, {}});
    add_recompute_choices(id);
    if (!needs_backward_[id]) continue;
    parts_[id] = backward_parts(g_, n);
    const auto bs = backward_impls(g_, n);
    for (BackwardPart part : parts_[id]) {
      std::vector<BackwardImplInfo> candidates;
      bool first = true;
      for (const auto& b : bs) {
        if (b.part != part) continue;
        if (backward_allowed(n, b, first)) candidates.push_back(b);
        first = false;
      }
      auto backward_cost = [&](const BackwardImplInfo& b) {
        return costs_.backward(g_, id, part, b.name);
      };
      std::vector<Choice> choices;
      for (size_t i : pareto(candidates, same_backward, backward_cost)) {
        const BackwardImplInfo& b = candidates[i];
        choices.push_back({b.name, binary(backward_cost(b).seconds), {}, {}});
        for (int in : b.reads_inputs)
          if (g_.value(n.inputs[in]).kind == ValueKind::kActivation)
            choices.back().reads.push_back(pos_[g_.value(n.inputs[in]).producer]);
        if (b.reads_output) choices.back().reads.push_back(pos_[id]);
        choices.back().holds = with_storage_bases(choices.back().reads);
      }
      backward_[id].push_back(choices);
    }
    add_emitting_recompute_choices(id);
  }
  inplace_impls_.resize(nodes);
  for (int id : order_) inplace_impls_[id] = inplace_recompute_impls(id);
  // Schedule variables: stage t covers nodes at positions <= the stage node's position.
  s_.resize(stages_.size());
  r_.resize(stages_.size());
  rec_.resize(stages_.size());
  inplace_.resize(stages_.size());
  for (size_t t = 0; t < stages_.size(); ++t) {
    const int pk = pos_[stages_[t]];
    for (int p = 0; p <= pk; ++p) {
      const int j = order_[p];
      const auto& impls = recompute_impls_[j];
      s_[t].push_back(binary(0));
      r_[t].push_back(binary(impls.size() == 1 ? costs_.forward(g_, j, impls[0]).seconds : 0));
      std::vector<int> choice;
      if (impls.size() > 1) {
        Terms one = {{r_[t][p], -1}};
        for (const auto& name : impls) {
          choice.push_back(binary(costs_.forward(g_, j, name).seconds));
          one.push_back({choice.back(), 1});
        }
        milp_.add_row(one, 0, 0);
      }
      rec_[t].push_back(choice);
      // In place with each implementation's twin: its time less the implementation's.
      std::vector<int> inplace;
      for (size_t a = 0; a < inplace_impls_[j].size(); ++a)
        inplace.push_back(binary(costs_.forward(g_, j, inplace_impls_[j][a]).seconds -
                                 costs_.forward(g_, j, impls[a]).seconds));
      inplace_[t].push_back(inplace);
    }
  }
}

std::vector<std::string> MonetProgram::inplace_recompute_impls(int id) const {
  const Node& n = g_.node(id);
  if (options_.recomputations == Recomputations::kOutOfPlace || n.inputs.empty() ||
      g_.value(n.inputs[0]).kind != ValueKind::kActivation)
    return {};
  const int p = pos_[id], q = pos_[g_.value(n.inputs[0]).producer];
  if (storage_base_[q] >= 0 || out_bytes_[q] != out_bytes_[p] || out_bytes_[p] == 0 ||
      consumers_[q] != std::vector<int>{p})
    return {};
  const auto fs = forward_impls(g_, n);
  std::vector<std::string> twins;
  for (const std::string& impl : recompute_impls_[id]) {
    std::string twin;
    for (size_t a = 0; a < fs.size() && twin.empty(); ++a)
      if (fs[a].inplace && out_of_place(fs[a].name) == impl && forward_allowed(n, fs[a], a == 0))
        twin = fs[a].name;
    if (twin.empty()) return {};
    twins.push_back(twin);
  }
  return twins;
}

void MonetProgram::add_inplace_recompute_rows(size_t t) {
  const int k = stages_[t];
  for (size_t p = 0; p < inplace_[t].size(); ++p) {
    const std::vector<int>& twins = inplace_[t][p];
    if (twins.empty()) continue;
    // Each twin only with its implementation; the input then neither kept for the next
    // stage nor read by the stage's backward.
    Terms any;
    for (size_t a = 0; a < twins.size(); ++a) {
      const int impl = rec_[t][p].empty() ? r_[t][p] : rec_[t][p][a];
      milp_.add_row({{twins[a], 1}, {impl, -1}}, -1e30, 0);
      any.push_back({twins[a], 1});
    }
    const int q = pos_[g_.value(g_.node(order_[p]).inputs[0]).producer];
    const auto with = [&](int col) {
      Terms row = any;
      row.push_back({col, 1});
      milp_.add_row(row, -1e30, 1);
    };
    if (const int next = next_keep(t, q); next >= 0) with(next);
    for (const auto& part : backward_[k])
      for (const auto& c : part)
        if (std::count(c.holds.begin(), c.holds.end(), q)) with(c.col);
  }
}

std::vector<int> MonetProgram::column_positions() const {
  std::vector<int> out(milp_.columns(), -1);
  for (int id : order_) {
    for (const auto& c : forward_[id]) out[c.col] = pos_[id];
    for (const auto& part : backward_[id])
      for (const auto& c : part) out[c.col] = pos_[id];
  }
  for (size_t t = 0; t < stages_.size(); ++t)
    for (size_t p = 0; p < s_[t].size(); ++p) {
      out[s_[t][p]] = out[r_[t][p]] = static_cast<int>(p);
      for (int c : rec_[t][p]) out[c] = static_cast<int>(p);
      for (int c : inplace_[t][p]) out[c] = static_cast<int>(p);
    }
  return out;
}

void MonetProgram::compute_gradient_memory() {
  // Gradient storages do not depend on the schedule or the implementations (views and
  // in-place accumulation are properties of the operators; every gradient lives from
  // its backward until its producer's), so one replay of the store-all plan gives them
  // exactly, views and accumulation copies included.
  grads_before_.resize(g_.nodes().size());
  grads_result_.resize(g_.nodes().size());
  grads_peak_.resize(g_.nodes().size());
  const Plan plan = store_all_plan(g_, StoreAllOperators::kDefault);
  const SimulationResult sim = simulate(g_, plan, costs_);
  const auto needs = values_needing_grad(g_);
  for (size_t i = 0; i < plan.program.size(); ++i) {
    const Instruction& in = plan.program[i];
    if (in.kind != InstrKind::kBackward) continue;
    const Node& n = g_.node(in.node);
    const auto b = find_backward_impl(backward_impls(g_, n), n, in.part, in.impl);
    grads_before_[in.node].push_back(sim.steps[i].gradient_bytes_before);
    grads_result_[in.node].push_back(
        backward_result_bytes(g_, n, b, backward_grad_mask(g_, n, in.part, needs)));
    grads_peak_[in.node].push_back(sim.steps[i].gradient_peak_bytes);
  }
}

void MonetProgram::add_schedule_rows() {
  for (int id : order_) {
    Terms one;
    for (const auto& c : forward_[id]) one.push_back({c.col, 1});
    milp_.add_row(one, 1, 1);
    for (const auto& part : backward_[id]) {
      Terms terms;
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
      if (const int next = next_keep(t, p); next >= 0)
        milp_.add_row({{next, 1}, {s_[t][p], -1}, {r_[t][p], -1}}, -1e30, 0);
      // A view kept holds its base's storage, which the program counts as the base kept
      // (keeping the base as well costs nothing more).
      if (const int b = storage_base_[p]; b >= 0)
        milp_.add_row({{s_[t][p], 1}, {s_[t][b], -1}}, -1e30, 0);
    }
    add_backward_read_rows(t);
    add_inplace_recompute_rows(t);
  }
}

void MonetProgram::memory_row(const Terms& byte_terms, const std::vector<int>& mib_columns,
                              double constant_bytes) {
  Terms terms;
  for (const auto& [col, bytes] : byte_terms)
    if (col >= 0) terms.push_back({col, bytes / kMiB});
  for (int col : mib_columns)
    if (col >= 0) terms.push_back({col, 1});
  const double constant = constant_bytes / kMiB;
  if (budget_col_ >= 0) {
    terms.push_back({budget_col_, -1});
    milp_.add_row(terms, -1e30, -constant);
  } else if (elastic_) {
    const int excess = milp_.add_continuous(1.0, 0, 1e12);
    terms.push_back({excess, -1});
    excess_.push_back({milp_.add_row(terms, -1e30, budget_ / kMiB - constant), excess});
  } else {
    milp_.add_row(terms, -1e30, budget_ / kMiB - constant);
  }
}

void MonetProgram::add_forward_memory_rows() {
  const int n_pos = static_cast<int>(order_.size());
  const std::vector<Terms> emitted = add_forward_intermediate_sums();
  int kept = -1;  // MiB kept for the backward among positions < p: sum of s[0][q] |x_q|
  int64_t states = 0;
  for (int p = 0; p < n_pos; ++p) {
    const Node& n = g_.node(order_[p]);
    states += node_state_bytes(g_, n);
    const int64_t out = out_bytes_[p];
    double constant = static_cast<double>(start_bytes_ + states + out);
    if (n.output == g_.loss_value())  // the loss gradient (a scalar) is made with the loss
      constant += double(c10::elementSize(g_.value(n.output).dtype));
    Terms terms;
    const auto fs = forward_impls(g_, n);
    for (const auto& c : forward_[n.id]) {
      if (find_forward_impl(fs, n, c.name).inplace) terms.push_back({c.col, -double(out)});
      terms.push_back({c.col, double(costs_.forward(g_, n.id, c.name).workspace_bytes)});
    }
    // Outputs a node at or after p still reads are alive whether kept or not.
    for (int q = 0; q < p; ++q)
      if (!consumers_[q].empty() && consumers_[q].back() >= p) {
        constant += out_bytes_[q];
        if (!stages_.empty() && q < static_cast<int>(s_[0].size()))
          terms.push_back({s_[0][q], -double(out_bytes_[q])});
      }
    terms.insert(terms.end(), emitted[p].begin(), emitted[p].end());
    memory_row(terms, {kept, p > 0 ? intermediates_[p - 1] : -1}, constant);
    if (!stages_.empty() && p < static_cast<int>(s_[0].size())) {
      Terms sum = {{s_[0][p], out / kMiB}};
      if (kept >= 0) sum.push_back({kept, 1});
      kept = define({sum});
    }
  }
}

void MonetProgram::add_kept_sums(size_t t, std::vector<int>* later, std::vector<int>* carried) {
  const int pk = pos_[stages_[t]];
  later->assign(pk + 2, -1);
  carried->assign(pk + 2, -1);
  for (int p = pk; p >= 0; --p) {
    Terms sum = {{s_[t][p], out_bytes_[p] / kMiB}};
    if ((*later)[p + 1] >= 0) sum.push_back({(*later)[p + 1], 1});
    (*later)[p] = define({sum});
  }
  for (int p = 0; p <= pk; ++p) {
    const int next = next_keep(t, p);
    if (next < 0) {
      (*carried)[p + 1] = (*carried)[p];
      continue;
    }
    Terms sum = {{next, out_bytes_[p] / kMiB}};
    if ((*carried)[p] >= 0) sum.push_back({(*carried)[p], 1});
    (*carried)[p + 1] = define({sum});
  }
}

std::vector<std::map<int, int>> MonetProgram::add_alive_columns(size_t t) {
  const int k = stages_[t];
  std::vector<std::map<int, int>> alive(parts_[k].size());
  for (size_t part = 0; part < parts_[k].size(); ++part)
    for (int q : stage_reads(k, part)) {
      std::vector<Terms> sums;
      if (const int next = next_keep(t, q); next >= 0) sums.push_back({{next, 1}});
      for (size_t pi = part; pi < parts_[k].size(); ++pi) {
        Terms reading;
        for (const auto& c : backward_[k][pi])
          if (std::count(c.holds.begin(), c.holds.end(), q)) reading.push_back({c.col, 1});
        if (!reading.empty()) sums.push_back(reading);
      }
      alive[part][q] = define(sums);
    }
  return alive;
}

void MonetProgram::add_recomputation_memory_rows(size_t t, const std::vector<int>& later,
                                                 const std::vector<int>& carried,
                                                 const std::map<int, int>& alive_first) {
  const int k = stages_[t];
  const int pk = pos_[k];
  const double base = static_cast<double>(start_bytes_ + stage_state_bytes_[t]);
  // A tensor x_q alive while something at or before k still reads it: a node in [p, k]
  // (kept or recomputed: the paper's local-memory bound) or the backward of k.
  std::vector<int> last_consumer(pk + 1, -1);  // last consumer position <= pk
  for (int q = 0; q <= pk; ++q)
    for (int c : consumers_[q])
      if (c <= pk) last_consumer[q] = std::max(last_consumer[q], c);
  const double recompute_constant = base + double(grads_before_[k].front());
  for (int p = 0; p <= pk; ++p) {
    const int j = order_[p];
    Terms terms;
    if (rec_[t][p].empty()) {
      const auto& impl = recompute_impls_[j].front();
      terms.push_back(
          {r_[t][p], double(out_bytes_[p] + costs_.forward(g_, j, impl).workspace_bytes)});
    } else {
      // Workspace, and the intermediate of an implementation that emits one again.
      terms.push_back({r_[t][p], double(out_bytes_[p])});
      for (size_t a = 0; a < rec_[t][p].size(); ++a)
        terms.push_back(
            {rec_[t][p][a], double(costs_.forward(g_, j, recompute_impls_[j][a]).workspace_bytes +
                                   recomputed_intermediate_bytes(j, a))});
    }
    // In place: no output bytes, and the twin's workspace instead of its implementation's
    // (an in-place ReLU that emits its mask holds the unpacked mask beside its input).
    for (size_t a = 0; a < inplace_[t][p].size(); ++a)
      terms.push_back(
          {inplace_[t][p][a],
           double(costs_.forward(g_, j, inplace_impls_[j][a]).workspace_bytes -
                  costs_.forward(g_, j, recompute_impls_[j][a]).workspace_bytes - out_bytes_[p])});
    std::vector<int> mib = {later[p], carried[p], intermediates_[pk],
                            recomputed_intermediates_[t][p]};
    for (int q = 0; q < p; ++q) {
      const double bytes = double(out_bytes_[q]);
      const bool read_here = last_consumer[q] >= p;
      const auto it = alive_first.find(q);
      if (!read_here && it == alive_first.end()) continue;
      terms.push_back({next_keep(t, q), -bytes});  // replaces the carried count
      if (read_here) {
        terms.push_back({s_[t][q], bytes});
        terms.push_back({r_[t][q], bytes});
      } else {
        terms.push_back({it->second, bytes});
      }
    }
    memory_row(terms, mib, recompute_constant);
  }
}

void MonetProgram::add_stage_memory_rows(size_t t) {
  const int k = stages_[t];
  const int pk = pos_[k];
  const int inter = intermediates_[pk];
  const double base = static_cast<double>(start_bytes_ + stage_state_bytes_[t]);
  std::vector<int> later, carried;
  add_kept_sums(t, &later, &carried);
  const std::vector<std::map<int, int>> alive = add_alive_columns(t);
  // Recomputation of each position p (a non-recomputed p bounds the state in between).
  add_recomputation_memory_rows(t, later, carried, alive.empty() ? std::map<int, int>{} : alive[0]);
  // Each backward part.
  const int recomputed_inter = recomputed_intermediates_[t][pk + 1];
  for (size_t pi = 0; pi < parts_[k].size(); ++pi) {
    Terms terms;
    for (const auto& [q, col] : alive[pi]) {
      terms.push_back({next_keep(t, q), -double(out_bytes_[q])});
      terms.push_back({col, double(out_bytes_[q])});
    }
    // The call's workspace is released before its gradients are accumulated.
    const int64_t with_results = grads_before_[k][pi] + grads_result_[k][pi];
    if (grads_peak_[k][pi] > with_results)
      memory_row(terms, {carried[pk + 1], inter, recomputed_inter},
                 base + double(grads_peak_[k][pi]));
    for (const auto& c : backward_[k][pi])
      terms.push_back(
          {c.col, double(costs_.backward(g_, k, parts_[k][pi], c.name).workspace_bytes)});
    memory_row(terms, {carried[pk + 1], inter, recomputed_inter}, base + double(with_results));
  }
}

}  // namespace monet
