// RankLauncher: `monet train --nproc N` starts N ranks of this executable on this host,
// as torchrun does: each gets the same arguments and torchrun's environment variables
// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK).
#pragma once

#include <string>
#include <vector>

namespace monet::cli {

struct LaunchOptions {
  int nproc = 1;      // ranks on this host
  int nnodes = 1;     // hosts
  int node_rank = 0;  // this host's index: its ranks are node_rank * nproc + 0 .. nproc - 1
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  /// After one rank fails, how long the others get to stop on SIGTERM before SIGKILL
  /// (seconds).
  double stop_grace_seconds = 10;
};

/// Runs `argv` (argv[0] is replaced by this executable) as this host's ranks and waits
/// for them. Returns 0 when every rank exits 0. When a rank exits non-zero or is killed,
/// prints which rank and how on stderr, stops the other ranks (SIGTERM, then SIGKILL
/// after the grace period) and returns that rank's exit status (1 when it was killed). SIGINT and
/// SIGTERM are passed on to the ranks.
int launch_ranks(const LaunchOptions& options, const std::vector<std::string>& argv);

/// The command line main() was given (for launch_ranks).
void set_command_line(int argc, char** argv);
const std::vector<std::string>& command_line();

}  // namespace monet::cli
