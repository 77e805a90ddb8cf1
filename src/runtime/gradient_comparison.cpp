#include "runtime/gradient_comparison.h"

#include <algorithm>
#include <limits>

#include "runtime/autograd_baseline.h"
#include "runtime/executor.h"

namespace monet {
namespace {

ModelState converted(const ModelState& state, const Graph& g, at::ScalarType dtype) {
  ModelState s = state.clone();
  for (const auto& v : g.values())
    if (v.kind == ValueKind::kParameter || v.kind == ValueKind::kBuffer)
      s.tensor(v.id) = s.tensor(v.id).detach().to(dtype);
  return s;
}

// `plan` with the convolution forwards that have no kernel in `dtype` at "default".
Plan plan_for_precision(Plan plan, at::ScalarType dtype) {
  if (dtype == at::kDouble)
    for (auto& in : plan.program)
      if (in.kind == InstrKind::kForward && in.impl == "mkldnn") in.impl = "default";
  return plan;
}

}  // namespace

GradientComparison compare_gradients(const Graph& graph, const Plan& plan, const ModelState& state,
                                     const Batch& batch, at::ScalarType dtype,
                                     uint64_t iteration_seed) {
  ModelState reference = converted(state, graph, dtype);
  ModelState planned = reference.clone();
  Batch b = batch;
  for (auto& [id, t] : b)
    if (t.is_floating_point()) t = t.to(dtype);
  IterationOptions io;
  io.iteration_seed = iteration_seed;
  const IterationResult expected = AutogradBaseline(graph, reference).run_iteration(b, io);
  Executor executor(graph, planned, plan_for_precision(plan, dtype));
  ExecutionOptions eo;
  eo.iteration_seed = iteration_seed;
  const ExecutionResult got = executor.run(b, eo);

  GradientComparison c;
  c.loss = got.loss;
  c.autograd_loss = expected.loss;
  double largest = 0;
  for (const auto& g : expected.gradients)
    if (g.defined()) largest = std::max(largest, g.abs().max().item<double>());
  const auto params = graph.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& want = expected.gradients[i];
    const at::Tensor& have = got.gradients[i];
    double rel = 0;
    if (have.defined() != want.defined()) {
      rel = std::numeric_limits<double>::infinity();
    } else if (have.defined()) {
      const double abs = (have - want).abs().max().item<double>();
      c.max_abs_error = std::max(c.max_abs_error, abs);
      rel = abs / std::max({want.abs().max().item<double>(), 1e-3 * largest, 1e-300});
    }
    c.relative_errors.push_back(have.defined() || !want.defined() ? rel : -1);
    if (rel > c.max_relative_error || c.worst_parameter.empty()) {
      c.max_relative_error = std::max(c.max_relative_error, rel);
      c.worst_parameter = graph.value(params[i]).name;
    }
  }
  return c;
}

}  // namespace monet
