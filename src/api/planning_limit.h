// The planner's SearchLimit (planner/solver/search_clock.h) for the public PlanningLimit.
#pragma once

#include <monet/monet.h>

#include "planner/solver/search_clock.h"

namespace monet {

SearchLimit search_limit_of(PlanningLimit limit);

}  // namespace monet
