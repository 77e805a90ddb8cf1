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

// What a plan does with one operator.
struct NodeChoice {
  std::string forward;   // implementation of its first forward
  int recomputed = 0;    // forwards after the first
  std::string backward;  // implementation of each backward part, "+"-joined
};

std::vector<NodeChoice> node_choices(const Graph& g, const Plan& plan) {
  std::vector<NodeChoice> c(g.nodes().size());
  for (const Instruction& in : plan.program) {
    NodeChoice& n = c[in.node];
    if (in.kind == InstrKind::kForward) {
      if (n.forward.empty())
        n.forward = in.impl;
      else
        ++n.recomputed;
    } else if (in.kind == InstrKind::kBackward) {
      n.backward += (n.backward.empty() ? "" : "+") + in.impl;
    }
  }
  return c;
}

int run_show(const ShowOptions& o) {
  if (o.plan.empty() && o.model.model.empty())
    throw UsageError("give a model (--model) or a plan file (--plan)");
  if (!o.plan.empty() && !o.model.model.empty())
    throw UsageError(
        "give a model (--model) or a plan file (--plan), not both: a plan names "
        "its model");
  Graph g;
  ModelConfig c;
  std::string model = o.model.model;
  std::vector<NodeChoice> choices;
  if (!o.plan.empty()) {
    LoadedPlan lp = load_plan_file(o.plan);
    choices = node_choices(lp.graph, lp.plan);
    g = std::move(lp.graph);
    c = lp.plan.config;
    model = lp.plan.model;
  } else {
    g = build_graph(o.model);
    c = model_config(o.model);
  }
  if (o.json) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& n : g.nodes()) {
      const Value& out = g.value(n.output);
      std::vector<std::string> inputs;
      for (int id : n.inputs) inputs.push_back(g.value(id).name);
      nlohmann::json op = {{"name", n.name},     {"op", op_name(n.op)},
                           {"inputs", inputs},   {"attrs", describe_attrs(n.op, n.attrs)},
                           {"shape", out.shape}, {"bytes", out.bytes()}};
      if (!choices.empty())
        op["plan"] = {{"forward", choices[n.id].forward},
                      {"recomputed", choices[n.id].recomputed},
                      {"backward", choices[n.id].backward}};
      ops.push_back(op);
    }
    nlohmann::json j = {{"model", model},
                        {"batch", c.batch},
                        {"image", c.image},
                        {"width", c.width},
                        {"classes", c.classes},
                        {"fingerprint", g.fingerprint()},
                        {"parameters", g.parameter_count()},
                        {"parameter_bytes", g.parameter_bytes()},
                        {"activation_bytes", g.activation_bytes()},
                        {"operator_count", g.nodes().size()},
                        {"operators", ops}};
    if (!o.plan.empty()) {
      j["plan"] = o.plan;
      j["optimizer_update"] = update_mode_name(g.update_mode());
    }
    print_json(j);
    return 0;
  }
  std::printf("%s  batch %lld  image %s  width %g  fingerprint %s\n", model.c_str(),
              static_cast<long long>(c.batch), image_size_string(c.image).c_str(), c.width,
              g.fingerprint().c_str());
  if (!choices.empty())
    std::printf("plan %s  optimizer updates %s\n", o.plan.c_str(),
                update_mode_name(g.update_mode()));
  std::printf("%-5s %-34s %-20s %-24s %12s", "#", "operator", "kind", "output shape", "bytes");
  if (!choices.empty()) std::printf("  %-14s %-10s %s", "forward", "recomputed", "backward");
  std::printf("\n");
  for (const auto& n : g.nodes()) {
    const Value& out = g.value(n.output);
    std::printf("%-5d %-34s %-20s %-24s %12s", n.id, n.name.c_str(), op_name(n.op),
                shape_string(out.shape).c_str(), format_bytes(out.bytes()).c_str());
    if (!choices.empty())
      std::printf("  %-14s %-10d %s", choices[n.id].forward.c_str(), choices[n.id].recomputed,
                  choices[n.id].backward.empty() ? "-" : choices[n.id].backward.c_str());
    std::printf("\n");
  }
  std::printf(
      "operators: %zu (%lld on the generic ATen path)\nparameters: %lld (%s)\n"
      "activations: %s\n",
      g.nodes().size(), static_cast<long long>(g.generic_node_count()),
      static_cast<long long>(g.parameter_count()), format_bytes(g.parameter_bytes()).c_str(),
      format_bytes(g.activation_bytes(), true).c_str());
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
