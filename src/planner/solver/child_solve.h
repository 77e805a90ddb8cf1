// ChildSolve: solve_milp() or solve_relaxation() run in a process of their own. Two reasons:
// - CLP and CBC, as Debian builds them, keep their internal assertions, and some fail on
//   some programs and abort the process (ClpPrimalColumnSteepest's, depending on the
//   numbers): in a child that costs the solve, not the program;
// - CbcMain1, which every branch and cut goes through, is not reentrant (its argument
//   parser keeps its position in a global), so a second CBC search beside one in this
//   process (the neighbourhood search's second core) needs a process of its own.
// The process is the solver executable, monet-solver (the solver layer and CBC, no
// LibTorch), started with posix_spawn: a fork of a multi-threaded process (a Python
// interpreter, the planner's own threads) may wait forever on a lock that another thread
// held at the fork, which AddressSanitizer's allocator makes likely. The request travels as
// bytes (solver_request.h); the process hands back its incumbents as it finds them and its
// result through memory shared with this process, and its progress lines through a pipe.
// Where no executable is found (solver_executable()) or it cannot be started, a fork of
// this process runs the solve instead. Linux.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/solver/milp.h"

namespace monet {

/// A solver process that uses no CPU time for this long (seconds of wall time) is taken as
/// hung and stopped (ChildSolve::kill_if_stalled): a running solve always uses some.
constexpr double kChildStallSeconds = 30;

/// The solver executable the solves start: $MONET_SOLVER when set (set and empty: none),
/// else monet-solver beside libmonet (the build tree) or in its monet/ folder (installed);
/// empty when none is found, and then the solves run in forks of this process.
const std::string& solver_executable();

/// The solver executable's main(): runs the request on descriptor 3 into the memory on 4,
/// its progress lines to the pipe on 5, and exits 0 (solved, whatever the outcome), 1 (the
/// solver threw) or 2 (not started by ChildSolve: a bad request or descriptor).
int solver_process_main(int argc, char** argv);

class ChildSolve {
 public:
  /// Starts solve_milp(milp, options) in a child process; its progress lines, when
  /// options.progress, come back through forward_progress(). When the child cannot be
  /// started, the solve is finished at once with no solution.
  ChildSolve(const Milp& milp, const MilpOptions& options);
  /// Starts solve_relaxation(milp, limit) in a child process.
  ChildSolve(const Milp& milp, RelaxationLimit limit);
  /// A child still running is killed.
  ~ChildSolve();
  ChildSolve(const ChildSolve&) = delete;
  ChildSolve& operator=(const ChildSolve&) = delete;

  /// Whether the child has ended (without waiting).
  bool finished();
  /// Waits until the child ends, sends output, or `seconds` pass.
  void wait_for_news(double seconds);
  /// The latest incumbent the child's branch and cut has found, when there is one newer
  /// than the last this returned (without waiting).
  bool newer_incumbent(std::vector<double>* values);
  /// Hands the child's whole progress lines received so far to report_progress().
  void forward_progress();
  /// Ends the child at once (SIGKILL) when it is still running.
  void kill();
  /// Kills the child, and returns true, when it has used no CPU time for `seconds` of
  /// wall time: hung (a process forked from a multi-threaded one can wait forever on a
  /// lock another thread held at the fork). failure() then says so. Reads /proc (Linux);
  /// false elsewhere.
  bool kill_if_stalled(double seconds);
  /// Waits for the child to end and returns solve_milp's result (per column of the milp
  /// solved); kNoSolution with no values when the child failed (crashed, killed, or could
  /// not start).
  MilpResult wait();
  /// Waits for the child to end and returns solve_relaxation's result; not solved when
  /// the child failed.
  RelaxationBound wait_relaxation();
  /// Why the child failed, for a message ("" when it ended normally or still runs).
  const std::string& failure() const { return failure_; }
  /// Whether the child was ended by a signal this object did not send (a failed assertion
  /// inside the solver aborts).
  bool aborted() const { return aborted_; }

 private:
  void start(const Milp& milp, const MilpOptions* options, RelaxationLimit relaxation);
  void reap(bool block);
  /// Waits for the child and forwards its last progress lines; the shared result, or null
  /// when the child failed.
  const void* ended_result();

  pid_t pid_ = -1;
  bool ended_ = true;
  bool succeeded_ = false;
  bool killed_ = false;
  bool aborted_ = false;
  bool stalled_ = false;
  int64_t cpu_ticks_ = -1;                          // the child's CPU time when last read
  std::chrono::steady_clock::time_point cpu_seen_;  // when it last changed
  std::string failure_;
  int columns_ = 0;
  int progress_fd_ = -1;    // read end of the child's progress pipe; its end of file: exit
  std::string progress_;    // a partial line read from the pipe
  void* shared_ = nullptr;  // the result: a header, then one double per column
  size_t shared_bytes_ = 0;
  size_t stream_offset_ = 0;  // where the incumbents stream starts in shared_
  uint64_t seen_ = 0;         // sequence number of the last incumbent read
};

/// solve_milp(milp, options) in a child process: its progress lines and incumbents come
/// back as it goes, and it is killed once options.child_overrun_seconds past the time
/// limit. When the child fails, the best incumbent it reported (else the warm start)
/// stands, with no bound, and a warning says why.
MilpResult solve_milp_in_child(const Milp& milp, const MilpOptions& options);

/// solve_relaxation(milp, limit) in a child process, killed once `*stop` (when not null) is
/// set or `overrun_seconds` past the limit's wall seconds. A failed child gives no bound,
/// and a warning says why.
RelaxationBound solve_relaxation_in_child(const Milp& milp, RelaxationLimit limit,
                                          const std::atomic<bool>* stop, double overrun_seconds);

}  // namespace monet
