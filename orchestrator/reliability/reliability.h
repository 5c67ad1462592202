#pragma once
// Reliability maths (docs/FACTS.md "Maintenance and reliability figures"): GPU-hours in service from
// host state history, interruptions per 8K GPUs per day, MTBI in GPU-hours, causes, a weekly
// series, lemon hosts. Pure and thread-safe.
//
//   rate per 8K GPUs per day = interruptions / (GPU-hours / 24 / 8,000)
//   MTBI (GPU-hours)         = GPU-hours / interruptions
// North star: 2 per 8K GPUs per day  <=>  MTBI = 8,000 x 24 / 2 = 96,000 GPU-hours.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/host_lifecycle.h"

namespace kiln::reliability {

using core::HostState;
using core::TimePoint;

// Interruption causes (docs/FACTS.md interruption classes).
const std::vector<std::string>& causes();
bool isCause(const std::string& c);

// One host's state history: the state it entered at each time, in order. The host is "in
// service" while in a state that serves jobs (available, allocated).
struct StateChange {
  TimePoint at;
  HostState state = HostState::kIncoming;
};

// GPU-hours a host contributed to [from, to): time in serving states x GPUs per host.
double hostGpuHours(const std::vector<StateChange>& history, TimePoint from, TimePoint to, int gpus_per_host);

struct Window {
  TimePoint from, to;
  double days() const;
};

struct Rates {
  double gpu_hours = 0;
  std::int64_t interruptions = 0;
  std::optional<double> per_8k_gpus_per_day;  // none without GPU-hours
  std::optional<double> mtbi_gpu_hours;       // none without interruptions
};
Rates rates(double gpu_hours, std::int64_t interruptions);

inline constexpr double kNorthStarPer8kPerDay = 2.0;
inline constexpr double kGpusPerRateUnit = 8000.0;

// Monday 00:00 UTC of the week holding t.
TimePoint weekStart(TimePoint t);

// The fleet's serving level as a step function: at each time, how many hosts entered (+) or
// left (-) serving states. Integrates it over [from, to) into GPU-hours, in total and per week
// (keyed by weekStart). Changes before `from` set the level the window starts with. Equal to
// summing hostGpuHours over every host (tested).
struct ServiceSeries {
  double gpu_hours = 0;
  std::map<TimePoint, double> weekly_gpu_hours;
};
ServiceSeries serviceSeries(const std::vector<std::pair<TimePoint, int>>& deltas, TimePoint from, TimePoint to,
                            int gpus_per_host);

// 00:00 UTC of the day holding t.
TimePoint dayStart(TimePoint t);

// The same step function rolled up per UTC day and per hour (db/migrations/0005_service_days.sql:
// service_days, service_hours; summed over a scope). A period's net_hosts adds up its deltas,
// its tail_host_us each delta times the microseconds from its change to the period's end. The
// level at a day's start is the sum of net_hosts over the days before it, at an hour's start the
// level at its day's start plus the earlier hours' net_hosts; a whole period's host-seconds are
// level x its length in seconds + tail_host_us / 1e6.
struct ServicePeriod {
  TimePoint start;  // 00:00 UTC of the day, or the hour
  std::int64_t net_hosts = 0;
  std::int64_t tail_host_us = 0;
};

// What serviceSeriesFromRollup needs for [from, to): the level at first_day (the sum of every
// delta before it); the days in [first_day, days_end); the hours in `hour_ranges`, the days the
// window covers only in part (from or to not at midnight), each [its midnight, the earlier of its
// end and to); the raw deltas in `raw_ranges`, the hours the window covers only in part, each
// [its start, the earlier of its end and to). Ranges are [begin, end); one or two of each.
struct RollupWindow {
  TimePoint first_day, days_end;
  std::vector<std::pair<TimePoint, TimePoint>> hour_ranges, raw_ranges;
};
RollupWindow rollupWindow(TimePoint from, TimePoint to);

// serviceSeries(deltas, from, to, gpus_per_host) computed from the rollup instead of every
// delta, with the inputs rollupWindow(from, to) describes: `days` and `hours` sorted by start
// (a period without a row had no change), raw_deltas sorted by time. Equal to serviceSeries over
// the full delta list up to rounding (tested).
ServiceSeries serviceSeriesFromRollup(std::int64_t level_at_first_day, const std::vector<ServicePeriod>& days,
                                      const std::vector<ServicePeriod>& hours,
                                      const std::vector<std::pair<TimePoint, int>>& raw_deltas, TimePoint from,
                                      TimePoint to, int gpus_per_host);

}  // namespace kiln::reliability
