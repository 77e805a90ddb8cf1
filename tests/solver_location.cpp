// The test programs link the library's objects themselves, so the planner's lookup of
// monet-solver beside the code that holds it (child_solve.h) would look in tests/: each
// test program names the build tree's monet-solver instead, before main(), unless
// $MONET_SOLVER already names one.
#include <cstdlib>

namespace {

const bool kSolverNamed = [] {
  setenv("MONET_SOLVER", MONET_SOLVER_EXECUTABLE, /*overwrite=*/0);
  return true;
}();

}  // namespace
