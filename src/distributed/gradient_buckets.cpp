#include "distributed/gradient_buckets.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

namespace monet {
namespace {

int64_t gradient_bytes(const at::Tensor& p) {
  return p.numel() * static_cast<int64_t>(c10::elementSize(p.scalar_type()));
}

// Flat buffers are rounded up so that any element type views them.
int64_t rounded(int64_t bytes) { return (bytes + 7) / 8 * 8; }

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

GradientBuckets::GradientBuckets(std::vector<at::Tensor> parameters,
                                 c10::intrusive_ptr<c10d::ProcessGroup> group,
                                 BucketOptions options)
    : parameters_(std::move(parameters)), group_(std::move(group)), options_(options) {
  if (options_.bucket_bytes <= 0) throw std::invalid_argument("the bucket size must be positive");
  if (options_.buckets_in_flight < 1)
    throw std::invalid_argument("at least one bucket must be allowed in flight");
  bucket_of_.resize(parameters_.size());
  offset_of_.resize(parameters_.size());
  ready_.assign(parameters_.size(), false);
  if (!options_.owners.empty() && options_.owners.size() != parameters_.size())
    throw std::invalid_argument("GradientBuckets: one owner per parameter");
  if (options_.collective == BucketCollective::kReduceToOwner && options_.owners.empty())
    throw std::invalid_argument("GradientBuckets: reducing to owners needs the owners");
  int64_t bytes = 0, largest = 0;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& p = parameters_[i];
    const int64_t b = gradient_bytes(p);
    const int owner = options_.owners.empty() ? -1 : options_.owners[i];
    if (buckets_.empty() || buckets_.back().dtype != p.scalar_type() ||
        buckets_.back().owner != owner || (bytes > 0 && bytes + b > options_.bucket_bytes)) {
      buckets_.emplace_back();
      buckets_.back().dtype = p.scalar_type();
      buckets_.back().owner = owner;
      bytes = 0;
    }
    buckets_.back().members.push_back(i);
    offset_of_[i] = buckets_.back().numel;
    buckets_.back().numel += p.numel();
    bytes += b;
    largest = std::max(largest, bytes);
    bucket_of_[i] = buckets_.size() - 1;
  }
  const size_t count = std::min<size_t>(options_.buckets_in_flight, buckets_.size());
  for (size_t k = 0; k < count; ++k) {
    buffers_.push_back(at::empty({rounded(largest)}, at::kByte));
    free_buffers_.push_back(k);
  }
}

int64_t GradientBuckets::buffer_bytes(const std::vector<at::Tensor>& parameters,
                                      const BucketOptions& options, int owners) {
  int64_t total = 0, largest = 0;
  bool one_dtype = true;
  for (const auto& p : parameters) {
    total += gradient_bytes(p);
    largest = std::max(largest, gradient_bytes(p));
    one_dtype = one_dtype && p.scalar_type() == parameters[0].scalar_type();
  }
  const int64_t bucket = std::min(total, std::max(options.bucket_bytes, largest));
  const bool one_bucket = owners <= 1 && one_dtype && total <= options.bucket_bytes;
  return rounded(bucket) * (one_bucket ? 1 : std::max(1, options.buckets_in_flight));
}

int64_t GradientBuckets::buffer_bytes() const {
  int64_t bytes = 0;
  for (const auto& b : buffers_) bytes += b.numel();
  return bytes;
}

void GradientBuckets::begin_step() {
  if (!in_flight_.empty()) throw std::logic_error("GradientBuckets: the last step did not finish");
  for (auto& b : buckets_) {
    b.pending = b.members.size();
    b.launched = false;
    b.buffer = -1;
  }
  ready_.assign(parameters_.size(), false);
}

void GradientBuckets::gradient_ready(size_t index) {
  Bucket& b = buckets_.at(bucket_of_.at(index));
  ready_.at(index) = true;
  const bool during = options_.timing == AllReduceTiming::kDuringBackward;
  if (during && !b.launched) {
    if (b.buffer < 0) take_buffer(b);
    copy_in(index);
  }
  if (b.pending > 0) --b.pending;
  if (b.pending == 0 && !b.launched && during) launch(bucket_of_[index]);
}

void GradientBuckets::take_buffer(Bucket& b) {
  if (free_buffers_.empty() && in_flight_.empty())
    throw std::logic_error(
        "GradientBuckets: every buffer is held by a bucket still filling (gradients "
        "reported out of the constructor's order)");
  if (free_buffers_.empty()) complete_oldest();
  b.buffer = static_cast<long>(free_buffers_.back());
  free_buffers_.pop_back();
}

void GradientBuckets::copy_in(size_t index) {
  const Bucket& b = buckets_[bucket_of_[index]];
  const at::Tensor& p = parameters_[index];
  torch::NoGradGuard no_grad;
  at::Tensor slot = flat(static_cast<size_t>(b.buffer), b).narrow(0, offset_of_[index], p.numel());
  if (ready_[index] && p.grad().defined())
    at::mul_out(slot, p.grad().reshape({-1}),
                at::scalar_tensor(1.0 / group_->getSize(), at::kDouble));
  else
    slot.zero_();
  // Summed onto its owner only: this rank has no further use for its local gradient.
  if (options_.collective == BucketCollective::kReduceToOwner && !owns(index))
    parameters_[index].mutable_grad() = at::Tensor();
}

bool GradientBuckets::owns(size_t index) const {
  return options_.owners.empty() || options_.owners[index] == group_->getRank();
}

at::Tensor GradientBuckets::flat(size_t buffer, const Bucket& b) const {
  const int64_t bytes = b.numel * static_cast<int64_t>(c10::elementSize(b.dtype));
  return buffers_[buffer].narrow(0, 0, bytes).view(b.dtype);
}

void GradientBuckets::launch(size_t bucket) {
  Bucket& b = buckets_[bucket];
  // Under kDuringBackward the gradients made this step are in the buffer already; the
  // rest (none, or every one after the backward) are copied now.
  const bool filled = b.buffer >= 0;
  if (!filled) take_buffer(b);
  for (size_t i : b.members)
    if (!filled || !ready_[i]) copy_in(i);
  b.launched = true;
  const size_t buffer = static_cast<size_t>(b.buffer);
  at::Tensor data = flat(buffer, b);
  std::vector<at::Tensor> tensors{data};
  if (options_.collective == BucketCollective::kReduceToOwner) {
    c10d::ReduceOptions opts;
    opts.rootRank = b.owner;
    opts.timeout = options_.timeout;
    in_flight_.push_back({bucket, buffer, group_->reduce(tensors, opts)});
  } else {
    c10d::AllreduceOptions opts;
    opts.timeout = options_.timeout;
    in_flight_.push_back({bucket, buffer, group_->allreduce(tensors, opts)});
  }
}

void GradientBuckets::wait(const InFlight& f) {
  const Bucket& b = buckets_[f.bucket];
  auto failed = [&](const std::string& why) {
    in_flight_.clear();
    const char* what = f.parameters ? "the broadcast of parameter bucket "
                       : options_.collective == BucketCollective::kReduceToOwner
                           ? "the reduce of gradient bucket "
                           : "the all-reduce of gradient bucket ";
    return CollectiveError(
        what + std::to_string(f.bucket + 1) + " of " + std::to_string(buckets_.size()) + " (" +
        std::to_string(b.members.size()) + " parameters, " +
        mib(b.numel * static_cast<int64_t>(c10::elementSize(b.dtype))) + ") failed: " + why);
  };
  try {
    f.work->wait(options_.timeout);
  } catch (const c10::Error& e) {
    throw failed(e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw failed(e.what());
  }
}

void GradientBuckets::complete_oldest() {
  InFlight f = in_flight_.front();
  in_flight_.pop_front();
  wait(f);
  const Bucket& b = buckets_[f.bucket];
  torch::NoGradGuard no_grad;
  const at::Tensor data = flat(f.buffer, b);
  if (f.parameters) {  // a broadcast: the owner's parameters into the others'
    if (b.owner != group_->getRank())
      for (size_t i : b.members) {
        at::Tensor p = parameters_[i];
        p.detach().copy_(data.narrow(0, offset_of_[i], p.numel()).view(p.sizes()));
      }
    free_buffers_.push_back(f.buffer);
    return;
  }
  for (size_t i : b.members) {
    if (!owns(i)) continue;
    at::Tensor p = parameters_[i];
    const at::Tensor averaged = data.narrow(0, offset_of_[i], p.numel()).view(p.sizes());
    if (averaged_ && ready_[i])
      averaged_(i, averaged);
    else if (!averaged_ && p.grad().defined())
      p.mutable_grad().copy_(averaged);
  }
  free_buffers_.push_back(f.buffer);
}

void GradientBuckets::finish_step() {
  for (size_t k = 0; k < buckets_.size(); ++k)
    if (!buckets_[k].launched) launch(k);
  while (!in_flight_.empty()) complete_oldest();
}

void GradientBuckets::broadcast_parameters() {
  if (options_.owners.empty())
    throw std::logic_error("GradientBuckets: broadcasting parameters needs their owners");
  if (!in_flight_.empty()) throw std::logic_error("GradientBuckets: the step did not finish");
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < buckets_.size(); ++k) {
    Bucket& b = buckets_[k];
    take_buffer(b);
    at::Tensor data = flat(static_cast<size_t>(b.buffer), b);
    if (b.owner == group_->getRank())
      for (size_t i : b.members)
        data.narrow(0, offset_of_[i], parameters_[i].numel()).copy_(parameters_[i].reshape({-1}));
    std::vector<at::Tensor> tensors{data};
    c10d::BroadcastOptions opts;
    opts.rootRank = b.owner;
    opts.timeout = options_.timeout;
    in_flight_.push_back(
        {k, static_cast<size_t>(b.buffer), group_->broadcast(tensors, opts), true});
  }
  while (!in_flight_.empty()) complete_oldest();
}

}  // namespace monet
