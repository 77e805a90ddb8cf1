// ParameterShards: sharded data parallelism's split of the parameters among the ranks
// (ZeRO): who owns each parameter, and the optimizer state each rank keeps for its own.
// A checkpoint gathers every rank's state on rank 0 (so any number of ranks, or plain
// PyTorch, can resume it); after loading one, each rank drops what it does not own.
#pragma once

#include <ATen/ATen.h>
#include <torch/optim.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace monet {

/// The rank owning each of `parameters` when they are split, in order, into `world_size`
/// contiguous runs balanced by bytes: run r ends at the tensor boundary nearest to
/// (r + 1) / world_size of the total bytes. A run may be empty (fewer tensors than ranks).
std::vector<int> split_by_bytes(const std::vector<at::Tensor>& parameters, int world_size);

/// Bytes of the largest run of split_by_bytes(parameters, world_size).
int64_t largest_run_bytes(const std::vector<at::Tensor>& parameters, const std::vector<int>& owners,
                          int world_size);

/// Collective over `group`: every rank's `bytes` reach rank 0, which calls
/// `receive(rank, bytes)` for each rank in order (its own first, without a copy sent);
/// the other ranks only send. Tags 7100 + rank. Throws what the group's send/recv throw
/// (a timeout after `timeout`).
void gather_to_rank_zero(c10d::ProcessGroup& group, const std::string& bytes,
                         std::chrono::milliseconds timeout,
                         const std::function<void(int, const std::string&)>& receive);

/// Collective over `group`: every rank other than 0 sends the optimizer state of the
/// parameters it owns (`owners[i]` for parameters[i]) to rank 0, which files it in
/// `optimizer` beside its own. The optimizer must be a torch::optim::SGD, Adam or AdamW
/// (std::invalid_argument otherwise, on every rank before anything is sent).
void gather_optimizer_state(torch::optim::Optimizer& optimizer,
                            const std::vector<at::Tensor>& parameters,
                            const std::vector<int>& owners, c10d::ProcessGroup& group,
                            std::chrono::milliseconds timeout);

/// Removes from `optimizer` the state of every parameter `rank` does not own.
void drop_unowned_optimizer_state(torch::optim::Optimizer& optimizer,
                                  const std::vector<at::Tensor>& parameters,
                                  const std::vector<int>& owners, int rank);

}  // namespace monet
