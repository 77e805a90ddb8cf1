#include "planner/search/program_warm_start.h"

#include <utility>

#include "planner/baselines/baseline_plans.h"
#include "planner/heuristics/lean_plans.h"

namespace monet {

std::string warm_start(const MonetProgram& program, const Graph& g, const CostModel& costs,
                       SearchOptions* solver, const std::vector<Plan>& extra) {
  std::string name;
  double best = 0;
  auto consider = [&](std::string what, std::vector<double> x) {
    if (x.empty() || !program.milp().satisfies(x)) return;
    const double objective = program.milp().objective_of(x);
    if (!name.empty() && objective >= best) return;
    name = std::move(what), best = objective, solver->warm_start = std::move(x);
  };
  consider("Chen", program.assignment_of(chen_plan(g), /*nearest=*/true));
  const struct {
    const char* name;
    ScheduleChoices choices;
  } families[] = {{"default implementations", default_choices(g)},
                  {"memory-lean implementations", lean_choices(g, costs)},
                  {"fastest implementations",
                   implementation_choices(g, costs, ImplementationPreference::kFastest)}};
  for (const auto& f : families) {
    const std::vector<Plan> plans = checkpoint_family(g, f.choices, "");
    for (size_t i = 0; i < plans.size(); ++i)
      consider(std::string(i == 0 ? "store-all" : "checkpointing") + " with " + f.name,
               program.assignment_of(plans[i], /*nearest=*/true));
  }
  for (const Plan& p : extra)
    consider(p.planner.empty() ? "a given plan" : "the " + p.planner + " plan",
             program.assignment_of(p, /*nearest=*/true));
  return name;
}

}  // namespace monet
