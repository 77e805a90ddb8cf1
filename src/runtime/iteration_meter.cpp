#include "runtime/iteration_meter.h"

namespace monet {

IterationMeter::IterationMeter(bool record_trace) : record_trace_(record_trace) {
  MemoryTracker::reset_peak();
  start_bytes_ = MemoryTracker::current();
  if (record_trace_) {
    MemoryTracker::start_trace();
    MemoryTracker::mark("start");
  }
  t0_ = std::chrono::steady_clock::now();
}

IterationMeter::Reading IterationMeter::finish() {
  Reading r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  r.start_bytes = start_bytes_;
  r.peak_bytes = MemoryTracker::peak();
  if (record_trace_) r.trace = MemoryTracker::stop_trace();
  return r;
}

}  // namespace monet
