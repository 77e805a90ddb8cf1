// CostModel: what each (node, implementation) costs on one device, as measured by the
// profiler — median seconds per call and workspace bytes (the transient memory a call
// needs beyond the tensors it returns). The simulator and the planners read it; it is
// cached on disk, keyed by graph fingerprint, device, threads and implementation set.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op_impl.h"

namespace monet {

/// A cost file that is malformed or was measured for another graph or implementation set.
class CostError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ImplCost {
  double seconds = 0;           // median wall seconds of one call
  int64_t workspace_bytes = 0;  // peak bytes during the call minus what it returns
  /// Bytes the call returned that outlived it, as measured (the simulator uses the
  /// declared sizes; the profiler records this to check them).
  int64_t result_bytes = 0;
};

struct NodeCosts {
  std::map<std::string, ImplCost> forward;   // by forward implementation name
  std::map<std::string, ImplCost> backward;  // by "part/implementation"
};

struct CostModel {
  std::string graph_fingerprint;
  std::string device;              // "cpu"
  int threads = 1;                 // intra-op threads while profiling
  std::string implementation_set;  // implementation_set_key(graph)
  std::vector<NodeCosts> nodes;    // by node id

  /// Throws CostError naming the node and implementation when it was not profiled.
  const ImplCost& forward(const Graph& graph, int node, const std::string& impl) const;
  const ImplCost& backward(const Graph& graph, int node, BackwardPart part,
                           const std::string& impl) const;
};

/// `costs` with `loss_bytes` (bytes) as the workspace of every forward and backward
/// implementation of `graph`'s loss node: the working set of a loss computed outside the
/// plan in the place of the loss node (which then does not run), between the forward and
/// the backward pass, beside the model's output and the output's gradient (the loss
/// backward's result). `costs` unchanged when `loss_bytes` is 0.
CostModel with_loss_working_set(const Graph& graph, CostModel costs, int64_t loss_bytes);

/// "weight/default"-style key of a backward implementation in NodeCosts::backward.
std::string backward_cost_key(BackwardPart part, const std::string& impl);

/// 16 hex digits identifying every node's forward and backward implementation names:
/// costs measured for another implementation library are not reused.
std::string implementation_set_key(const Graph& graph);

nlohmann::json cost_model_to_json(const Graph& graph, const CostModel& costs);
/// Parses and checks against `graph` (fingerprint, implementation set, node count).
CostModel cost_model_from_json(const Graph& graph, const nlohmann::json& json);

}  // namespace monet
