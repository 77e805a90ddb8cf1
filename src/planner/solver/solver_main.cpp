// monet-solver: the process a planner's solve runs in (child_solve.h).
#include "planner/solver/child_solve.h"

int main(int argc, char** argv) { return monet::solver_process_main(argc, argv); }
