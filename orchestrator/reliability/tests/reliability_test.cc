#include "orchestrator/reliability/reliability.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln::reliability {
namespace {

using std::chrono::hours;

const TimePoint t0 = TimePoint{} + hours(24 * 365 * 56);

// docs/FACTS.md: 2 interruptions per 8K GPUs per day = 8,000 x 24 / 2 = 96,000 GPU-hours MTBI.
TEST(ReliabilityTest, NorthStarIsNinetySixThousandGpuHours) {
  const double gpu_hours = 8000.0 * 24 * 30;  // 8,000 GPUs for 30 days
  auto r = rates(gpu_hours, 60);              // 2 per day
  ASSERT_TRUE(r.per_8k_gpus_per_day && r.mtbi_gpu_hours);
  EXPECT_DOUBLE_EQ(*r.per_8k_gpus_per_day, 2.0);
  EXPECT_DOUBLE_EQ(*r.mtbi_gpu_hours, 96000.0);
}

// docs/FACTS.md: Llama 3 405B on 16,384 H100s, 419 interruptions in 54 days (~1 per 3 h).
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
  std::vector<StateChange> h = {{t0 - hours(10), HostState::kAvailable},
                                {t0 + hours(6), HostState::kAllocated},
                                {t0 + hours(12), HostState::kFailed},  // failed time does not count
                                {t0 + hours(18), HostState::kRepair},
                                {t0 + hours(30), HostState::kAvailable}};
  // Window: one day from t0: 12 h serving (0-12), then failed/repair, back at +30 (outside).
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0, t0 + hours(24), 4), 12.0 * 4);
  // A partial day: 3 hours of window.
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0 + hours(3), t0 + hours(6), 4), 3.0 * 4);
  // Entering service inside the window: counts from then on, to the window's end.
  EXPECT_DOUBLE_EQ(hostGpuHours(h, t0 + hours(24), t0 + hours(48), 4), 18.0 * 4);
}

TEST(ReliabilityTest, RetiredAndIncomingHostsDoNotCount) {
  std::vector<StateChange> h = {{t0, HostState::kIncoming}, {t0 + hours(5), HostState::kBurnIn}, {t0 + hours(8), HostState::kAvailable},
                                {t0 + hours(10), HostState::kRetired}};
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
      {{t0 - hours(100), HostState::kAvailable}, {t0 + hours(30), HostState::kFailed}, {t0 + hours(200), HostState::kAvailable}},
      {{t0 + hours(10), HostState::kIncoming}, {t0 + hours(50), HostState::kAvailable}, {t0 + hours(60), HostState::kAllocated}, {t0 + hours(300), HostState::kRetired}},
      {{t0 - hours(5), HostState::kAllocated}, {t0 + hours(1), HostState::kDraining}, {t0 + hours(2), HostState::kMaintenance}, {t0 + hours(3), HostState::kAvailable}},
  };
  std::map<TimePoint, int> delta;
  for (const auto& h : hosts)
    for (std::size_t i = 0; i < h.size(); ++i) {
      const bool serving = core::servesJobs(h[i].state);
      const bool was = i > 0 && core::servesJobs(h[i - 1].state);
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

// What service_days / service_hours hold (db/migrations/0005_service_days.sql), from the deltas.
std::vector<ServicePeriod> rollUp(const std::vector<std::pair<TimePoint, int>>& deltas, std::chrono::hours grain) {
  std::map<TimePoint, ServicePeriod> periods;
  for (const auto& [at, delta] : deltas) {
    const TimePoint start = grain == hours(24) ? dayStart(at) : TimePoint(std::chrono::floor<std::chrono::hours>(at));
    ServicePeriod& p = periods[start];
    p.start = start;
    p.net_hosts += delta;
    p.tail_host_us += delta * std::chrono::duration_cast<std::chrono::microseconds>(start + grain - at).count();
  }
  std::vector<ServicePeriod> out;
  for (const auto& [_, p] : periods) out.push_back(p);
  return out;
}

bool inRanges(TimePoint t, const std::vector<std::pair<TimePoint, TimePoint>>& ranges) {
  for (const auto& [begin, end] : ranges)
    if (t >= begin && t < end) return true;
  return false;
}

// serviceSeriesFromRollup fed the way PgReliabilityStore::data() feeds it: the level before the
// window's first day, its days, the hours of its partial days, the raw deltas of its partial hours.
ServiceSeries fromRollUp(const std::vector<std::pair<TimePoint, int>>& deltas, TimePoint from, TimePoint to) {
  const RollupWindow w = rollupWindow(from, to);
  std::int64_t level = 0;
  std::vector<ServicePeriod> days, hour_rows;
  for (const auto& d : rollUp(deltas, hours(24))) {
    if (d.start < w.first_day) level += d.net_hosts;
    else if (d.start < w.days_end) days.push_back(d);
  }
  for (const auto& h : rollUp(deltas, hours(1)))
    if (inRanges(h.start, w.hour_ranges)) hour_rows.push_back(h);
  std::vector<std::pair<TimePoint, int>> raw;
  for (const auto& d : deltas)
    if (inRanges(d.first, w.raw_ranges)) raw.push_back(d);
  return serviceSeriesFromRollup(level, days, hour_rows, raw, from, to, 4);
}

void expectSameSeries(const ServiceSeries& got, const ServiceSeries& want, const std::string& what) {
  EXPECT_NEAR(got.gpu_hours, want.gpu_hours, 1e-9 * std::max(1.0, std::abs(want.gpu_hours))) << what;
  ASSERT_EQ(got.weekly_gpu_hours.size(), want.weekly_gpu_hours.size()) << what;
  for (const auto& [week, gh] : want.weekly_gpu_hours) {
    ASSERT_TRUE(got.weekly_gpu_hours.count(week)) << what;
    EXPECT_NEAR(got.weekly_gpu_hours.at(week), gh, 1e-9 * std::max(1.0, std::abs(gh))) << what;
  }
}

TEST(ReliabilityTest, RollupWindowSplitsOffThePartialDaysAndHours) {
  using Ranges = std::vector<std::pair<TimePoint, TimePoint>>;
  const TimePoint day = dayStart(t0);
  const RollupWindow aligned = rollupWindow(day, day + hours(48));
  EXPECT_EQ(aligned.days_end, day + hours(48));
  EXPECT_TRUE(aligned.hour_ranges.empty());
  EXPECT_TRUE(aligned.raw_ranges.empty());
  const auto m = std::chrono::minutes(20);
  const RollupWindow both = rollupWindow(day + hours(5) + m, day + hours(50) + m);
  EXPECT_EQ(both.first_day, day);
  EXPECT_EQ(both.days_end, day + hours(48));
  EXPECT_EQ(both.hour_ranges, (Ranges{{day, day + hours(24)}, {day + hours(48), day + hours(50) + m}}));
  EXPECT_EQ(both.raw_ranges, (Ranges{{day + hours(5), day + hours(6)}, {day + hours(50), day + hours(50) + m}}));
  // On the hour: partial days, whole hours.
  const RollupWindow hourly = rollupWindow(day + hours(5), day + hours(50));
  EXPECT_EQ(hourly.hour_ranges, (Ranges{{day, day + hours(24)}, {day + hours(48), day + hours(50)}}));
  EXPECT_TRUE(hourly.raw_ranges.empty());
  // Inside one day, one hour: one range each, up to `to`, whether from is on the boundary or not.
  EXPECT_EQ(rollupWindow(day + hours(5), day + hours(7)).hour_ranges, (Ranges{{day, day + hours(7)}}));
  EXPECT_EQ(rollupWindow(day, day + hours(7)).hour_ranges, (Ranges{{day, day + hours(7)}}));
  EXPECT_EQ(rollupWindow(day + hours(5), day + hours(5) + m).raw_ranges, (Ranges{{day + hours(5), day + hours(5) + m}}));
  EXPECT_EQ(rollupWindow(day + hours(5) + m, day + hours(5) + 2 * m).raw_ranges,
            (Ranges{{day + hours(5), day + hours(5) + 2 * m}}));
}

TEST(ReliabilityTest, TheRollUpGivesTheSameSeriesAsEveryDelta) {
  std::mt19937_64 rng(20261203);
  auto uniform = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const TimePoint base = dayStart(t0);
  for (int round = 0; round < 300; ++round) {
    // Random hosts over ~60 days, at microsecond times (as timestamptz keeps them), some changes at
    // midnight or on the hour (any list of deltas will do: their order per host does not matter).
    std::map<TimePoint, int> by_time;
    const int hosts = static_cast<int>(uniform(0, 12));
    for (int h = 0; h < hosts; ++h) {
      bool serving = false;
      TimePoint at = base + std::chrono::microseconds(uniform(-5LL * 86400 * 1000000, 10LL * 86400 * 1000000));
      for (int n = static_cast<int>(uniform(1, 15)); n > 0; --n) {
        const bool next = uniform(0, 1) == 0;
        if (next != serving) by_time[at] += next ? 1 : -1;
        serving = next;
        at += uniform(0, 3) == 0 ? hours(24 * uniform(0, 3)) : std::chrono::microseconds(uniform(1, 5LL * 86400 * 1000000));
        if (uniform(0, 5) == 0) at = dayStart(at);
        if (uniform(0, 5) == 0) at = TimePoint(std::chrono::floor<std::chrono::hours>(at));
      }
    }
    std::vector<std::pair<TimePoint, int>> deltas;
    for (const auto& [at, d] : by_time)
      if (d != 0) deltas.emplace_back(at, d);
    // Windows from and to at midnight, on the hour or neither; before, across and after every change,
    // inside one day or hour, empty.
    auto point = [&]() -> TimePoint {
      const TimePoint p = base + std::chrono::microseconds(uniform(-20LL * 86400 * 1000000, 80LL * 86400 * 1000000));
      switch (uniform(0, 2)) {
        case 0: return dayStart(p);
        case 1: return TimePoint(std::chrono::floor<std::chrono::hours>(p));
        default: return p;
      }
    };
    for (int w = 0; w < 20; ++w) {
      TimePoint from = point(), to = point();
      if (w % 5 == 0) to = from + std::chrono::microseconds(uniform(0, 86400LL * 1000000));  // within a day or two
      if (w % 6 == 0) to = from + std::chrono::microseconds(uniform(0, 3600LL * 1000000));   // within an hour or two
      if (w % 7 == 0) to = from;
      if (to < from && uniform(0, 1) == 0) std::swap(from, to);
      const std::string what = "round " + std::to_string(round) + " window " + std::to_string(w);
      expectSameSeries(fromRollUp(deltas, from, to), serviceSeries(deltas, from, to, 4), what);
    }
    if (deltas.empty()) continue;
    const TimePoint first = deltas.front().first, last = deltas.back().first;
    for (const auto& [from, to] : std::vector<std::pair<TimePoint, TimePoint>>{
             {first - hours(72), first - hours(1)}, {dayStart(first) - hours(48), dayStart(first)},
             {last + hours(1), last + hours(53)}, {dayStart(last) + hours(24), dayStart(last) + hours(24 * 9)},
             {first - hours(30), last + hours(30)}, {dayStart(first) + hours(3), dayStart(last) + hours(29)}})
      expectSameSeries(fromRollUp(deltas, from, to), serviceSeries(deltas, from, to, 4), "round " + std::to_string(round));
  }
}

}  // namespace
}  // namespace kiln::reliability
