// C entry points to the memory tracker, for loading libmonet.so into another process
// that links the same LibTorch (Python PyTorch through ctypes): the baseline comparison
// then measures Python and C++ with the very same allocator.
#include "base/memory_tracker.h"

extern "C" {
__attribute__((visibility("default"))) void monet_tracker_install() {
  monet::MemoryTracker::install();
}
__attribute__((visibility("default"))) int64_t monet_tracker_current() {
  return monet::MemoryTracker::current();
}
__attribute__((visibility("default"))) int64_t monet_tracker_peak() {
  return monet::MemoryTracker::peak();
}
__attribute__((visibility("default"))) void monet_tracker_reset_peak() {
  monet::MemoryTracker::reset_peak();
}
}
