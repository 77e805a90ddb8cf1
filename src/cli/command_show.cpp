// `monet show`: a model's operators, output shapes, activation bytes, parameter count.
#include <cstdio>

#include "cli/cli_common.h"

namespace monet::cli {
namespace {

struct ShowOptions {
  ModelOptions model;
  bool json = false;
};

int run_show(const ShowOptions& o) {
  const Graph g = build_graph(o.model);
  const ModelConfig c = model_config(o.model);
  if (o.json) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& n : g.nodes()) {
      const Value& out = g.value(n.output);
      std::vector<std::string> inputs;
      for (int id : n.inputs) inputs.push_back(g.value(id).name);
      ops.push_back({{"name", n.name},
                     {"op", op_name(n.op)},
                     {"inputs", inputs},
                     {"attrs", describe_attrs(n.op, n.attrs)},
                     {"shape", out.shape},
                     {"bytes", out.bytes()}});
    }
    print_json({{"model", o.model.model},
                {"batch", c.batch},
                {"image", c.image},
                {"width", c.width},
                {"classes", c.classes},
                {"fingerprint", g.fingerprint()},
                {"parameters", g.parameter_count()},
                {"parameter_bytes", g.parameter_bytes()},
                {"activation_bytes", g.activation_bytes()},
                {"operator_count", g.nodes().size()},
                {"operators", ops}});
    return 0;
  }
  std::printf("%s  batch %lld  image %s  width %g  fingerprint %s\n", o.model.model.c_str(),
              static_cast<long long>(c.batch), image_size_string(c.image).c_str(), c.width,
              g.fingerprint().c_str());
  std::printf("%-5s %-34s %-20s %-24s %12s\n", "#", "operator", "kind", "output shape", "bytes");
  for (const auto& n : g.nodes()) {
    const Value& out = g.value(n.output);
    std::printf("%-5d %-34s %-20s %-24s %12s\n", n.id, n.name.c_str(), op_name(n.op),
                shape_string(out.shape).c_str(), format_bytes(out.bytes()).c_str());
  }
  std::printf("operators: %zu\nparameters: %lld (%s)\nactivations: %s\n", g.nodes().size(),
              static_cast<long long>(g.parameter_count()),
              format_bytes(g.parameter_bytes()).c_str(),
              format_bytes(g.activation_bytes(), true).c_str());
  return 0;
}

}  // namespace

void add_show_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("show", "print a model's operators, shapes and sizes");
  auto o = std::make_shared<ShowOptions>();
  add_model_options(cmd, o->model);
  cmd->add_flag("--json", o->json, "machine-readable output");
  commands.push_back({cmd, [o] { return run_show(*o); }});
}

}  // namespace monet::cli
