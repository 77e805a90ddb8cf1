// GradientBuckets: averages parameter gradients over the ranks of a c10d process group,
// a bucket at a time, as DistributedDataParallel's reducer does. A bucket holds
// parameters whose gradients the plan completes one after another; it is all-reduced as
// soon as the last of them is complete, so communication overlaps the rest of the
// backward. Gradients are copied into one of a few preallocated flat buffers (scaled by
// 1 / world size; under kDuringBackward each as soon as it is complete, so that its
// .grad() may be freed at once), all-reduced (summed) in place, and copied back into
// .grad() or handed to an averaged-gradient handler (fused optimizer updates).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <stdexcept>
#include <vector>

namespace monet {

/// When gradients are all-reduced.
enum class AllReduceTiming {
  kDuringBackward,  // each bucket as soon as its gradients are complete (overlapped)
  kAfterBackward,   // every bucket once the backward has finished (no overlap)
};

/// A collective that failed or timed out (a peer rank died, hangs or left).
class CollectiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The collective that sums a bucket.
enum class BucketCollective {
  kAllReduce,      // every rank gets every bucket's average
  kReduceToOwner,  // only the bucket's owner does (BucketOptions::owners)
};

struct BucketOptions {
  /// Gradient bytes per bucket; a parameter larger than this gets a bucket of its own.
  int64_t bucket_bytes = 25 * 1024 * 1024;
  /// Buckets being all-reduced at once; each has a flat buffer of the largest bucket's
  /// bytes, allocated once. Launching one more first completes the oldest.
  int buckets_in_flight = 2;
  AllReduceTiming timing = AllReduceTiming::kDuringBackward;
  /// A bucket's all-reduce not complete after this long fails the step (milliseconds).
  std::chrono::milliseconds timeout{300000};
  /// Per parameter (the constructor's order), the rank that owns it (sharded data
  /// parallelism): a bucket never spans two owners, a completed bucket's averages are
  /// handed over (handler or .grad()) only on its owner, and broadcast_parameters() sends
  /// each bucket's parameters from its owner. Empty: every rank keeps every average.
  std::vector<int> owners;
  BucketCollective collective = BucketCollective::kAllReduce;
};

class GradientBuckets {
 public:
  /// `parameters` in the order their gradients become complete (the plan's order).
  GradientBuckets(std::vector<at::Tensor> parameters, c10::intrusive_ptr<c10d::ProcessGroup> group,
                  BucketOptions options);

  /// Bytes of the flat buffers held for `parameters` under `options` split among `owners`
  /// ranks (an upper bound that does not depend on the order): buckets_in_flight buffers
  /// of the largest possible bucket, or one when one owner's parameters, of one dtype, fit
  /// one bucket (there is then one bucket).
  static int64_t buffer_bytes(const std::vector<at::Tensor>& parameters,
                              const BucketOptions& options, int owners = 1);
  int64_t buffer_bytes() const;
  size_t bucket_count() const { return buckets_.size(); }

  /// When the next steps all-reduce (between steps).
  void set_timing(AllReduceTiming timing) { options_.timing = timing; }
  /// Called, when a bucket's all-reduce completes, with each of its parameters that had
  /// a gradient this step (index in the constructor's order) and its averaged gradient (a
  /// view of the bucket's buffer, valid during the call), in place of copying it into
  /// .grad(). Empty: copy into .grad() (the default).
  using AveragedHandler = std::function<void(size_t index, const at::Tensor& averaged)>;
  void set_averaged_handler(AveragedHandler handler) { averaged_ = std::move(handler); }
  /// Starts a step: no gradient is complete yet.
  void begin_step();
  /// Parameter `index` (its position in the constructor's order) has its complete
  /// gradient in .grad(); under kDuringBackward it is copied into its bucket's buffer now
  /// (the bucket takes a buffer at its first gradient, completing the oldest all-reduce
  /// when none is free). Launches its bucket when that was the bucket's last.
  void gradient_ready(size_t index);
  /// Launches the buckets not launched yet (parameters the plan gives no gradient, or
  /// every bucket with AllReduceTiming::kAfterBackward), waits for all, and writes the
  /// averaged gradients into .grad(). Throws CollectiveError naming the bucket when a
  /// collective fails or times out.
  void finish_step();
  /// With owners, after finish_step(): every bucket's parameters from its owner to every
  /// rank (c10d broadcast through the bucket buffers, buckets_in_flight at once). Throws
  /// CollectiveError naming the bucket when a broadcast fails or times out.
  void broadcast_parameters();
  /// Whether this rank owns parameter `index` (every parameter without owners).
  bool owns(size_t index) const;

 private:
  struct Bucket {
    std::vector<size_t> members;  // parameter indices
    int64_t numel = 0;
    at::ScalarType dtype = at::kFloat;
    size_t pending = 0;  // gradients not complete yet in this step
    bool launched = false;
    long buffer = -1;  // the buffer it fills, once it has one this step
    int owner = -1;    // the rank owning its parameters; -1: no owners
  };
  struct InFlight {
    size_t bucket;
    size_t buffer;
    c10::intrusive_ptr<c10d::Work> work;
    bool parameters = false;  // a broadcast of parameters (else a sum of gradients)
  };
  /// Waits for `f`'s collective; throws CollectiveError naming the bucket.
  void wait(const InFlight& f);
  void launch(size_t bucket);
  void complete_oldest();
  /// A free buffer for `b` (completing the oldest all-reduce when none is free).
  void take_buffer(Bucket& b);
  /// Parameter `index`'s gradient, scaled, into its slot of its bucket's buffer (zeros
  /// when it has none).
  void copy_in(size_t index);
  at::Tensor flat(size_t buffer, const Bucket& b) const;

  std::vector<at::Tensor> parameters_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  BucketOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;   // per parameter
  std::vector<int64_t> offset_of_;  // per parameter: its first element in the bucket
  std::vector<bool> ready_;         // per parameter: its gradient was complete this step
  AveragedHandler averaged_;
  std::vector<at::Tensor> buffers_;  // uint8, each of the largest bucket's bytes
  std::vector<size_t> free_buffers_;
  std::deque<InFlight> in_flight_;
};

}  // namespace monet
