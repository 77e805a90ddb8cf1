#include "cli/rank_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

namespace monet::cli {
namespace {

std::vector<std::string> g_command_line;
volatile sig_atomic_t g_forward_signal = 0;

void remember_signal(int sig) { g_forward_signal = sig; }

pid_t start_rank(const LaunchOptions& o, int local, const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot start a rank: ") + std::strerror(errno));
  if (pid > 0) return pid;
  setenv("MASTER_ADDR", o.master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(o.master_port).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(o.nnodes * o.nproc).c_str(), 1);
  setenv("RANK", std::to_string(o.node_rank * o.nproc + local).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  std::fprintf(stderr, "monet: error: cannot start rank %d: %s\n", o.node_rank * o.nproc + local,
               std::strerror(errno));
  _exit(127);
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Stops the ranks still running: SIGTERM, then SIGKILL after the grace period.
void stop_all(std::map<pid_t, int>& running, double grace_seconds) {
  for (const auto& [pid, rank] : running) kill(pid, SIGTERM);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  while (!running.empty()) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      running.erase(pid);
    } else if (std::chrono::steady_clock::now() > deadline) {
      for (const auto& [p, rank] : running) kill(p, SIGKILL);
      while (!running.empty() && (pid = waitpid(-1, &status, 0)) > 0) running.erase(pid);
      return;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

}  // namespace

void set_command_line(int argc, char** argv) { g_command_line.assign(argv, argv + argc); }
const std::vector<std::string>& command_line() { return g_command_line; }

int launch_ranks(const LaunchOptions& o, const std::vector<std::string>& argv) {
  std::map<pid_t, int> running;  // pid -> rank
  struct sigaction sa {};
  sa.sa_handler = remember_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  for (int local = 0; local < o.nproc; ++local)
    running[start_rank(o, local, argv)] = o.node_rank * o.nproc + local;
  while (!running.empty()) {
    if (g_forward_signal != 0) {
      for (const auto& [pid, rank] : running) kill(pid, g_forward_signal);
      g_forward_signal = 0;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const int rank = it->second;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    // A rank that exits with 1 or 2 has printed its error (main()); one that ended
    // otherwise (a signal, an abort) has not.
    const bool reported =
        WIFEXITED(status) && (WEXITSTATUS(status) == 1 || WEXITSTATUS(status) == 2);
    if (!reported)
      std::fprintf(stderr,
                   "monet: error: rank %d (pid %d) %s; stopping the other %zu rank(s) here\n", rank,
                   static_cast<int>(pid), how_it_ended(status).c_str(), running.size());
    stop_all(running, o.stop_grace_seconds);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  return 0;
}

}  // namespace monet::cli
