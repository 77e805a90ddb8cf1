// SolverRequest: what a solver process (child_solve.h) is asked to solve, a Milp and the
// options of its solve, as bytes written by the parent and read back by the process.
// Every number keeps its unit from milp.h (seconds, iterations, columns).
#pragma once

#include <cstdint>
#include <string>

#include "planner/solver/milp.h"

namespace monet {

/// Which of the solver layer's two solves a request asks for.
enum class SolverTask : int32_t {
  kBranchAndCut,  // solve_milp(milp, options)
  kRelaxation,    // solve_relaxation(milp, relaxation)
};

struct SolverRequest {
  SolverTask task = SolverTask::kBranchAndCut;
  Milp milp;
  /// The solve's options (kBranchAndCut). Callbacks do not travel: on_incumbent is the
  /// parent's, fed from the shared incumbent stream; process is SolveProcess::kThisProcess.
  MilpOptions options;
  RelaxationLimit relaxation;  // kRelaxation's limit
};

/// The request to solve `milp`: by branch and cut with `*options`, or its LP relaxation
/// within `relaxation` when `options` is null.
std::string solver_request_bytes(const Milp& milp, const MilpOptions* options,
                                 RelaxationLimit relaxation);

/// Reads what solver_request_bytes() wrote. False (and `out` unspecified) when `size`
/// bytes at `data` are not such a request (truncated, or another version's).
bool parse_solver_request(const char* data, size_t size, SolverRequest* out);

}  // namespace monet
