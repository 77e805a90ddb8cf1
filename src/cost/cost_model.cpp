#include "cost/cost_model.h"

#include <cmath>
#include <cstdio>

namespace monet {

std::string backward_cost_key(BackwardPart part, const std::string& impl) {
  return std::string(backward_part_name(part)) + "/" + impl;
}

const ImplCost& CostModel::forward(const Graph& g, int node, const std::string& impl) const {
  const auto& m = nodes.at(node).forward;
  auto it = m.find(impl);
  if (it == m.end())
    throw CostError("no cost for forward " + g.node(node).name + " [" + impl + "]");
  return it->second;
}

const ImplCost& CostModel::backward(const Graph& g, int node, BackwardPart part,
                                    const std::string& impl) const {
  const auto& m = nodes.at(node).backward;
  auto it = m.find(backward_cost_key(part, impl));
  if (it == m.end())
    throw CostError("no cost for backward " + g.node(node).name + " " + backward_part_name(part) +
                    " [" + impl + "]");
  return it->second;
}

CostModel with_loss_working_set(const Graph& g, CostModel costs, int64_t loss_bytes) {
  if (loss_bytes <= 0 || g.loss_value() < 0) return costs;
  NodeCosts& loss = costs.nodes.at(g.value(g.loss_value()).producer);
  for (auto& [name, c] : loss.forward) c.workspace_bytes = loss_bytes;
  for (auto& [name, c] : loss.backward) c.workspace_bytes = loss_bytes;
  return costs;
}

std::string implementation_set_key(const Graph& g) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  // The kernels', profiler's and allocator's version: profiles of an earlier one are stale.
  mix("gradient-layouts-2/zero-page-stand-ins/heap-reuse/autograd-losses/aten-batch-norm");
  for (const auto& n : g.nodes()) {
    for (const auto& f : forward_impls(g, n)) mix(f.name);
    for (const auto& b : backward_impls(g, n)) mix(backward_cost_key(b.part, b.name));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

nlohmann::json cost_json(const ImplCost& c) {
  return {{"seconds", c.seconds},
          {"workspace_bytes", c.workspace_bytes},
          {"result_bytes", c.result_bytes}};
}

// Bytes of one call are at most 2^50 (1 PiB): a larger count is not a measurement, and
// sums of such counts must not overflow.
constexpr int64_t kMaxCallBytes = int64_t{1} << 50;

int64_t bytes_field(const nlohmann::json& j, const char* field, const std::string& where) {
  const nlohmann::json& v = j.at(field);
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxCallBytes)
    throw CostError("malformed cost file: " + where + ": \"" + field +
                    "\" must be a byte count from 0 to 2^50, not " + v.dump());
  return v.get<int64_t>();
}

// `where`: the node and implementation, for errors.
ImplCost cost_from(const nlohmann::json& j, const std::string& where) {
  ImplCost c;
  const nlohmann::json& seconds = j.at("seconds");
  if (!seconds.is_number() || !(seconds.get<double>() >= 0) ||
      !std::isfinite(seconds.get<double>()))
    throw CostError("malformed cost file: " + where +
                    ": \"seconds\" must be a finite number of seconds >= 0, not " + seconds.dump());
  c.seconds = seconds.get<double>();
  c.workspace_bytes = bytes_field(j, "workspace_bytes", where);
  c.result_bytes = bytes_field(j, "result_bytes", where);
  return c;
}

}  // namespace

nlohmann::json cost_model_to_json(const Graph& g, const CostModel& costs) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : g.nodes()) {
    nlohmann::json f = nlohmann::json::object(), b = nlohmann::json::object();
    for (const auto& [name, c] : costs.nodes.at(n.id).forward) f[name] = cost_json(c);
    for (const auto& [name, c] : costs.nodes.at(n.id).backward) b[name] = cost_json(c);
    nodes.push_back({{"node", n.name}, {"forward", f}, {"backward", b}});
  }
  return {{"format", "monet-costs-1"},
          {"fingerprint", costs.graph_fingerprint},
          {"device", costs.device},
          {"threads", costs.threads},
          {"implementation_set", costs.implementation_set},
          {"nodes", nodes}};
}

CostModel cost_model_from_json(const Graph& g, const nlohmann::json& j) {
  CostModel c;
  try {
    if (!j.is_object() || j.value("format", "") != "monet-costs-1")
      throw CostError("not a monet cost file (no \"format\": \"monet-costs-1\")");
    c.graph_fingerprint = j.at("fingerprint").get<std::string>();
    c.device = j.at("device").get<std::string>();
    c.threads = j.at("threads").get<int>();
    c.implementation_set = j.at("implementation_set").get<std::string>();
    if (c.graph_fingerprint != g.fingerprint())
      throw CostError("the costs were measured for another graph (fingerprint " +
                      c.graph_fingerprint + ", this one has " + g.fingerprint() + ")");
    if (c.implementation_set != implementation_set_key(g))
      throw CostError("the costs were measured for another set of operator implementations");
    const auto& nodes = j.at("nodes");
    if (nodes.size() != g.nodes().size())
      throw CostError("the cost file has " + std::to_string(nodes.size()) + " nodes, the graph " +
                      std::to_string(g.nodes().size()));
    for (const auto& n : g.nodes()) {
      const auto& jn = nodes.at(n.id);
      NodeCosts nc;
      for (const auto& [k, v] : jn.at("forward").items())
        nc.forward[k] = cost_from(v, "node " + n.name + " forward '" + k + "'");
      for (const auto& [k, v] : jn.at("backward").items())
        nc.backward[k] = cost_from(v, "node " + n.name + " backward '" + k + "'");
      c.nodes.push_back(std::move(nc));
    }
  } catch (const nlohmann::json::exception& e) {
    throw CostError(std::string("malformed cost file: ") + e.what());
  }
  return c;
}

}  // namespace monet
