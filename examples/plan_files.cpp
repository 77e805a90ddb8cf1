// Profiles a small ResNet-18, plans one training iteration within a budget, writes the
// plan file, then reads it back, checks its gradients against autograd's and measures it
// against autograd: what `monet profile`, `plan`, `verify` and `run` do, through monet's
// public API. Build: see examples/CMakeLists.txt.
#include <monet/measurement.h>
#include <monet/model_description.h>
#include <monet/planning.h>

#include <iostream>

int main() {
  monet::MemoryStats::install();
  monet::Model model = monet::Model::load({"resnet18", /*batch=*/32, /*image=*/{96, 96},
                                           /*width=*/0.25, /*classes=*/10});
  monet::ModelDescription about = monet::describe(model);                // `monet show`
  monet::OperatorCosts costs = monet::OperatorCosts::obtain(model, {});  // `monet profile`
  const monet::Prediction storeall = costs.predict_store_all();

  monet::PlanFileRequest request;  // `monet plan`
  request.planner = "monet";
  request.search.limit = monet::PlanningLimit::kWork;  // the same plan on every machine
  // A budget of one iteration (weights and batch included) halfway between the smallest
  // with a plan and store-all's peak.
  monet::SmallestBudget smallest = monet::smallest_iteration_budget(model, costs, request);
  if (!smallest.bytes) return 1;
  request.budget_bytes = (*smallest.bytes + storeall.peak_bytes) / 2;
  monet::PlanFileOutcome out = monet::make_plan_file(model, &costs, request);
  if (!out.plan) {
    std::cout << "no plan fits " << *request.budget_bytes << " B\n";
    return 1;
  }
  out.plan->save("plan.json");
  monet::Prediction predicted = costs.predict(*out.plan);
  std::cout << about.operators.size() << " operators; plan predicted at " << predicted.peak_bytes
            << " B of a " << *request.budget_bytes << " B budget, store-all " << storeall.peak_bytes
            << " B\n";

  monet::PlanFile plan = monet::PlanFile::load("plan.json");               // `monet show --plan`
  monet::GradientCheck check = monet::verify_gradients(plan);              // `monet verify`
  monet::AutogradComparison run = monet::compare_with_autograd(plan, {});  // `monet run`
  std::cout << plan.summary().recomputations << " recomputations; gradients within "
            << check.max_relative_error << " of autograd's; measured peak " << run.peak_bytes
            << " B against autograd's " << run.autograd_peak_bytes << " B\n";
  monet::AutogradIterations autograd = monet::measure_autograd_iterations(model, {});
  std::cout << "autograd alone: " << autograd.median_seconds << " s per iteration\n";
  return check.max_relative_error <= 1e-9 ? 0 : 1;
}
