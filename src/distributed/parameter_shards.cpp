#include "distributed/parameter_shards.h"

#include <torch/serialize/archive.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace monet {
namespace {

// The key LibTorch's optimizers file a parameter's state under.
std::string state_key(const at::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }

// An empty state of `optimizer`'s kind, to deserialize into.
std::unique_ptr<torch::optim::OptimizerParamState> empty_state(
    const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer))
    return std::make_unique<torch::optim::SGDParamState>();
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer))
    return std::make_unique<torch::optim::AdamParamState>();
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer))
    return std::make_unique<torch::optim::AdamWParamState>();
  return nullptr;
}

// `rank`'s owned states, serialized (each under its parameter's index).
std::string owned_states(torch::optim::Optimizer& optimizer,
                         const std::vector<at::Tensor>& parameters, const std::vector<int>& owners,
                         int rank) {
  torch::serialize::OutputArchive archive;
  auto& states = optimizer.state();
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (owners[i] != rank) continue;
    auto it = states.find(state_key(parameters[i]));
    if (it == states.end()) continue;
    torch::serialize::OutputArchive one;
    it->second->serialize(one);
    archive.write(std::to_string(i), one);
  }
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

// Sends `bytes` from rank `from` to rank 0 (size, then the bytes).
std::string send_to_rank_zero(c10d::ProcessGroup& group, int from, const std::string& bytes,
                              std::chrono::milliseconds timeout) {
  const int tag = 7100 + from;
  std::vector<at::Tensor> size{at::tensor({static_cast<int64_t>(bytes.size())}, at::kLong)};
  if (group.getRank() == from) {
    group.send(size, 0, tag)->wait(timeout);
    std::vector<at::Tensor> data{at::empty({static_cast<int64_t>(bytes.size())}, at::kByte)};
    std::memcpy(data[0].data_ptr(), bytes.data(), bytes.size());
    group.send(data, 0, tag)->wait(timeout);
    return "";
  }
  group.recv(size, from, tag)->wait(timeout);
  const int64_t n = size[0].item<int64_t>();
  std::vector<at::Tensor> data{at::empty({n}, at::kByte)};
  group.recv(data, from, tag)->wait(timeout);
  return std::string(static_cast<const char*>(data[0].data_ptr()), static_cast<size_t>(n));
}

}  // namespace

std::vector<int> split_by_bytes(const std::vector<at::Tensor>& parameters, int world_size) {
  if (world_size < 1) throw std::invalid_argument("split_by_bytes: world_size must be positive");
  double total = 0;
  for (const auto& p : parameters) total += static_cast<double>(p.nbytes());
  // A tensor goes to the run holding its middle byte: each run then ends at the tensor
  // boundary nearest to its share of the total.
  std::vector<int> owners(parameters.size(), 0);
  double before = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const double bytes = static_cast<double>(parameters[i].nbytes());
    if (total > 0)
      owners[i] = std::min(world_size - 1,
                           static_cast<int>(std::floor((before + bytes / 2) * world_size / total)));
    before += bytes;
  }
  return owners;
}

int64_t largest_run_bytes(const std::vector<at::Tensor>& parameters, const std::vector<int>& owners,
                          int world_size) {
  std::vector<int64_t> runs(static_cast<size_t>(world_size), 0);
  for (size_t i = 0; i < parameters.size(); ++i) runs.at(owners[i]) += parameters[i].nbytes();
  return *std::max_element(runs.begin(), runs.end());
}

void gather_to_rank_zero(c10d::ProcessGroup& group, const std::string& bytes,
                         std::chrono::milliseconds timeout,
                         const std::function<void(int, const std::string&)>& receive) {
  const int rank = group.getRank();
  if (rank == 0) receive(0, bytes);
  for (int from = 1; from < group.getSize(); ++from) {
    if (rank != 0 && rank != from) continue;
    const std::string received = send_to_rank_zero(group, from, rank == from ? bytes : "", timeout);
    if (rank == 0) receive(from, received);
  }
}

void gather_optimizer_state(torch::optim::Optimizer& optimizer,
                            const std::vector<at::Tensor>& parameters,
                            const std::vector<int>& owners, c10d::ProcessGroup& group,
                            std::chrono::milliseconds timeout) {
  if (!empty_state(optimizer))
    throw std::invalid_argument(
        "sharded optimizer state is kept for torch::optim::SGD, Adam and AdamW only");
  const int rank = group.getRank();
  // Rank 0's own state is in place; each other rank's is filed as it arrives.
  const std::string own = rank == 0 ? "" : owned_states(optimizer, parameters, owners, rank);
  gather_to_rank_zero(group, own, timeout, [&](int from, const std::string& bytes) {
    if (from == 0) return;
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    for (size_t i = 0; i < parameters.size(); ++i) {
      torch::serialize::InputArchive one;
      if (owners[i] != from || !archive.try_read(std::to_string(i), one)) continue;
      auto state = empty_state(optimizer);
      state->serialize(one);
      optimizer.state()[state_key(parameters[i])] = std::move(state);
    }
  });
}

void drop_unowned_optimizer_state(torch::optim::Optimizer& optimizer,
                                  const std::vector<at::Tensor>& parameters,
                                  const std::vector<int>& owners, int rank) {
  for (size_t i = 0; i < parameters.size(); ++i)
    if (owners[i] != rank) optimizer.state().erase(state_key(parameters[i]));
}

}  // namespace monet
