// The `monet` executable: parses the command line and dispatches to a subcommand.
// Exit codes: 0 success, 1 runtime failure, 2 bad usage or bad input.
#include <iostream>

#include "cli/cli_common.h"
#include "cli/rank_launcher.h"

int main(int argc, char** argv) {
  // Count every tensor from the first one on.
  monet::MemoryStats::install();
  monet::cli::set_command_line(argc, argv);

  CLI::App app{"monet: train deep networks in less memory (MONeT)", "monet"};
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<monet::cli::Command> commands;
  monet::cli::add_models_command(app, commands);
  monet::cli::add_show_command(app, commands);
  monet::cli::add_baseline_command(app, commands);
  monet::cli::add_profile_command(app, commands);
  monet::cli::add_plan_command(app, commands);
  monet::cli::add_sweep_command(app, commands);
  monet::cli::add_run_commands(app, commands);
  monet::cli::add_train_command(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "monet: error: " << e.what() << "\n";
    return 2;
  }
  for (const auto& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const monet::cli::ReportedElsewhere& e) {
      return e.exit_code;
    } catch (const monet::cli::UsageError& e) {
      std::cerr << "monet: error: " << e.what() << "\n";
      return 2;
    } catch (const c10::Error& e) {
      std::cerr << "monet: error: " << e.what_without_backtrace() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "monet: error: " << e.what() << "\n";
      return 1;
    }
  }
  return 2;
}
