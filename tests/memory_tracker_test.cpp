#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <sys/resource.h>

#include "base/memory_tracker.h"

namespace monet {
namespace {

class MemoryTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override { MemoryTracker::install(); }
};

TEST_F(MemoryTrackerTest, CountsExactBytes) {
  const int64_t before = MemoryTracker::current();
  const int64_t allocations = MemoryTracker::allocation_count();
  {
    at::Tensor a = at::empty({1000}, at::kFloat);
    EXPECT_EQ(MemoryTracker::current() - before, 4000);
    at::Tensor b = at::empty({3, 7}, at::kDouble);
    EXPECT_EQ(MemoryTracker::current() - before, 4000 + 168);
    at::Tensor view = a.view({10, 100});  // views allocate nothing
    EXPECT_EQ(MemoryTracker::current() - before, 4168);
    EXPECT_EQ(MemoryTracker::allocation_count() - allocations, 2);
  }
  EXPECT_EQ(MemoryTracker::current(), before);
}

TEST_F(MemoryTrackerTest, TracksPeakAndReset) {
  MemoryTracker::reset_peak();
  const int64_t base = MemoryTracker::current();
  EXPECT_EQ(MemoryTracker::peak(), base);
  {
    at::Tensor a = at::empty({1 << 20}, at::kByte);
    { at::Tensor b = at::empty({1 << 19}, at::kByte); }
  }
  EXPECT_EQ(MemoryTracker::peak() - base, (1 << 20) + (1 << 19));
  EXPECT_EQ(MemoryTracker::current(), base);
  MemoryTracker::reset_peak();
  EXPECT_EQ(MemoryTracker::peak(), base);
}

TEST_F(MemoryTrackerTest, ScopedPeakMeasuresItsScopeAndRestoresOuterPeak) {
  MemoryTracker::reset_peak();
  at::Tensor big = at::empty({4096}, at::kByte);
  big.reset();  // outer window peak is now base + 4096
  const int64_t outer_peak = MemoryTracker::peak();
  {
    ScopedPeak scope;
    EXPECT_EQ(scope.peak_above_start(), 0);
    at::Tensor t = at::empty({100}, at::kByte);
    EXPECT_EQ(scope.peak_above_start(), 100);
  }
  EXPECT_EQ(MemoryTracker::peak(), outer_peak);
}

TEST_F(MemoryTrackerTest, CountsOperatorTemporaries) {
  // A matrix product of two fresh 64x64 matrices allocates its 16 KiB output.
  at::Tensor a = at::ones({64, 64});
  at::Tensor b = at::ones({64, 64});
  MemoryTracker::reset_peak();
  const int64_t base = MemoryTracker::current();
  at::Tensor c = at::mm(a, b);
  EXPECT_GE(MemoryTracker::peak() - base, 64 * 64 * 4);
  EXPECT_EQ(MemoryTracker::current() - base, 64 * 64 * 4);
}

TEST_F(MemoryTrackerTest, RecordsTrace) {
  MemoryTracker::start_trace();
  const int64_t base = MemoryTracker::current();
  MemoryTracker::mark("start");
  at::Tensor a = at::empty({256}, at::kByte);
  MemoryTracker::mark("after a");
  a.reset();
  MemoryTracker::mark("freed");
  const auto trace = MemoryTracker::stop_trace();
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(trace[0].current_bytes, base);
  EXPECT_EQ(trace[1].label, "after a");
  EXPECT_EQ(trace[1].current_bytes, base + 256);
  EXPECT_EQ(trace[2].current_bytes, base);
  MemoryTracker::mark("not recorded");
  EXPECT_TRUE(MemoryTracker::stop_trace().empty());
}

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Freed memory serves the next allocations without new pages: writing a 32 MiB block
// allocated after a 64 MiB one was freed faults on almost none of its 4 KiB pages (with
// glibc's defaults each block is a mapping of its own, unmapped when freed, and every
// page of the new one faults: 8,192).
TEST_F(MemoryTrackerTest, FreedMemoryIsReusedWithoutPageFaults) {
  constexpr int64_t kBytes = 64 << 20;
  at::empty({kBytes}, at::kByte).fill_(1);
  const long before = minor_page_faults();
  at::empty({kBytes / 2}, at::kByte).fill_(2);
  EXPECT_LT(minor_page_faults() - before, kBytes / 2 / 4096 / 10);
}

}  // namespace
}  // namespace monet
