#include "planner/solver/child_solve.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "base/progress.h"
#include "planner/solver/solver_request.h"

namespace monet {
namespace {

using Clock = std::chrono::steady_clock;

// Most incumbents of a solve's trace the child hands back (the first ones).
constexpr int kTraceCapacity = 256;

// What the child writes at the start of the shared memory; its values follow.
struct SharedHeader {
  int status = static_cast<int>(MilpStatus::kNoSolution);
  int has_values = 0;
  int relaxation_solved = 0;
  int relaxation_infeasible = 0;
  double objective = 0;
  double bound = 0;
  double lp_bound = 0;
  double lp_seconds = 0;
  double gap = 0;
  double seconds = 0;
  double first_incumbent_seconds = -1;
  int64_t simplex_iterations = 0;
  int trace_size = 0;
  double trace[kTraceCapacity][2] = {};  // (seconds, objective)
};

// The latest incumbent of the child's search, as it goes: a sequence number, odd while the
// child writes, then the values. A reader copies the values and keeps them only when the
// number was even and the same before and after.
struct StreamHeader {
  std::atomic<uint64_t> sequence{0};
};

// A solution's values, after `header` (when it has one per column).
void write_values(const std::vector<double>& values, int columns, SharedHeader* header) {
  if (static_cast<int>(values.size()) != columns) return;
  std::memcpy(reinterpret_cast<double*>(header + 1), values.data(), sizeof(double) * columns);
  header->has_values = 1;
}

// The values after `header`; empty when it has none.
std::vector<double> values_after(const SharedHeader* header, int columns) {
  if (!header->has_values) return {};
  const auto* values = reinterpret_cast<const double*>(header + 1);
  return std::vector<double>(values, values + columns);
}

// The result of solve_milp, written by the child into `header` (values after it).
void record(const MilpResult& r, int columns, SharedHeader* header) {
  header->status = static_cast<int>(r.status);
  header->objective = r.objective;
  header->bound = r.bound;
  header->lp_bound = r.lp_bound;
  header->lp_seconds = r.lp_seconds;
  header->gap = r.gap;
  header->seconds = r.seconds;
  header->first_incumbent_seconds = r.first_incumbent_seconds;
  header->simplex_iterations = r.simplex_iterations;
  header->trace_size = std::min<int>(kTraceCapacity, static_cast<int>(r.incumbent_trace.size()));
  for (int i = 0; i < header->trace_size; ++i) {
    header->trace[i][0] = r.incumbent_trace[i].first;
    header->trace[i][1] = r.incumbent_trace[i].second;
  }
  write_values(r.values, columns, header);
}

// The result of solve_relaxation, written by the child into `header` (values after it).
void record(const RelaxationBound& r, int columns, SharedHeader* header) {
  header->relaxation_solved = r.solved;
  header->relaxation_infeasible = r.infeasible;
  header->bound = r.bound;
  header->seconds = r.seconds;
  write_values(r.values, columns, header);
}

// Where the stream header starts in the shared memory, and its size, for `columns` values.
struct SharedLayout {
  size_t stream_offset;
  size_t bytes;
};
SharedLayout shared_layout(int columns) {
  const size_t values_bytes = sizeof(double) * static_cast<size_t>(columns);
  const size_t stream_offset = sizeof(SharedHeader) + values_bytes;
  return {stream_offset, stream_offset + sizeof(StreamHeader) + values_bytes};
}

// A memory file of `bytes` bytes (zeros), closed on exec; -1 when none can be made.
int memory_file(const char* name, size_t bytes) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Runs the request in this process, writing its result into `header` and its incumbents
// into `stream` as they come (what the solver process does). Returns its exit code.
int solve_into(const Milp& milp, const MilpOptions* options, RelaxationLimit relaxation,
               SharedHeader* header, StreamHeader* stream) {
  const int columns = milp.columns();
  const size_t values_bytes = sizeof(double) * static_cast<size_t>(columns);
  try {
    if (!options) {
      record(solve_relaxation(milp, relaxation, nullptr, SolveProcess::kThisProcess), columns,
             header);
      return 0;
    }
    MilpOptions o = *options;
    o.process = SolveProcess::kThisProcess;
    o.on_incumbent = [stream, values_bytes](const std::vector<double>& x) {
      const uint64_t s = stream->sequence.load(std::memory_order_relaxed);
      stream->sequence.store(s + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      std::memcpy(reinterpret_cast<double*>(stream + 1), x.data(),
                  std::min(values_bytes, sizeof(double) * x.size()));
      stream->sequence.store(s + 2, std::memory_order_release);
    };
    record(solve_milp(milp, o), columns, header);
    return 0;
  } catch (...) {
    return 1;
  }
}

// The solver process, started from its executable with the request on descriptor
// kRequestFd, the result's memory on kResultFd and the progress pipe on kProgressFd.
// posix_spawn runs nothing in the child before exec, so it is safe from a multi-threaded
// process; the solver process then starts with a single thread of its own.
constexpr int kRequestFd = 3, kResultFd = 4, kProgressFd = 5;

pid_t spawn_solver(const std::string& solver, const Milp& milp, const MilpOptions* options,
                   RelaxationLimit relaxation, int shared_fd, int progress_fd) {
  const std::string request = solver_request_bytes(milp, options, relaxation);
  const int request_fd = memory_file("monet-solve-request", 0);
  if (request_fd < 0) return -1;
  size_t written = 0;
  while (written < request.size()) {
    const ssize_t n = write(request_fd, request.data() + written, request.size() - written);
    if (n <= 0) {
      close(request_fd);
      return -1;
    }
    written += static_cast<size_t>(n);
  }
  // Above the three target descriptors, so that no dup2 overwrites a source.
  int fds[3] = {fcntl(request_fd, F_DUPFD_CLOEXEC, 10), fcntl(shared_fd, F_DUPFD_CLOEXEC, 10),
                fcntl(progress_fd, F_DUPFD_CLOEXEC, 10)};
  close(request_fd);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  if (fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0 && posix_spawn_file_actions_init(&actions) == 0) {
    bool ready = posix_spawn_file_actions_adddup2(&actions, fds[0], kRequestFd) == 0 &&
                 posix_spawn_file_actions_adddup2(&actions, fds[1], kResultFd) == 0 &&
                 posix_spawn_file_actions_adddup2(&actions, fds[2], kProgressFd) == 0;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // None of this process's other descriptors (the caller's files, sockets) reach it.
    ready = ready && posix_spawn_file_actions_addclosefrom_np(&actions, kProgressFd + 1) == 0;
#endif
    const std::string parent = std::to_string(getpid());
    char* argv[] = {const_cast<char*>(solver.c_str()), const_cast<char*>(parent.c_str()), nullptr};
    if (!ready || posix_spawn(&pid, solver.c_str(), &actions, nullptr, argv, environ) != 0)
      pid = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  for (const int fd : fds)
    if (fd >= 0) close(fd);
  return pid;
}

// Where no solver executable is found or it cannot be started: a fork of this process runs
// the request. (A fork
// of a multi-threaded process may block on a lock another thread held at the fork; the
// stall check ends such a child.)
pid_t fork_solver(const Milp& milp, const MilpOptions* options, RelaxationLimit relaxation,
                  SharedHeader* header, StreamHeader* stream, const int pipe_fds[2]) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // ends with this process, e.g. on Ctrl-C
  if (getppid() != parent) _exit(2);
#endif
  close(pipe_fds[0]);
  fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);  // a full pipe drops lines, never stalls
  write_progress_to_fd(pipe_fds[1]);
  _exit(solve_into(milp, options, relaxation, header, stream));  // no destructors or exit handlers
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Where monet-solver may lie, relative to the folder of the file that holds this code:
// beside it (the build tree), in its monet/ folder (installed libmonet.so), or, for the
// installed CLI in bin/, in lib/monet/ or lib/<multiarch>/monet/ beside bin/.
std::vector<std::string> solver_candidates(const std::string& dir) {
  std::vector<std::string> out = {dir + "monet-solver", dir + "monet/monet-solver",
                                  dir + "../lib/monet/monet-solver"};
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "../lib", ec))
    if (e.is_directory(ec)) out.push_back(e.path().string() + "/monet/monet-solver");
  return out;
}

}  // namespace

// The solver executable: $MONET_SOLVER when set (empty: none), else the first of
// solver_candidates() that exists; empty when there is none.
const std::string& solver_executable() {
  static const std::string path = [] {
    if (const char* env = std::getenv("MONET_SOLVER")) return std::string(env);
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&solver_executable), &info) == 0 || !info.dli_fname)
      return std::string();
    char resolved[PATH_MAX];
    std::string library = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
    for (const std::string& candidate :
         solver_candidates(library.substr(0, library.rfind('/') + 1)))
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    return std::string();
  }();
  return path;
}

ChildSolve::ChildSolve(const Milp& milp, const MilpOptions& options) : columns_(milp.columns()) {
  start(milp, &options, {});
}

ChildSolve::ChildSolve(const Milp& milp, RelaxationLimit limit) : columns_(milp.columns()) {
  start(milp, nullptr, limit);
}

void ChildSolve::start(const Milp& milp, const MilpOptions* options, RelaxationLimit relaxation) {
  failure_ = "the solver process could not be started";
  const SharedLayout layout = shared_layout(columns_);
  stream_offset_ = layout.stream_offset;
  shared_bytes_ = layout.bytes;
  const std::string& solver = solver_executable();
  // The result's memory: a memory file the solver process maps too (a fork shares it).
  const int shared_fd = memory_file("monet-solve-result", shared_bytes_);
  if (shared_fd < 0) return;
  void* mem = mmap(nullptr, shared_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, shared_fd, 0);
  if (mem == MAP_FAILED) {
    close(shared_fd);
    return;
  }
  shared_ = mem;
  auto* header = new (shared_) SharedHeader();
  auto* stream = new (static_cast<char*>(shared_) + stream_offset_) StreamHeader();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    close(shared_fd);
    return;
  }
  // Where the executable cannot be started (no resources, a bad MONET_SOLVER), a fork.
  pid_t pid =
      solver.empty() ? -1 : spawn_solver(solver, milp, options, relaxation, shared_fd, pipe_fds[1]);
  if (pid <= 0) pid = fork_solver(milp, options, relaxation, header, stream, pipe_fds);
  close(shared_fd);
  close(pipe_fds[1]);
  if (pid <= 0) {
    close(pipe_fds[0]);
    return;
  }
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  progress_fd_ = pipe_fds[0];
  pid_ = pid;
  ended_ = false;
  failure_.clear();
}

ChildSolve::~ChildSolve() {
  kill();
  reap(true);
  if (progress_fd_ >= 0) close(progress_fd_);
  if (shared_) munmap(shared_, shared_bytes_);
}

void ChildSolve::reap(bool block) {
  if (ended_) return;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return;  // still running
  ended_ = true;
  succeeded_ = r == pid_ && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (succeeded_) return;
  if (stalled_) {
    failure_ = "the solver process hung (it used no CPU time for " +
               std::to_string(static_cast<int>(kChildStallSeconds)) + " s) and was stopped";
  } else if (killed_) {
    failure_ = "the solver process was stopped";
  } else if (r == pid_ && WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    failure_ = "the solver process was ended by signal " + std::to_string(signal) + " (" +
               strsignal(signal) + ")";
    if (signal == SIGABRT) failure_ += ": an internal assertion of CLP or CBC failed";
    aborted_ = true;
  } else {
    failure_ = "the solver process failed";
  }
}

bool ChildSolve::kill_if_stalled(double seconds) {
  if (ended_) return false;
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')');
  if (name_end == std::string::npos) return false;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  int64_t ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)  // utime and stime: fields 14 and 15
    if (i >= 14) ticks += std::stoll(field);
  const auto now = Clock::now();
  if (ticks != cpu_ticks_) {
    cpu_ticks_ = ticks;
    cpu_seen_ = now;
    return false;
  }
  if (std::chrono::duration<double>(now - cpu_seen_).count() < seconds) return false;
  stalled_ = true;
  kill();
  return true;
}

bool ChildSolve::finished() {
  reap(false);
  return ended_;
}

void ChildSolve::wait_for_news(double seconds) {
  if (ended_) return;
  pollfd p{progress_fd_, POLLIN, 0};
  const int ms = std::max(1, static_cast<int>(seconds * 1000));
  // The pipe's end of file comes when the child exits (unless a process forked meanwhile
  // holds its write end too: then the timeout).
  if (progress_fd_ < 0 || poll(&p, 1, ms) < 0) usleep(static_cast<useconds_t>(ms) * 1000);
}

bool ChildSolve::newer_incumbent(std::vector<double>* values) {
  if (!shared_) return false;
  const auto* stream =
      reinterpret_cast<const StreamHeader*>(static_cast<const char*>(shared_) + stream_offset_);
  const uint64_t before = stream->sequence.load(std::memory_order_acquire);
  if (before % 2 == 1 || before == seen_) return false;
  const auto* x = reinterpret_cast<const double*>(stream + 1);
  std::vector<double> copy(x, x + columns_);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (stream->sequence.load(std::memory_order_relaxed) != before) return false;
  seen_ = before;
  *values = std::move(copy);
  return true;
}

void ChildSolve::forward_progress() {
  if (progress_fd_ < 0) return;
  char buffer[4096];
  ssize_t n;
  while ((n = read(progress_fd_, buffer, sizeof buffer)) > 0) progress_.append(buffer, n);
  size_t line_end;
  while ((line_end = progress_.find('\n')) != std::string::npos) {
    report_progress("%s", progress_.substr(0, line_end + 1).c_str());
    progress_.erase(0, line_end + 1);
  }
}

void ChildSolve::kill() {
  if (ended_) return;
  killed_ = true;
  ::kill(pid_, SIGKILL);
}

const void* ChildSolve::ended_result() {
  reap(true);
  forward_progress();
  return succeeded_ ? shared_ : nullptr;
}

MilpResult ChildSolve::wait() {
  MilpResult r;
  const auto* header = static_cast<const SharedHeader*>(ended_result());
  if (!header) return r;
  r.status = static_cast<MilpStatus>(header->status);
  r.objective = header->objective;
  r.bound = header->bound;
  r.lp_bound = header->lp_bound;
  r.lp_seconds = header->lp_seconds;
  r.gap = header->gap;
  r.seconds = header->seconds;
  r.first_incumbent_seconds = header->first_incumbent_seconds;
  r.simplex_iterations = header->simplex_iterations;
  for (int i = 0; i < header->trace_size; ++i)
    r.incumbent_trace.push_back({header->trace[i][0], header->trace[i][1]});
  r.values = values_after(header, columns_);
  return r;
}

RelaxationBound ChildSolve::wait_relaxation() {
  RelaxationBound r;
  const auto* header = static_cast<const SharedHeader*>(ended_result());
  if (!header) return r;
  r.solved = header->relaxation_solved;
  r.infeasible = header->relaxation_infeasible;
  r.bound = header->bound;
  r.seconds = header->seconds;
  r.values = values_after(header, columns_);
  return r;
}

namespace {

// Follows `child` until it ends: forwards its progress lines and incumbents (to
// options.on_incumbent), keeps the best incumbent in `*best`, and kills it once past the
// limit by the overrun. Returns its result.
MilpResult follow(const Milp& milp, const MilpOptions& options, ChildSolve* child,
                  std::vector<double>* best) {
  const auto t0 = Clock::now();
  const auto take_incumbent = [&] {
    std::vector<double> x;
    if (!child->newer_incumbent(&x)) return;
    if (options.on_incumbent) options.on_incumbent(x);
    if (milp.satisfies(x) && (best->empty() || milp.objective_of(x) < milp.objective_of(*best)))
      *best = std::move(x);
  };
  while (!child->finished()) {
    child->wait_for_news(0.05);
    child->forward_progress();
    take_incumbent();
    if (seconds_since(t0) > wall_limit(options.search_limit, options.time_limit_seconds) +
                                options.child_overrun_seconds)
      child->kill();
    child->kill_if_stalled(kChildStallSeconds);
  }
  take_incumbent();
  return child->wait();
}

}  // namespace

MilpResult solve_milp_in_child(const Milp& milp, const MilpOptions& options) {
  const auto t0 = Clock::now();
  std::vector<double> best;  // the best incumbent reported, for when a child fails
  if (static_cast<int>(options.warm_start.size()) == milp.columns()) best = options.warm_start;
  MilpOptions o = options;
  for (;;) {
    const double start = seconds_since(t0);
    ChildSolve child(milp, o);
    MilpResult r = follow(milp, o, &child, &best);
    if (child.failure().empty()) {  // times since t0, a retry's included
      r.seconds += start;
      if (r.first_incumbent_seconds > 0) r.first_incumbent_seconds += start;
      for (auto& [seconds, objective] : r.incumbent_trace)
        if (seconds > 0) seconds += start;
      return r;
    }
    const double left =
        wall_limit(options.search_limit, options.time_limit_seconds) - seconds_since(t0);
    const bool retry = child.aborted() && o.primal_pricing != PrimalPricing::kDantzig && left >= 1;
    report_warning("solver: %s; %s\n", child.failure().c_str(),
                   retry          ? "solving again with Dantzig pricing in primal simplex"
                   : best.empty() ? "no solution"
                                  : "the best solution it had reported stands");
    if (retry) {
      o.primal_pricing = PrimalPricing::kDantzig;
      if (std::isfinite(left)) o.time_limit_seconds = left;
      if (!best.empty()) o.warm_start = best;
      continue;
    }
    r = MilpResult();
    r.bound = -std::numeric_limits<double>::infinity();
    if (!best.empty()) {
      r.status = MilpStatus::kFeasible;
      r.objective = milp.objective_of(best);
      r.values = std::move(best);
      r.first_incumbent_seconds = r.values == options.warm_start ? 0 : seconds_since(t0);
      r.incumbent_trace.push_back({r.first_incumbent_seconds, r.objective});
    }
    return finished(std::move(r), t0, options.progress);
  }
}

RelaxationBound solve_relaxation_in_child(const Milp& milp, RelaxationLimit limit,
                                          const std::atomic<bool>* stop, double overrun_seconds) {
  const auto t0 = Clock::now();
  ChildSolve child(milp, limit);
  bool stopped = false;
  while (!child.finished()) {
    child.wait_for_news(0.05);
    child.forward_progress();
    stopped = stopped || (stop && stop->load());
    if (stopped || seconds_since(t0) > limit.seconds + overrun_seconds) child.kill();
    child.kill_if_stalled(kChildStallSeconds);
  }
  RelaxationBound r = child.wait_relaxation();
  if (!child.failure().empty() && !stopped)
    report_warning("solver: LP relaxation: %s; no bound\n", child.failure().c_str());
  r.seconds = seconds_since(t0);
  return r;
}

int solver_process_main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "monet-solver: the planner starts this process (child_solve.h)\n");
    return 2;
  }
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // ends with the planner's process, e.g. on Ctrl-C
  if (getppid() != static_cast<pid_t>(std::atoll(argv[1]))) return 2;
#endif
  struct stat request_stat {};
  struct stat result_stat {};
  if (fstat(kRequestFd, &request_stat) != 0 || fstat(kResultFd, &result_stat) != 0) return 2;
  std::string request(static_cast<size_t>(request_stat.st_size), '\0');
  size_t got = 0;
  while (got < request.size()) {
    const ssize_t n =
        pread(kRequestFd, request.data() + got, request.size() - got, static_cast<off_t>(got));
    if (n <= 0) return 2;
    got += static_cast<size_t>(n);
  }
  SolverRequest r;
  if (!parse_solver_request(request.data(), request.size(), &r)) {
    std::fprintf(stderr, "monet-solver: the request is not one this build reads\n");
    return 2;
  }
  request.clear();
  request.shrink_to_fit();
  close(kRequestFd);
  const SharedLayout layout = shared_layout(r.milp.columns());
  if (static_cast<size_t>(result_stat.st_size) != layout.bytes) return 2;
  void* shared = mmap(nullptr, layout.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kResultFd, 0);
  if (shared == MAP_FAILED) return 2;
  fcntl(kProgressFd, F_SETFL, O_NONBLOCK);  // a full pipe drops lines, never stalls
  write_progress_to_fd(kProgressFd);
  const int code = solve_into(
      r.milp, r.task == SolverTask::kBranchAndCut ? &r.options : nullptr, r.relaxation,
      static_cast<SharedHeader*>(shared),
      reinterpret_cast<StreamHeader*>(static_cast<char*>(shared) + layout.stream_offset));
  std::fflush(nullptr);
  _exit(code);  // the result is written: no static destructors (CBC's) or exit-time checks
}

}  // namespace monet
