#include "cost/profiler.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "base/memory_tracker.h"
#include "base/progress.h"
#include "ops/op_kernels.h"
#include "plan/plan.h"

namespace monet {
namespace {

// Runs `setup` then `call` warmup + repeats times; keeps the median seconds of `call`,
// the largest peak above the bytes live before it, and the bytes its results hold when
// it returns. `last` receives the results of the final call.
ImplCost measure(const ProfileOptions& o, int64_t declared_result_bytes,
                 const std::function<void()>& setup,
                 const std::function<std::vector<at::Tensor>()>& call,
                 std::vector<at::Tensor>* last = nullptr) {
  std::vector<double> seconds;
  int64_t peak = 0, kept = 0;
  const int runs = o.warmup + std::max(1, o.repeats);
  for (int r = 0; r < runs; ++r) {
    setup();
    const int64_t before = MemoryTracker::current();
    std::vector<at::Tensor> results;
    double s = 0;
    int64_t p = 0;
    {
      ScopedPeak scope;
      const auto t0 = std::chrono::steady_clock::now();
      results = call();
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      p = scope.peak() - before;
    }
    const int64_t k = MemoryTracker::current() - before;
    if (last && r + 1 == runs) *last = results;
    results.clear();
    if (r < o.warmup) continue;
    seconds.push_back(s);
    peak = std::max(peak, p);
    kept = std::max(kept, k);
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  ImplCost c;
  c.seconds = seconds[seconds.size() / 2];
  c.workspace_bytes = std::max<int64_t>(0, peak - declared_result_bytes);
  c.result_bytes = kept;
  return c;
}

// A gradient for `v` laid out as the executor hands it to v's producer. Concatenation,
// flatten and add pass their output gradient on as views (cat: a slice; flatten: a view
// of the input's shape; add: itself), so when every consumer of v is one of them, the
// gradient is that view of the consumer's own gradient (the consumer whose backward runs
// first, the last in forward order), strided unless the slice happens to be contiguous:
// a linear or embedding after a flatten into a concatenation gets a strided one. Kernels
// that want dense input copy it; that copy is workspace, so it is measured here.
at::Tensor executor_like_gradient(const Graph& g, const Value& v) {
  const auto passes_a_view = [&](int c) {
    const OpKind op = g.node(c).op;
    return op == OpKind::kCat || op == OpKind::kFlatten || op == OpKind::kAdd;
  };
  if (v.consumers.empty() || !std::all_of(v.consumers.begin(), v.consumers.end(), passes_a_view))
    return at::randn(v.shape, at::TensorOptions().dtype(v.dtype));
  const Node& consumer = g.node(v.consumers.back());
  const at::Tensor grad = executor_like_gradient(g, g.value(consumer.output));
  if (consumer.op == OpKind::kFlatten) return grad.view(v.shape);
  if (consumer.op == OpKind::kAdd) return grad;
  const int64_t dim = consumer.attrs.dim;
  int64_t offset = 0;
  for (int in : consumer.inputs) {
    if (in == v.id) break;
    offset += g.value(in).shape[dim];
  }
  return grad.narrow(dim, offset, v.shape[dim]);
}

}  // namespace

namespace {

// The reference forward pass, out of place: every activation and node state, from which
// each implementation is measured.
struct ReferencePass {
  const Graph& g;
  const ModelState& state;
  const Batch& batch;
  std::vector<at::Tensor> act;        // by value id: activations
  std::vector<NodeState> node_state;  // by node id

  at::Tensor value(int v) const {
    return g.value(v).kind == ValueKind::kActivation ? act[v] : fixed_tensor(g, state, batch, v);
  }
  std::vector<at::Tensor> inputs_of(const Node& n) const {
    std::vector<at::Tensor> in;
    for (int v : n.inputs) in.push_back(value(v));
    return in;
  }
  void run(const std::vector<int>& order) {
    act.assign(g.values().size(), at::Tensor());
    node_state.assign(g.nodes().size(), NodeState());
    for (int id : order) {
      const Node& n = g.node(id);
      node_state[id].seed = node_seed(0, n);
      const auto impls = forward_impls(g, n);
      const auto f = find_forward_impl(impls, n, out_of_place(impls.front().name));
      act[n.output] = run_forward(g, n, f, inputs_of(n), node_state[id], true).output;
    }
  }
};

// Measures every forward implementation of `n` into `nc`; returns, by implementation, the
// intermediates those that emit one produced.
std::map<std::string, at::Tensor> profile_forwards(const ProfileOptions& o,
                                                   const ReferencePass& ref, const Node& n,
                                                   NodeCosts* nc) {
  const Graph& g = ref.g;
  std::map<std::string, at::Tensor> intermediates;
  for (const auto& f : forward_impls(g, n)) {
    const int64_t declared = forward_result_bytes(g, n, f, true);
    std::vector<at::Tensor> in, last;
    auto setup = [&] {
      in = ref.inputs_of(n);
      if (f.inplace) in[0] = in[0].clone();  // made before the measurement starts
    };
    nc->forward[f.name] = measure(
        o, declared, setup,
        [&] {
          NodeState s;  // a first forward: batch norm computes and keeps its statistics
          s.seed = ref.node_state[n.id].seed;
          ForwardOutput r = run_forward(g, n, f, in, s, true);
          return std::vector<at::Tensor>{r.output, r.intermediate, s.save_mean, s.save_invstd};
        },
        &last);
    if (f.emits_intermediate) intermediates[f.name] = last[1];
  }
  return intermediates;
}

// Measures every backward implementation of `n` into `nc`.
// (run_backward takes the node's state, which the reference pass holds.)
void profile_backwards(const ProfileOptions& o, ReferencePass& ref, const Node& n,
                       const std::vector<bool>& needs_grad,
                       const std::map<std::string, at::Tensor>& intermediates, NodeCosts* nc) {
  const Graph& g = ref.g;
  at::Tensor grad_output = executor_like_gradient(g, g.value(n.output));
  for (const auto& b : backward_impls(g, n)) {
    const auto mask = backward_grad_mask(g, n, b.part, needs_grad);
    const int64_t declared = backward_result_bytes(g, n, b, mask);
    BackwardArgs args;
    args.grad_output = grad_output;
    args.needs_grad = mask;
    args.inputs.resize(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (g.value(n.inputs[k]).kind != ValueKind::kActivation)
        args.inputs[k] = ref.value(n.inputs[k]);
    for (int k : b.reads_inputs) args.inputs[k] = ref.value(n.inputs[k]);
    if (b.reads_output) args.output = ref.act[n.output];
    if (b.reads_intermediate) args.intermediate = intermediates.at(b.requires_forward.front());
    NodeState& state = ref.node_state[n.id];
    nc->backward[backward_cost_key(b.part, b.name)] = measure(
        o, declared, [] {}, [&] { return run_backward(g, n, b, args, state); });
  }
}

}  // namespace

CostModel profile_costs(const Graph& g, const ModelState& state_in, const Batch& batch,
                        const ProfileOptions& o) {
  if (!MemoryTracker::installed())
    throw std::logic_error("profile_costs: install the MemoryTracker first");
  torch::NoGradGuard no_grad;
  ModelState state = state_in.clone();  // batch norm updates running statistics
  CostModel costs;
  costs.graph_fingerprint = g.fingerprint();
  costs.device = "cpu";
  costs.threads = at::get_num_threads();
  costs.implementation_set = implementation_set_key(g);
  costs.nodes.resize(g.nodes().size());
  const auto needs_grad = values_needing_grad(g);
  const auto needs_backward = nodes_needing_backward(g);
  const auto order = g.topological_order();
  ReferencePass ref{g, state, batch, {}, {}};
  ref.run(order);
  size_t done = 0;
  for (int id : order) {
    const Node& n = g.node(id);
    const auto intermediates = profile_forwards(o, ref, n, &costs.nodes[id]);
    if (needs_backward[id])
      profile_backwards(o, ref, n, needs_grad, intermediates, &costs.nodes[id]);
    ++done;
    if (o.progress)
      report_progress("\rprofiling: %zu/%zu nodes (%s)%-24s", done, order.size(), n.name.c_str(),
                      "");
  }
  if (o.progress) report_progress("\n");
  return costs;
}

std::string default_cost_cache_dir() {
  if (const char* d = std::getenv("MONET_CACHE_DIR")) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME")) return std::string(d) + "/monet";
  if (const char* d = std::getenv("HOME")) return std::string(d) + "/.cache/monet";
  return "";
}

std::string cost_cache_path(const Graph& g, const std::string& cache_dir) {
  return (std::filesystem::path(cache_dir) /
          (g.fingerprint() + "-cpu-t" + std::to_string(at::get_num_threads()) + "-" +
           implementation_set_key(g) + ".json"))
      .string();
}

bool read_cached_costs(const Graph& g, const std::string& cache_dir, CostModel* costs) {
  const std::string path = cost_cache_path(g, cache_dir);
  std::ifstream in(path);
  if (!in) return false;
  try {
    *costs = cost_model_from_json(g, nlohmann::json::parse(in));
    return true;
  } catch (const std::exception& e) {
    report_warning("monet: ignoring unreadable cost cache %s (%s)\n", path.c_str(), e.what());
    return false;
  }
}

CostModel cached_profile_costs(const Graph& g, const ModelState& state, const Batch& batch,
                               const ProfileOptions& o, const std::string& cache_dir,
                               bool* from_cache) {
  namespace fs = std::filesystem;
  if (from_cache) *from_cache = false;
  if (cache_dir.empty()) return profile_costs(g, state, batch, o);
  CostModel c;
  if (read_cached_costs(g, cache_dir, &c)) {
    if (from_cache) *from_cache = true;
    return c;
  }
  c = profile_costs(g, state, batch, o);
  const fs::path path = cost_cache_path(g, cache_dir);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    out << cost_model_to_json(g, c).dump(1) << "\n";
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    report_warning("monet: could not write the cost cache %s\n", path.c_str());
  }
  return c;
}

}  // namespace monet
