#include "planner/child_solve.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <new>

namespace monet {
namespace {

// What the child writes at the start of the shared memory; its values follow.
struct SharedHeader {
  int status = static_cast<int>(MilpStatus::kNoSolution);
  int has_values = 0;
  double objective = 0;
  double bound = 0;
  double seconds = 0;
};

// The latest incumbent of the child's search, as it goes: a sequence number, odd while the
// child writes, then the values. A reader copies the values and keeps them only when the
// number was even and the same before and after.
struct StreamHeader {
  std::atomic<uint64_t> sequence{0};
};

}  // namespace

ChildSolve::ChildSolve(const Milp& milp, const MilpOptions& options) : columns_(milp.columns()) {
  const size_t values_bytes = sizeof(double) * static_cast<size_t>(columns_);
  stream_offset_ = sizeof(SharedHeader) + values_bytes;
  shared_bytes_ = stream_offset_ + sizeof(StreamHeader) + values_bytes;
  void* mem =
      mmap(nullptr, shared_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;
  shared_ = mem;
  new (shared_) SharedHeader();
  auto* stream = new (static_cast<char*>(shared_) + stream_offset_) StreamHeader();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // ends with this process, e.g. on Ctrl-C
    if (getppid() != parent) _exit(2);
#endif
    int code = 0;
    try {
      MilpOptions o = options;
      o.progress = false;
      o.on_incumbent = [stream, values_bytes](const std::vector<double>& x) {
        const uint64_t s = stream->sequence.load(std::memory_order_relaxed);
        stream->sequence.store(s + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        std::memcpy(reinterpret_cast<double*>(stream + 1), x.data(),
                    std::min(values_bytes, sizeof(double) * x.size()));
        stream->sequence.store(s + 2, std::memory_order_release);
      };
      const MilpResult r = solve_milp(milp, o);
      auto* header = static_cast<SharedHeader*>(shared_);
      header->status = static_cast<int>(r.status);
      header->objective = r.objective;
      header->bound = r.bound;
      header->seconds = r.seconds;
      if (static_cast<int>(r.values.size()) == columns_) {
        std::memcpy(reinterpret_cast<double*>(header + 1), r.values.data(),
                    sizeof(double) * r.values.size());
        header->has_values = 1;
      }
    } catch (...) {
      code = 1;
    }
    _exit(code);  // no destructors or exit handlers of the parent's copy
  }
  pid_ = pid;
  ended_ = false;
}

ChildSolve::~ChildSolve() {
  if (!ended_) {
    kill(pid_, SIGKILL);
    reap(true);
  }
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
}

bool ChildSolve::finished() {
  reap(false);
  return ended_;
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

MilpResult ChildSolve::wait() {
  reap(true);
  MilpResult r;
  if (!succeeded_ || !shared_) return r;
  const auto* header = static_cast<const SharedHeader*>(shared_);
  r.status = static_cast<MilpStatus>(header->status);
  r.objective = header->objective;
  r.bound = header->bound;
  r.seconds = header->seconds;
  if (header->has_values) {
    const auto* values = reinterpret_cast<const double*>(header + 1);
    r.values.assign(values, values + columns_);
  }
  return r;
}

}  // namespace monet
