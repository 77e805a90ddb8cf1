// The cost of starting a solve in a solver process (planner/solver/child_solve.h): a program of
// 400,000 binary columns and 4.4M nonzeros, its LP relaxation limited to one simplex
// iteration, three times; argument: GiB of extra resident memory in this process (a fork
// copies its page tables). bench/solver_start.sh builds and runs it.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include "planner/solver/child_solve.h"
#include "planner/solver/solver_request.h"
using namespace monet;
int main(int argc, char** argv) {
  const int columns = 400000, per_row = 11;
  Milp m;
  for (int c = 0; c < columns; ++c) m.add_binary(1.0 + c % 7);
  for (int r = 0; r < columns; ++r) {
    std::vector<std::pair<int, double>> t;
    for (int k = 0; k < per_row; ++k) t.push_back({(r * 31 + k * 7919) % columns, 1.0 + k});
    m.add_row(t, 1, 1e30);
  }
  std::vector<char> resident;
  if (argc > 1) {
    resident.assign(size_t(std::atof(argv[1]) * (1 << 30)), 1);
  }
  std::printf("solver: '%s', %d columns, %lld nonzeros, %zu MB resident extra\n",
              solver_executable().c_str(), m.columns(), (long long)m.nonzeros(),
              resident.size() >> 20);
  auto t0 = std::chrono::steady_clock::now();
  const std::string bytes = solver_request_bytes(m, nullptr, {});
  auto t1 = std::chrono::steady_clock::now();
  std::printf("request: %.1f MB in %.1f ms\n", bytes.size() / 1e6,
              std::chrono::duration<double, std::milli>(t1 - t0).count());
  for (int i = 0; i < 3; ++i) {
    auto a = std::chrono::steady_clock::now();
    ChildSolve child(m, RelaxationLimit{kNoTimeLimit, 1});  // one simplex iteration
    auto b = std::chrono::steady_clock::now();
    RelaxationBound r = child.wait_relaxation();
    auto c = std::chrono::steady_clock::now();
    std::printf("start %.1f ms, start to end %.1f ms (%s)\n",
                std::chrono::duration<double, std::milli>(b - a).count(),
                std::chrono::duration<double, std::milli>(c - a).count(), child.failure().c_str());
  }
}
