// OperatorCosts::Impl: a model's graph and its profiled costs, shared by the API's
// translation units (operator_costs.cpp, planning.cpp).
#pragma once

#include <monet/operator_costs.h>

#include "cost/cost_model.h"
#include "graph/graph.h"

namespace monet {

struct OperatorCosts::Impl {
  Graph graph;  // the model's (the costs are checked against its fingerprint)
  CostModel costs;
  bool from_cache = false;
  std::string cache_dir;  // "" without a cache
};

}  // namespace monet
