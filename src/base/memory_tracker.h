// MemoryTracker: exact accounting of CPU tensor memory.
//
// install() puts a c10 CPU allocator in front of LibTorch's default one. Every CPU
// allocation made through c10 afterwards (tensors, autograd buffers, ATen workspace) is
// counted at its requested size in bytes: current bytes, peak bytes since the last
// reset, and an optional trace of (label, current bytes) samples that callers append
// after each operator. This is the CPU analogue of torch.cuda.max_memory_allocated().
//
// Install it before any tensor that should be counted is created: memory allocated
// before install() is invisible to current() (it is still freed correctly).
//
// install() also has the C library keep freed memory for reuse (mallopt: no block gets a
// mapping of its own, the heap is never trimmed), for every allocation of the process,
// tracked or not: glibc otherwise maps each block above its mmap threshold afresh, and each
// page of it faults on first touch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace monet {

/// One sample of the memory trace.
struct MemorySample {
  std::string label;      ///< what just ran (an operator name, "backward", ...)
  int64_t current_bytes;  ///< bytes allocated right after it
  int64_t peak_bytes;     ///< peak bytes since the last reset, at that moment
};

class MemoryTracker {
 public:
  /// Installs the tracking allocator as LibTorch's CPU allocator (idempotent).
  static void install();
  static bool installed();

  /// Bytes currently allocated through the tracker.
  static int64_t current();
  /// Highest current() since the last reset_peak().
  static int64_t peak();
  /// Sets peak() to current(), starting a new measurement window.
  static void reset_peak();
  /// Number of allocations made through the tracker since install (for tests).
  static int64_t allocation_count();

  /// Trace recording. Samples are appended only while recording is on.
  static void start_trace();
  static void mark(const std::string& label);
  static std::vector<MemorySample> stop_trace();
};

/// Measures the peak over a scope relative to the bytes live when it began:
/// `ScopedPeak s; ...; s.peak_above_start()` gives the extra bytes the scope needed.
/// Nested scopes are supported: on destruction the enclosing window's peak is restored
/// to at least what it was.
class ScopedPeak {
 public:
  ScopedPeak();
  ~ScopedPeak();
  ScopedPeak(const ScopedPeak&) = delete;
  ScopedPeak& operator=(const ScopedPeak&) = delete;

  int64_t start_bytes() const { return start_; }
  /// Peak bytes (absolute) seen inside the scope so far.
  int64_t peak() const;
  /// peak() - start_bytes().
  int64_t peak_above_start() const { return peak() - start_; }

 private:
  int64_t start_;
  int64_t outer_peak_;
};

}  // namespace monet
