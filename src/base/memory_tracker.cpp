#include "base/memory_tracker.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <malloc.h>

#include <atomic>
#include <mutex>

namespace monet {
namespace {

// Each block carries a header in front of the data holding its requested size, so the
// deleter needs no lookup table. The header keeps the data 64-byte aligned, like c10's
// own allocator.
constexpr size_t kHeaderBytes = 64;

std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_allocations{0};
std::atomic<bool> g_installed{false};

std::mutex g_trace_mutex;
bool g_tracing = false;
std::vector<MemorySample> g_trace;

void raise_peak(int64_t value) {
  int64_t seen = g_peak.load(std::memory_order_relaxed);
  while (value > seen && !g_peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void tracked_delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeaderBytes;
  const auto bytes = *reinterpret_cast<int64_t*>(base);
  g_current.fetch_sub(bytes, std::memory_order_relaxed);
  c10::free_cpu(base);
}

struct TrackingCpuAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) const override {
    char* base = static_cast<char*>(c10::alloc_cpu(nbytes + kHeaderBytes));
    *reinterpret_cast<int64_t*>(base) = static_cast<int64_t>(nbytes);
    void* data = base + kHeaderBytes;
    const int64_t now =
        g_current.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
        static_cast<int64_t>(nbytes);
    raise_peak(now);
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return {data, data, &tracked_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &tracked_delete; }
};

TrackingCpuAllocator& tracking_allocator() {
  static TrackingCpuAllocator allocator;  // never destroyed before its blocks are freed
  return allocator;
}

}  // namespace

void MemoryTracker::install() {
  bool expected = false;
  if (!g_installed.compare_exchange_strong(expected, true)) return;
  // Freed memory stays in the C library's heap for the next allocation: no block is a
  // mapping of its own (glibc maps every block above 32 MiB afresh, and each of its
  // 4 KiB pages faults on first touch) and the heap is not trimmed (-1).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
  // Priority above c10's default (0) so later default registrations cannot displace it.
  c10::SetCPUAllocator(&tracking_allocator(), /*priority=*/100);
}

bool MemoryTracker::installed() { return g_installed.load(); }
int64_t MemoryTracker::current() { return g_current.load(); }
int64_t MemoryTracker::peak() { return g_peak.load(); }
void MemoryTracker::reset_peak() { g_peak.store(g_current.load()); }
int64_t MemoryTracker::allocation_count() { return g_allocations.load(); }

void MemoryTracker::start_trace() {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  g_trace.clear();
  g_tracing = true;
}

void MemoryTracker::mark(const std::string& label) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  if (g_tracing) g_trace.push_back({label, current(), peak()});
}

std::vector<MemorySample> MemoryTracker::stop_trace() {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  g_tracing = false;
  return std::move(g_trace);
}

ScopedPeak::ScopedPeak() : start_(MemoryTracker::current()), outer_peak_(MemoryTracker::peak()) {
  MemoryTracker::reset_peak();
}

ScopedPeak::~ScopedPeak() { raise_peak(outer_peak_); }

int64_t ScopedPeak::peak() const { return MemoryTracker::peak(); }

}  // namespace monet
