// `monet models`: the zoo.
#include <cstdio>

#include "cli/cli_common.h"

namespace monet::cli {

void add_models_command(CLI::App& root, std::vector<Command>& commands) {
  auto* cmd = root.add_subcommand("models", "list the model zoo");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "machine-readable output");
  commands.push_back({cmd, [json] {
                        if (*json) {
                          nlohmann::json out = nlohmann::json::array();
                          for (const ZooModel& m : model_zoo())
                            out.push_back({{"name", m.name},
                                           {"description", m.description},
                                           {"spatial_dims", m.spatial_dims},
                                           {"default_image", m.default_image},
                                           {"default_classes", m.default_classes}});
                          print_json(out);
                          return 0;
                        }
                        std::printf("%-14s %-12s %s\n", "model", "input", "description");
                        for (const ZooModel& m : model_zoo())
                          std::printf("%-14s %-12s %s\n", m.name.c_str(),
                                      image_size_string(m.default_image).c_str(),
                                      m.description.c_str());
                        return 0;
                      }});
}

}  // namespace monet::cli
