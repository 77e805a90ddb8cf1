// PlannedModel: plans a Model for a whole training step's budget (the optimizer's state
// and update, and the caller's reserved bytes, taken off before the planner sees it),
// caches the plan by fingerprint + planner + budget, and runs steps under it.
#include <cmath>
#include <filesystem>
#include <limits>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include "api/atomic_file.h"
#include "api/model_impl.h"
#include "api/plan_cache.h"
#include "api/plan_file_impl.h"
#include "api/planned_model_impl.h"
#include "api/planning_limit.h"
#include "base/byte_format.h"
#include "base/memory_tracker.h"
#include "base/progress.h"
#include "cost/profiler.h"
#include "cost/simulator.h"
#include "planner/baselines/baseline_plans.h"
#include "planner/named_planner.h"
#include "runtime/autograd_baseline.h"
#include "runtime/executor.h"
#include "runtime/parameter_update.h"

namespace monet {

namespace {

StepResult step_result(const ExecutionResult& run) {
  StepResult r;
  r.loss = run.loss;
  r.peak_bytes = run.peak_bytes;
  r.start_bytes = run.start_bytes;
  r.seconds = run.seconds;
  return r;
}

// The backward of PlannedModel::forward's output: the rest of the plan, from the
// gradient autograd hands it. A sink (no next edges): it writes the parameters' .grad().
class PlannedBackward : public torch::autograd::Node {
 public:
  PlannedBackward(Model model, std::shared_ptr<Executor> executor,
                  std::shared_ptr<StepResult> report, std::unique_ptr<PendingIteration> pending,
                  std::function<void()> after)
      : model_(std::move(model)),
        executor_(std::move(executor)),
        report_(std::move(report)),
        pending_(std::move(pending)),
        after_(std::move(after)) {}
  std::string name() const override { return "monet::PlannedBackward"; }
  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    if (!pending_) throw std::runtime_error("the planned backward of this output already ran");
    if (grads.empty() || !grads[0].defined())
      throw std::runtime_error("the loss does not depend on the planned model's output");
    // The engine holds no other reference to d loss / d output: moved, it goes where the
    // plan frees it.
    *report_ = step_result(pending_->finish(std::move(grads[0])));
    report_->loss = std::numeric_limits<double>::quiet_NaN();
    pending_.reset();  // the iteration's tensors go now, not when autograd drops the node
    if (after_) after_();
    return {};
  }

 private:
  // The pending iteration reads the executor, which reads the model: declared first,
  // destroyed last.
  Model model_;
  std::shared_ptr<Executor> executor_;
  std::shared_ptr<StepResult> report_;  // PlannedModel::Impl::last_step
  std::unique_ptr<PendingIteration> pending_;
  std::function<void()> after_;  // PlannedModel::Impl::after_backward
};

// The error for a budget no plan fits, with the budgets that do.
// `infeasible`: an iteration budget the planner proved to have no plan.
BudgetError no_plan_error(const Model::Impl& m, const CostModel& costs, const PlanOptions& o,
                          const std::string& cache_dir, const PlanReport& r,
                          std::optional<int64_t> infeasible) {
  const BudgetRange range =
      budget_range_of(m.graph, costs, o, r.optimizer.total(), cache_dir, infeasible);
  return BudgetError("no " + o.planner + " plan fits a budget of " + format_bytes(*r.budget_bytes) +
                         " (forward and backward get " + format_bytes(*r.iteration_budget_bytes) +
                         " of it after the optimizer's " + format_bytes(r.optimizer.total()) +
                         " and " + format_bytes(r.reserved_bytes) +
                         " reserved); the smallest budget with a plan is " +
                         format_bytes(range.smallest_bytes) + ", and none can be below " +
                         format_bytes(range.floor_bytes),
                     range.smallest_bytes, range.floor_bytes);
}

// Plans under the report's iteration budget (or reads the plan cache); fills the plan.
Plan make_or_read_plan(const Model::Impl& m, const PlanOptions& o, const std::string& cache_dir,
                       PlanReport* report, CostModel* costs, bool* have_costs) {
  const Graph& g = m.graph;
  const int64_t budget = report->iteration_budget_bytes.value_or(-1);
  const std::string cached =
      cache_dir.empty() ? "" : plan_cache_path(cache_dir, g, o.planner, budget, o.loss_bytes);
  if (!cached.empty() && std::filesystem::exists(cached)) {
    try {
      Plan plan = read_plan(g, cached);
      report->from_cache = true;
      report->plan_path = cached;
      if (o.progress) report_progress("plan: from the cache (%s)\n", cached.c_str());
      return plan;
    } catch (const std::invalid_argument& e) {
      report_warning("plan: ignoring the cached plan: %s\n", e.what());
    }
  }
  if (planner_needs_costs(o.planner) || budget > 0) {
    *costs = model_costs(g, o, cache_dir);
    *have_costs = true;
  }
  PlannerRequest request;
  request.planner = o.planner;
  request.budget_bytes = planner_uses_budget(o.planner) ? budget : -1;
  request.solver = search_options_of(o);
  const PlannerOutcome outcome = make_plan(g, *have_costs ? costs : nullptr, request);
  if (!outcome.found) {
    if (*have_costs && report->budget_bytes)
      throw no_plan_error(m, *costs, o, cache_dir, *report,
                          proven_infeasible_budget(outcome, budget));
    throw BudgetError(report->budget_bytes ? "no " + o.planner + " plan fits a budget of " +
                                                 format_bytes(*report->budget_bytes)
                                           : "the " + o.planner + " planner found no plan",
                      std::nullopt);
  }
  Plan plan = outcome.plan;
  if (outcome.solved && std::isfinite(outcome.solve.solve.gap))
    report->solver_gap = outcome.solve.solve.gap;
  if (!cached.empty()) {
    try {
      std::filesystem::create_directories(cache_dir + "/plans");
      write_text_atomically(cached, plan_to_json(g, plan).dump(1) + "\n");
      report->plan_path = cached;
    } catch (const std::exception& e) {
      report_warning("plan: not cached: %s\n", e.what());
    }
  }
  return plan;
}

}  // namespace

PlannedModel::PlannedModel(Model model, const PlanOptions& o) : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  Model::Impl& m = *impl_of(impl_->model);
  m.graph.set_update_mode(update_mode_of(o.optimizer_update));
  check_planner_name(o.planner);
  if (planner_requires_budget(o.planner) && o.budget.empty() && o.plan_file.empty())
    throw std::invalid_argument("planner '" + o.planner + "' needs a budget");
  const std::string cache_dir = cache_dir_of(o);
  PlanReport& r = impl_->report;
  r.planner = o.planner;
  r.optimizer = optimizer_memory(impl_->model, o);
  r.optimizer_update = o.optimizer_update;
  r.reserved_bytes = o.reserved_bytes;
  r.loss_bytes = o.loss_bytes;
  r.budget_baseline = o.budget_baseline;
  if (!o.budget.empty()) {
    r.budget_bytes = parse_budget(o.budget, [&] {
      if (o.progress)
        report_progress((std::string("baseline: measuring ") +
                         budget_baseline_name(o.budget_baseline) + " ...\n")
                            .c_str());
      r.baseline_peak_bytes = measure_baseline_step_peak(impl_->model, o, cache_dir);
      return *r.baseline_peak_bytes;
    });
    r.iteration_budget_bytes = *r.budget_bytes - r.optimizer.total() - r.reserved_bytes;
    const int64_t floor = iteration_start_bytes(m.graph);
    if (*r.iteration_budget_bytes <= floor)
      throw BudgetError("a budget of " + format_bytes(*r.budget_bytes) +
                            " does not hold the model, its batch and its optimizer (" +
                            format_bytes(floor + r.optimizer.total() + r.reserved_bytes) + ")",
                        std::nullopt, floor + r.optimizer.total() + r.reserved_bytes);
  }
  CostModel costs;
  bool have_costs = false;
  if (!o.plan_file.empty()) {
    impl_->plan = read_plan(m.graph, o.plan_file);
  } else {
    impl_->plan = make_or_read_plan(m, o, cache_dir, &r, &costs, &have_costs);
  }
  impl_->plan.model = is_traced_model(m.spec)
                          ? std::filesystem::absolute(m.spec.model).lexically_normal().string()
                          : m.spec.model;
  impl_->plan.config = model_config(m.spec);
  r.lossy_forwards = lossy_forwards(m.graph, impl_->plan);
  if (!have_costs) have_costs = cached_model_costs(m.graph, o, cache_dir, &costs);
  if (have_costs) {
    const SimulationResult sim = simulate(m.graph, impl_->plan, costs);
    r.predicted_peak_bytes = sim.peak_bytes;
    r.predicted_start_bytes = sim.start_bytes;
    r.predicted_seconds = sim.seconds;
    const SimulationResult all = simulate(m.graph, store_all_plan(m.graph), costs);
    r.storeall_predicted_peak_bytes = all.peak_bytes;
    r.storeall_predicted_seconds = all.seconds;
    // A planner that does not take a budget (store-all, Chen, Gist) may not honour one.
    if (r.iteration_budget_bytes && sim.peak_bytes > *r.iteration_budget_bytes)
      throw BudgetError("the " + impl_->plan.planner + " plan's predicted peak " +
                            format_bytes(sim.peak_bytes) + " exceeds the " +
                            format_bytes(*r.iteration_budget_bytes) +
                            " forward and backward get of the budget; use planner monet",
                        std::nullopt);
  }
  impl_->executor = std::make_shared<Executor>(m.graph, m.state, impl_->plan);
}

PlannedModel::~PlannedModel() = default;
PlannedModel::PlannedModel(PlannedModel&&) noexcept = default;
PlannedModel& PlannedModel::operator=(PlannedModel&&) noexcept = default;

StepResult PlannedModel::step(const torch::Tensor& input, const torch::Tensor& target) {
  return step(std::vector<torch::Tensor>{input}, target);
}

StepResult PlannedModel::step(const std::vector<torch::Tensor>& inputs,
                              const torch::Tensor& target) {
  Model::Impl& m = *impl_of(impl_->model);
  MemoryTracker::install();
  const Batch batch = m.batch(inputs, target);
  const ExecutionOptions eo = impl_->execution_options(m);
  const ExecutionResult run = impl_->executor->run(batch, eo);
  ++m.steps;
  *impl_->last_step = step_result(run);
  return *impl_->last_step;
}

torch::Tensor PlannedModel::forward(const torch::Tensor& input) {
  return forward(std::vector<torch::Tensor>{input});
}

torch::Tensor PlannedModel::forward(const std::vector<torch::Tensor>& inputs) {
  Model::Impl& m = *impl_of(impl_->model);
  MemoryTracker::install();
  const ExecutionOptions eo = impl_->execution_options(m);
  std::unique_ptr<PendingIteration> pending = impl_->executor->start(m.input_batch(inputs), eo);
  ++m.steps;
  // The loss node reads the output, so a valid plan has it alive here.
  at::Tensor out = pending->take_output().variable_data();
  if (torch::GradMode::is_enabled())
    torch::autograd::set_history(
        out, std::make_shared<PlannedBackward>(impl_->model, impl_->executor, impl_->last_step,
                                               std::move(pending), impl_->after_backward));
  return out;
}

StepResult PlannedModel::last_step() const { return *impl_->last_step; }

ExecutionOptions PlannedModel::Impl::execution_options(const Model::Impl& m) {
  ExecutionOptions eo;
  eo.gradients = GradientDestination::kParameters;
  eo.iteration_seed = static_cast<uint64_t>(m.steps);
  eo.on_parameter_gradient = on_parameter_gradient;
  if (m.graph.update_mode() == UpdateMode::kFused) {
    if (!update)
      throw std::logic_error(
          "the model was planned for fused optimizer updates: give it the optimizer "
          "(use_optimizer or use_update) before the first step");
    // The parameter tensors are the model's (value ids index its state).
    eo.update_parameter = [u = update, state = &m.state](int p, const at::Tensor& grad) {
      u(state->tensor(p), grad);
    };
  }
  return eo;
}

void PlannedModel::use_optimizer(torch::optim::Optimizer& optimizer) {
  use_update(parameter_update_fn(optimizer));
}

void PlannedModel::use_update(ParameterUpdateFn update) {
  if (impl_of(impl_->model)->graph.update_mode() != UpdateMode::kFused)
    throw std::logic_error(
        "fused optimizer updates need a model planned for them; this one was planned with "
        "after-backward updates (step the optimizer after the backward)");
  if (!update) throw std::invalid_argument("use_update: an empty update function");
  impl_->update = std::move(update);
}

torch::Tensor PlannedModel::predict(const torch::Tensor& input) {
  return predict(std::vector<torch::Tensor>{input});
}

torch::Tensor PlannedModel::predict(const std::vector<torch::Tensor>& inputs) {
  Model::Impl& m = *impl_of(impl_->model);
  const int logits = m.graph.node(m.graph.value(m.graph.loss_value()).producer).inputs[0];
  AutogradBaseline forward(m.graph, m.state);
  Batch batch = m.input_batch(inputs);
  if (m.target_value >= 0) {
    const Value& target = m.graph.value(m.target_value);  // read by nothing before the logits
    batch[m.target_value] = at::zeros(target.shape, target.dtype);
  }
  return forward.evaluate(batch, logits, /*training=*/false);
}

Model& PlannedModel::model() { return impl_->model; }
const PlanReport& PlannedModel::report() const { return impl_->report; }

void PlannedModel::save_plan(const std::string& path) const {
  write_text_atomically(path,
                        plan_to_json(impl_of(impl_->model)->graph, impl_->plan).dump(1) + "\n");
}

void zero_grad(const std::vector<torch::Tensor>& parameters) {
  for (auto p : parameters) p.mutable_grad() = torch::Tensor();
}

void MemoryStats::install() { MemoryTracker::install(); }
int64_t MemoryStats::current_bytes() { return MemoryTracker::current(); }
int64_t MemoryStats::peak_bytes() { return MemoryTracker::peak(); }
void MemoryStats::reset_peak() { MemoryTracker::reset_peak(); }

std::string default_cache_dir() { return default_cost_cache_dir(); }

void set_progress_sink(std::function<void(bool warning, const std::string& text)> sink) {
  if (!sink) return monet::set_progress_sink(ProgressSink());
  monet::set_progress_sink([sink = std::move(sink)](ProgressLevel level, const std::string& text) {
    sink(level == ProgressLevel::kWarning, text);
  });
}

}  // namespace monet
