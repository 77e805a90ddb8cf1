// IterationMeter: the measurement window of one training iteration — bytes live when it
// starts, the peak bytes and wall seconds until finish(), and optionally the memory trace.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "base/memory_tracker.h"

namespace monet {

class IterationMeter {
 public:
  struct Reading {
    int64_t start_bytes = 0;  // live when the window opened
    int64_t peak_bytes = 0;   // absolute peak inside the window
    double seconds = 0;       // wall time of the window
    std::vector<MemorySample> trace;
  };

  /// Opens the window: resets the tracker's peak; starts a trace ("start" sample).
  explicit IterationMeter(bool record_trace);
  /// Closes the window and reads it.
  Reading finish();

 private:
  bool record_trace_;
  int64_t start_bytes_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace monet
