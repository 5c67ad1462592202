#include "orchestrator/reliability/reliability.h"

#include <gtest/gtest.h>

namespace kiln::reliability {
namespace {

using std::chrono::hours;

const TimePoint t0 = TimePoint{} + hours(24 * 365 * 56);

// FACTS.md: 2 interruptions per 8K GPUs per day = 8,000 x 24 / 2 = 96,000 GPU-hours MTBI.
TEST(ReliabilityTest, NorthStarIsNinetySixThousandGpuHours) {
  const double gpu_hours = 8000.0 * 24 * 30;  // 8,000 GPUs for 30 days
  auto r = rates(gpu_hours, 60);              // 2 per day
  ASSERT_TRUE(r.per_8k_gpus_per_day && r.mtbi_gpu_hours);
  EXPECT_DOUBLE_EQ(*r.per_8k_gpus_per_day, 2.0);
  EXPECT_DOUBLE_EQ(*r.mtbi_gpu_hours, 96000.0);
}

// FACTS.md: Llama 3 405B on 16,384 H100s, 419 interruptions in 54 days (~1 per 3 h).
TEST(ReliabilityTest, Llama3RunFigures) {
  const double gpu_hours = 16384.0 * 24 * 54;
  auto r = rates(gpu_hours, 419);
  EXPECT_NEAR(*r.mtbi_gpu_hours, 50677, 1);
  EXPECT_NEAR(*r.per_8k_gpus_per_day, 419.0 / (16384.0 / 8000.0 * 54.0), 1e-9);
  EXPECT_NEAR(*r.per_8k_gpus_per_day, 3.79, 0.01);
  EXPECT_NEAR(54.0 * 24 / 419, 3.09, 0.01);  // ~1 interruption per 3 hours of wall time
}

TEST(ReliabilityTest, NoDataGivesNoRate) {
  EXPECT_FALSE(rates(0, 3).per_8k_gpus_per_day);
  EXPECT_FALSE(rates(1000, 0).mtbi_gpu_hours);
}

TEST(ReliabilityTest, GpuHoursCountOnlyServingStatesInsideTheWindow) {
  std::vector<StateChange> h = {{t0 - hours(10), "available"},
                                {t0 + hours(6), "allocated"},
                                {t0 + hours(12), "failed"},  // failed time does not count
                                {t0 + hours(18), "repair"},
                                {t0 + hours(30), "available"}};
  // Window: one day from t0: 12 h serving (0-12), then failed/repair, back at +30 (outside).
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0, t0 + hours(24), 4), 12.0 * 4);
  // A partial day: 3 hours of window.
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0 + hours(3), t0 + hours(6), 4), 3.0 * 4);
  // Entering service inside the window: counts from then on, to the window's end.
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0 + hours(24), t0 + hours(48), 4), 18.0 * 4);
}

TEST(ReliabilityTest, RetiredAndIncomingHostsDoNotCount) {
  std::vector<StateChange> h = {{t0, "incoming"}, {t0 + hours(5), "burn_in"}, {t0 + hours(8), "available"},
                                {t0 + hours(10), "retired"}};
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0, t0 + hours(100), 4), 2.0 * 4);
}

TEST(ReliabilityTest, WeeksStartOnMonday) {
  // 2026-12-02 is a Wednesday; its week starts Monday 2026-11-30.
  const TimePoint wed = TimePoint(std::chrono::seconds(1796169600));  // 2026-12-02T00:00:00Z
  const TimePoint mon = TimePoint(std::chrono::seconds(1796169600 - 2 * 86400));
  EXPECT_EQ(weekStart(wed + hours(13)), mon);
  EXPECT_EQ(weekStart(mon), mon);
  EXPECT_TRUE(isCause("hbm"));
  EXPECT_FALSE(isCause("cosmic_rays"));
}

TEST(ReliabilityTest, FleetSeriesEqualsTheSumOverHosts) {
  // Three hosts with different histories, some changes before the window.
  std::vector<std::vector<StateChange>> hosts = {
      {{t0 - hours(100), "available"}, {t0 + hours(30), "failed"}, {t0 + hours(200), "available"}},
      {{t0 + hours(10), "incoming"}, {t0 + hours(50), "available"}, {t0 + hours(60), "allocated"}, {t0 + hours(300), "retired"}},
      {{t0 - hours(5), "allocated"}, {t0 + hours(1), "draining"}, {t0 + hours(2), "maintenance"}, {t0 + hours(3), "available"}},
  };
  std::map<TimePoint, int> delta;
  for (const auto& h : hosts)
    for (std::size_t i = 0; i < h.size(); ++i) {
      const bool serving = h[i].state == "available" || h[i].state == "allocated";
      const bool was = i > 0 && (h[i - 1].state == "available" || h[i - 1].state == "allocated");
      delta[h[i].at] += static_cast<int>(serving) - static_cast<int>(was);
    }
  std::vector<std::pair<TimePoint, int>> deltas(delta.begin(), delta.end());
  const TimePoint from = t0, to = t0 + hours(24 * 15);
  double expected = 0;
  for (const auto& h : hosts) expected += hostGpuHours(h, from, to, 4);
  auto series = serviceSeries(deltas, from, to, 4);
  EXPECT_NEAR(series.gpu_hours, expected, 1e-6);
  double weekly = 0;
  for (const auto& [_, gh] : series.weekly_gpu_hours) weekly += gh;
  EXPECT_NEAR(weekly, expected, 1e-6);
  EXPECT_GE(series.weekly_gpu_hours.size(), 3u);
}

}  // namespace
}  // namespace kiln::reliability
