// `monet show`: a model's operators, output shapes, activation bytes, parameter count;
// with --plan, what a plan does with each operator (its implementations, recomputations).
#include <cstdio>

#include "cli/cli_common.h"

namespace monet::cli {
namespace {

struct ShowOptions {
  ModelOptions model;
  std::string plan;  // --plan: the model is the plan's, shown with the plan's choices
  bool json = false;
};

int run_show(const ShowOptions& o) {
  if (o.plan.empty() && o.model.model.empty())
    throw UsageError("give a model (--model) or a plan file (--plan)");
  if (!o.plan.empty() && !o.model.model.empty())
    throw UsageError(
        "give a model (--model) or a plan file (--plan), not both: a plan names "
        "its model");
  std::vector<OperatorChoice> choices;
  std::string update;
  const ModelDescription d = with_usage_errors([&] {
    if (o.plan.empty()) return describe(model_spec(o.model));
    const PlanFile plan = PlanFile::load(o.plan);
    choices = plan.operator_choices();
    update = optimizer_update_name(plan.optimizer_update());
    return plan.model_description();
  });
  if (o.json) {
    nlohmann::json ops = nlohmann::json::array();
    for (const OperatorDescription& n : d.operators) {
      nlohmann::json op = {{"name", n.name},          {"op", n.kind},
                           {"inputs", n.inputs},      {"attrs", n.attributes},
                           {"shape", n.output_shape}, {"bytes", n.output_bytes}};
      if (!choices.empty())
        op["plan"] = {{"forward", choices[n.id].forward},
                      {"recomputed", choices[n.id].recomputations},
                      {"backward", choices[n.id].backward}};
      ops.push_back(op);
    }
    nlohmann::json j = {{"model", d.model},
                        {"batch", d.batch},
                        {"image", d.image},
                        {"width", d.width},
                        {"classes", d.classes},
                        {"fingerprint", d.fingerprint},
                        {"parameters", d.parameters},
                        {"parameter_bytes", d.parameter_bytes},
                        {"activation_bytes", d.activation_bytes},
                        {"operator_count", d.operators.size()},
                        {"operators", ops}};
    if (!o.plan.empty()) {
      j["plan"] = o.plan;
      j["optimizer_update"] = update;
    }
    print_json(j);
    return 0;
  }
  std::printf("%s  batch %lld  image %s  width %g  fingerprint %s\n", d.model.c_str(),
              static_cast<long long>(d.batch), image_size_string(d.image).c_str(), d.width,
              d.fingerprint.c_str());
  if (!o.plan.empty())
    std::printf("plan %s  optimizer updates %s\n", o.plan.c_str(), update.c_str());
  std::printf("%-5s %-34s %-20s %-24s %12s", "#", "operator", "kind", "output shape", "bytes");
  if (!choices.empty()) std::printf("  %-14s %-10s %s", "forward", "recomputed", "backward");
  std::printf("\n");
  for (const OperatorDescription& n : d.operators) {
    std::printf("%-5d %-34s %-20s %-24s %12s", n.id, n.name.c_str(), n.kind.c_str(),
                shape_string(n.output_shape).c_str(), format_bytes(n.output_bytes, false).c_str());
    if (!choices.empty())
      std::printf("  %-14s %-10d %s", choices[n.id].forward.c_str(), choices[n.id].recomputations,
                  choices[n.id].backward.empty() ? "-" : choices[n.id].backward.c_str());
    std::printf("\n");
  }
  std::printf(
      "operators: %zu (%lld on the generic ATen path)\nparameters: %lld (%s)\n"
      "activations: %s\n",
      d.operators.size(), static_cast<long long>(d.generic_operators),
      static_cast<long long>(d.parameters), format_bytes(d.parameter_bytes, false).c_str(),
      format_bytes(d.activation_bytes, true).c_str());
  return 0;
}

}  // namespace

void add_show_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand(
      "show", "print a model's operators, shapes and sizes (with --plan: the plan's choices)");
  auto o = std::make_shared<ShowOptions>();
  add_model_options(cmd, o->model);
  cmd->get_option("--model")->required(false);
  cmd->add_option("--plan", o->plan,
                  "a plan file (monet plan -o): show its model with, per operator, the "
                  "implementation of its first forward, how often it is recomputed and its "
                  "backward implementations");
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_show(*o); }});
}

}  // namespace monet::cli
