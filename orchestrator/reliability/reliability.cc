#include "orchestrator/reliability/reliability.h"

#include <algorithm>

namespace kiln::reliability {

const std::vector<std::string>& causes() {
  static const std::vector<std::string> all = {
      "nvlink_signal_integrity", "hbm", "lpddr", "nvswitch_fabric", "backend_network", "storage",
      "thermal", "power", "software", "gpu", "host_maintenance", "unknown"};
  return all;
}

bool isCause(const std::string& c) {
  const auto& all = causes();
  return std::find(all.begin(), all.end(), c) != all.end();
}

double hostGpuHours(const std::vector<StateChange>& history, TimePoint from, TimePoint to, int gpus_per_host) {
  if (to <= from) return 0;
  double seconds = 0;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto& s = history[i];
    if (!core::servesJobs(s.state)) continue;
    const TimePoint start = std::max(s.at, from);
    const TimePoint end = std::min(i + 1 < history.size() ? history[i + 1].at : to, to);
    if (end > start) seconds += std::chrono::duration<double>(end - start).count();
  }
  return seconds / 3600.0 * gpus_per_host;
}

double Window::days() const { return std::chrono::duration<double>(to - from).count() / 86400.0; }

Rates rates(double gpu_hours, std::int64_t interruptions) {
  Rates r;
  r.gpu_hours = gpu_hours;
  r.interruptions = interruptions;
  if (gpu_hours > 0) r.per_8k_gpus_per_day = static_cast<double>(interruptions) / (gpu_hours / 24.0 / kGpusPerRateUnit);
  if (interruptions > 0) r.mtbi_gpu_hours = gpu_hours / static_cast<double>(interruptions);
  return r;
}

TimePoint weekStart(TimePoint t) {
  using namespace std::chrono;
  const auto days_since_epoch = floor<days>(t.time_since_epoch());
  // 1970-01-01 was a Thursday: Monday is 3 days earlier.
  const auto weekday = (days_since_epoch.count() + 3) % 7;  // 0 = Monday
  return TimePoint(duration_cast<TimePoint::duration>(days_since_epoch - days(weekday)));
}

namespace {

constexpr auto kDay = std::chrono::hours(24);
constexpr auto kHour = std::chrono::hours(1);

// Every week [from, to) touches, at zero GPU-hours.
ServiceSeries emptyWeeks(TimePoint from, TimePoint to) {
  ServiceSeries out;
  for (TimePoint w = weekStart(from); w < to; w += 7 * kDay) out.weekly_gpu_hours[w] = 0;
  return out;
}

}  // namespace

ServiceSeries serviceSeries(const std::vector<std::pair<TimePoint, int>>& deltas, TimePoint from, TimePoint to,
                            int gpus_per_host) {
  if (to <= from) return {};
  ServiceSeries out = emptyWeeks(from, to);
  std::int64_t level = 0;
  TimePoint cursor = from;
  auto integrate = [&](TimePoint until) {
    // Spread [cursor, until) at the current level over the weeks it covers.
    while (cursor < until) {
      const TimePoint week_end = weekStart(cursor) + std::chrono::hours(24 * 7);
      const TimePoint end = std::min(until, week_end);
      const double gh = std::chrono::duration<double>(end - cursor).count() / 3600.0 * static_cast<double>(level) * gpus_per_host;
      out.gpu_hours += gh;
      out.weekly_gpu_hours[weekStart(cursor)] += gh;
      cursor = end;
    }
  };
  for (const auto& [at, delta] : deltas) {
    if (at >= to) break;
    if (at > cursor) integrate(at);
    level += delta;
  }
  integrate(to);
  return out;
}

namespace {

// The start of the period of `grain` (a whole number of hours, counted from the epoch) holding t.
TimePoint floorTo(TimePoint t, std::chrono::hours grain) {
  const auto h = std::chrono::floor<std::chrono::hours>(t.time_since_epoch()).count();
  const auto g = grain.count();
  const auto periods = h / g - (h % g < 0 ? 1 : 0);
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::hours(periods * g)));
}

// The periods of `grain` (a day or an hour, counted from the epoch) that [from, to) covers only
// in part, each [its start, the earlier of its end and to).
std::vector<std::pair<TimePoint, TimePoint>> partialPeriods(TimePoint from, TimePoint to, std::chrono::hours grain) {
  std::vector<std::pair<TimePoint, TimePoint>> out;
  if (to <= from) return out;
  const TimePoint first = floorTo(from, grain), last = floorTo(to, grain);
  if (from != first) out.emplace_back(first, std::min(first + grain, to));
  if (to != last && (last != first || from == first)) out.emplace_back(last, to);
  return out;
}

// Adds [from, to) within [begin, end) to `out`, period by period of `grain` from `begin` (a
// period's start) at `level` when begin starts: a whole period from its row of `rows` (sorted,
// none = no change), the others by part(level at the period's start, period, start, stop).
template <typename Part>
void integrate(std::int64_t level, TimePoint begin, TimePoint end, std::chrono::hours grain,
               const std::vector<ServicePeriod>& rows, TimePoint from, TimePoint to, int gpus_per_host, ServiceSeries& out,
               Part&& part) {
  auto row = std::lower_bound(rows.begin(), rows.end(), begin,
                              [](const ServicePeriod& r, TimePoint t) { return r.start < t; });
  const double grain_seconds = std::chrono::duration<double>(grain).count();
  for (TimePoint p = begin; p < end && p < to; p += grain) {
    while (row != rows.end() && row->start < p) ++row;
    const ServicePeriod* r = row != rows.end() && row->start == p ? &*row : nullptr;
    const TimePoint start = std::max(p, from), stop = std::min(p + grain, to);
    if (start == p && stop == p + grain) {
      const double host_seconds =
          static_cast<double>(level) * grain_seconds + (r ? static_cast<double>(r->tail_host_us) / 1e6 : 0.0);
      const double gh = host_seconds / 3600.0 * gpus_per_host;
      out.gpu_hours += gh;
      out.weekly_gpu_hours[weekStart(p)] += gh;
    } else if (start < stop) {
      part(level, p, start, stop);
    }
    if (r) level += r->net_hosts;
  }
}

}  // namespace

TimePoint dayStart(TimePoint t) { return floorTo(t, kDay); }

RollupWindow rollupWindow(TimePoint from, TimePoint to) {
  return {dayStart(from), dayStart(to), partialPeriods(from, to, kDay), partialPeriods(from, to, kHour)};
}

ServiceSeries serviceSeriesFromRollup(std::int64_t level_at_first_day, const std::vector<ServicePeriod>& days,
                                      const std::vector<ServicePeriod>& hours,
                                      const std::vector<std::pair<TimePoint, int>>& raw_deltas, TimePoint from,
                                      TimePoint to, int gpus_per_host) {
  if (to <= from) return {};
  ServiceSeries out = emptyWeeks(from, to);
  // Whole days from `days`; the hours of a partial day from `hours`; a partial hour from its raw
  // deltas, starting at the level at the hour's start.
  auto partial_hour = [&](std::int64_t level, TimePoint hour, TimePoint start, TimePoint stop) {
    std::vector<std::pair<TimePoint, int>> deltas = {{hour, static_cast<int>(level)}};
    auto d = std::lower_bound(raw_deltas.begin(), raw_deltas.end(), hour,
                              [](const std::pair<TimePoint, int>& x, TimePoint t) { return x.first < t; });
    for (; d != raw_deltas.end() && d->first < hour + kHour; ++d) deltas.push_back(*d);
    const ServiceSeries part = serviceSeries(deltas, start, stop, gpus_per_host);
    out.gpu_hours += part.gpu_hours;
    for (const auto& [week, gh] : part.weekly_gpu_hours) out.weekly_gpu_hours[week] += gh;
  };
  auto partial_day = [&](std::int64_t level, TimePoint day, TimePoint, TimePoint) {
    integrate(level, day, day + kDay, kHour, hours, from, to, gpus_per_host, out, partial_hour);
  };
  integrate(level_at_first_day, dayStart(from), to, kDay, days, from, to, gpus_per_host, out, partial_day);
  return out;
}

}  // namespace kiln::reliability
