// ChildSolve: solve_milp() run in a child process (fork), so that a second CBC search runs
// on the second core beside one in this process. CbcMain1, which every branch and cut goes
// through, is not reentrant (its argument parser keeps its position in a global), so two
// searches cannot share a process; a child has its own copy of everything and hands back
// its incumbents as it finds them and its result, through memory shared with this process. The
// child runs CBC alone (no LibTorch, no threads, no output) and ends with _exit. POSIX only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "planner/milp.h"

namespace monet {

class ChildSolve {
 public:
  /// Starts solve_milp(milp, options) in a child process (its progress lines off). When the
  /// child cannot be started, the solve is finished at once with no solution.
  ChildSolve(const Milp& milp, const MilpOptions& options);
  /// A child still running is killed.
  ~ChildSolve();
  ChildSolve(const ChildSolve&) = delete;
  ChildSolve& operator=(const ChildSolve&) = delete;

  /// Whether the child has ended (without waiting).
  bool finished();
  /// The latest incumbent the child's branch and cut has found, when there is one newer
  /// than the last this returned (without waiting).
  bool newer_incumbent(std::vector<double>* values);
  /// Waits for the child to end and returns its status, objective, bound and values (per
  /// column of the milp solved); kNoSolution with no values when the child failed
  /// (crashed, killed, or could not start).
  MilpResult wait();

 private:
  void reap(bool block);

  pid_t pid_ = -1;
  bool ended_ = true;
  bool succeeded_ = false;
  int columns_ = 0;
  void* shared_ = nullptr;  // the result: a header, then one double per column
  size_t shared_bytes_ = 0;
  size_t stream_offset_ = 0;  // where the incumbents stream starts in shared_
  uint64_t seen_ = 0;         // sequence number of the last incumbent read
};

}  // namespace monet
