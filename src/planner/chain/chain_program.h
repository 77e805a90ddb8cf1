// ChainProgram: chain checkpointing's dynamic program over the segments of a chain layout
// (persistent checkpointing of heterogeneous chains, as in Rotor; chain_checkpointing.h),
// each a ScheduledSegment with its measured seconds and bytes; memory is counted in levels
// of (the segments' largest working sets and gradients) / levels bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace monet {

// One segment of the chain: its nodes, what running them costs, and the bytes its steps
// need beyond the checkpoint it starts from and the gradient of its output.
struct ScheduledSegment {
  std::vector<int> nodes;       // node ids, in topological order
  double forward_seconds = 0;   // one forward of every node (out of place)
  double backward_seconds = 0;  // every backward part of the nodes needing one
  int input = -1;               // the value it starts from (-1: the graph's input)
  int64_t output_bytes = 0;     // its output, the next segment's checkpoint (0: the last)
  int64_t kept_bytes = 0;       // every output and intermediate: a run that keeps all
  /// The most alive during a run that keeps only its output, beyond its input (its
  /// checkpoint), and with its input until the segment's last reader of it (when the
  /// segment is swept through from an earlier checkpoint).
  int64_t sweep_bytes = 0, sweep_input_bytes = 0;
  int64_t forward_bytes = 0;  // the most alive during a run that keeps all, beyond its input
  /// The most its backward holds at once beyond its input checkpoint and the gradients of
  /// parameters and side values: kept tensors, the gradient of its output while alive, the
  /// gradients it makes, a call's results and workspace.
  int64_t backward_bytes = 0;
  int64_t gradient_bytes = 0;  // its parameters' gradients, alive once its backward ran
  /// Its side value (chain_layout.h), alive while it is processed; its gradient too once
  /// the stretch's last segment was back-propagated (0: it starts at an articulation value).
  int64_t side_bytes = 0;
  int stretch = 0;      // its stretch
  int stretch_end = 0;  // the last segment of its stretch
};

// The dynamic program over the chain: cost(s, t, m) is the least time to back-propagate
// through segments s..t holding at most m memory levels besides segment s's input
// checkpoint, the gradient of segment t's output and, when s starts inside a stretch, its
// side value and that value's gradient; choice(s, t, m) is 0 for "run s
// keeping all, go on from its output" and k (s < k <= t) for "sweep s..k-1, checkpoint
// segment k-1's output".
class ChainProgram {
 public:
  ChainProgram(const std::vector<ScheduledSegment>& segments, int levels)
      : seg_(segments), size_(static_cast<int>(segments.size())), levels_(levels) {
    int64_t total = 0;
    later_gradients_.assign(size_ + 1, 0);
    for (int i = size_ - 1; i >= 0; --i)
      later_gradients_[i] = later_gradients_[i + 1] + seg_[i].gradient_bytes;
    for (const ScheduledSegment& s : seg_) total += std::max(s.forward_bytes, s.backward_bytes);
    unit_ = std::max<double>(1.0, static_cast<double>(total + later_gradients_[0]) / levels_);
    cost_.assign(static_cast<size_t>(size_) * size_ * (levels_ + 1), kNone);
    choice_.assign(cost_.size(), -1);
    for (int length = 0; length < size_; ++length)
      for (int s = 0; s + length < size_; ++s)
        for (int m = 0; m <= levels_; ++m) solve(s, s + length, m);
  }

  int levels() const { return levels_; }
  bool feasible(int m) const { return size_ > 0 && at(0, size_ - 1, m) < kNone; }

  /// The schedule at memory level m as (segment, forward) steps: `forward` true runs the
  /// segment's nodes forward, false its backward.
  std::vector<std::pair<int, bool>> schedule(int m) const {
    std::vector<std::pair<int, bool>> steps;
    emit(0, size_ - 1, m, &steps);
    return steps;
  }

 private:
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  size_t index(int s, int t, int m) const {
    return (static_cast<size_t>(s) * size_ + t) * (levels_ + 1) + m;
  }
  double at(int s, int t, int m) const {
    return m < 0 ? kNone : cost_[index(s, t, std::min(m, levels_))];
  }
  int level(int64_t bytes) const { return static_cast<int>(std::ceil(bytes / unit_)); }
  int gradient(int t) const { return level(seg_[t].output_bytes); }

  // Bytes the problem of k holds beyond what that of s (s < k) holds: k's side value when
  // s is in another stretch (in the same stretch, s's problem holds it or starts from it).
  // Its gradient, once made, is counted where it is made (side_gradient_left).
  int64_t side_added(int s, int k) const {
    return seg_[s].stretch != seg_[k].stretch ? seg_[k].side_bytes : 0;
  }
  // The gradient of k's side value, made when k..t was back-propagated (t ends k's stretch),
  // alive while s..k-1 are (no problem reaching past a stretch's end holds it).
  int64_t side_gradient_left(int k, int t) const {
    const ScheduledSegment& b = seg_[k];
    return b.side_bytes == 0 || t < b.stretch_end ? 0 : b.side_bytes;
  }
  // Memory levels of the rest s+1..t after running s keeping all.
  int rest_levels(int s, int t, int m) const {
    return m - level(seg_[s].kept_bytes) - level(side_added(s, s + 1));
  }
  // Memory levels of k..t after sweeping s..k-1, and of s..k-1 afterwards.
  int later_levels(int s, int k, int m) const {
    return m - level(seg_[k - 1].output_bytes) - level(side_added(s, k));
  }
  int earlier_levels(int s, int k, int t, int m) const {
    return m + gradient(t) - level(seg_[k - 1].output_bytes) - level(side_gradient_left(k, t));
  }

  void solve(int s, int t, int m) {
    const ScheduledSegment& a = seg_[s];
    double best = kNone;
    int pick = -1;
    // Run s keeping all, beside the parameter gradients of the segments after t; its
    // backward runs once the rest is done (the gradient of t's output is gone, its own
    // output's is in backward_bytes), beside the parameter gradients of s..t.
    const int64_t forward = a.forward_bytes + later_gradients_[t + 1];
    const int64_t backward =
        a.backward_bytes + later_gradients_[s] + (s < t ? side_gradient_left(s + 1, t) : 0);
    if (level(forward) <= m && level(backward) <= m + gradient(t)) {
      const double rest = s < t ? at(s + 1, t, rest_levels(s, t, m)) : 0;
      if (rest < kNone) best = a.forward_seconds + rest + a.backward_seconds, pick = 0;
    }
    // Sweep s..k-1 keeping only segment k-1's output (and the side values the sweep enters).
    double sweep = 0;
    int sweep_level = 0;
    for (int k = s + 1; k <= t; ++k) {
      const ScheduledSegment& swept = seg_[k - 1];
      const int64_t side = swept.stretch != a.stretch ? swept.side_bytes : 0;
      // ScheduledSegment s starts from the problem's checkpoint; later ones from a swept output.
      const int64_t bytes = k - 1 == s ? swept.sweep_bytes : swept.sweep_input_bytes;
      sweep += swept.forward_seconds;
      sweep_level = std::max(sweep_level, level(bytes + side + later_gradients_[t + 1]));
      if (sweep_level > m) break;
      const double later = at(k, t, later_levels(s, k, m));
      if (later == kNone) continue;
      const double earlier = at(s, k - 1, earlier_levels(s, k, t, m));
      if (sweep + later + earlier < best) best = sweep + later + earlier, pick = k;
    }
    cost_[index(s, t, m)] = best;
    choice_[index(s, t, m)] = pick;
  }

  void emit(int s, int t, int m, std::vector<std::pair<int, bool>>* steps) const {
    m = std::min(m, levels_);
    const int k = choice_[index(s, t, m)];
    if (k == 0) {
      steps->push_back({s, true});
      if (s < t) emit(s + 1, t, rest_levels(s, t, m), steps);
      steps->push_back({s, false});
      return;
    }
    for (int i = s; i < k; ++i) steps->push_back({i, true});
    emit(k, t, later_levels(s, k, m), steps);
    emit(s, k - 1, earlier_levels(s, k, t, m), steps);
  }

  const std::vector<ScheduledSegment>& seg_;
  int size_, levels_;
  double unit_ = 1;  // bytes per memory level
  // By segment: the parameter gradients of the segments from it on (bytes).
  std::vector<int64_t> later_gradients_;
  std::vector<double> cost_;
  std::vector<int> choice_;
};

}  // namespace monet
