// The benchmarks' /proc readers, on this test's own process and machine.
#include "tests/support/proc_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

namespace kiln::testing {
namespace {

TEST(ProcStatsTest, ReadsItsOwnCpuTimeAndMemory) {
  const double before = cpuSeconds(getpid());
  ASSERT_GE(before, 0);
  // Burn ~50 ms of CPU: the reading must move (it counts in clock ticks, 10 ms).
  volatile double x = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) x = x + 1;
  EXPECT_GT(cpuSeconds(getpid()), before);
  EXPECT_GT(rssKib(getpid()), 0);
}

TEST(ProcStatsTest, AGoneProcessReadsAsMinusOne) {
  EXPECT_EQ(cpuSeconds(-5), -1);  // no /proc/-5
  EXPECT_EQ(rssKib(-5), 0);
}

TEST(ProcStatsTest, MachineCpuGrowsAndBusyStaysWithinTotal) {
  const MachineCpu a = machineCpu();
  ASSERT_GT(a.cpus, 0);
  ASSERT_GT(a.total_s, 0);
  EXPECT_LE(a.busy_s, a.total_s);
  volatile double x = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) x = x + 1;
  const MachineCpu b = machineCpu();
  EXPECT_GT(b.busy_s, a.busy_s);
  // Both are tick counts over the clock rate: when the machine was busy the whole window the
  // two differences are the same ticks, subtracted from different sums in floating point.
  EXPECT_GE(b.total_s - a.total_s + 1e-9, b.busy_s - a.busy_s);
}

}  // namespace
}  // namespace kiln::testing
