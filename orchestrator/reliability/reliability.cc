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
    if (s.state != "available" && s.state != "allocated") continue;
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

TimePoint dayStart(TimePoint t) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::floor<std::chrono::days>(t.time_since_epoch())));
}

DailyWindow dailyWindow(TimePoint from, TimePoint to) {
  DailyWindow w{dayStart(from), dayStart(to), {}};
  if (to <= from) return w;
  if (from != w.first_day) w.edges.emplace_back(w.first_day, std::min(w.first_day + kDay, to));
  if (to != w.days_end && (w.days_end != w.first_day || from == w.first_day)) w.edges.emplace_back(w.days_end, to);
  return w;
}

ServiceSeries serviceSeriesFromDays(std::int64_t level_at_first_day, const std::vector<ServiceDay>& days,
                                    const std::vector<std::pair<TimePoint, int>>& edge_deltas, TimePoint from,
                                    TimePoint to, int gpus_per_host) {
  if (to <= from) return {};
  ServiceSeries out = emptyWeeks(from, to);
  std::int64_t level = level_at_first_day;
  auto next_day = days.begin();
  auto next_edge = edge_deltas.begin();
  for (TimePoint day = dayStart(from); day < to; day += kDay) {
    while (next_day != days.end() && next_day->day < day) ++next_day;
    const ServiceDay* row = next_day != days.end() && next_day->day == day ? &*next_day : nullptr;
    const TimePoint start = std::max(day, from), end = std::min(day + kDay, to);
    if (start == day && end == day + kDay) {
      const double host_seconds =
          static_cast<double>(level) * 86400.0 + (row ? static_cast<double>(row->tail_host_us) / 1e6 : 0.0);
      const double gh = host_seconds / 3600.0 * gpus_per_host;
      out.gpu_hours += gh;
      out.weekly_gpu_hours[weekStart(day)] += gh;
    } else {
      // A day the window covers in part: its raw deltas, from the level at its start.
      std::vector<std::pair<TimePoint, int>> deltas = {{day, static_cast<int>(level)}};
      while (next_edge != edge_deltas.end() && next_edge->first < day) ++next_edge;
      for (auto e = next_edge; e != edge_deltas.end() && e->first < day + kDay; ++e) deltas.push_back(*e);
      const ServiceSeries part = serviceSeries(deltas, start, end, gpus_per_host);
      out.gpu_hours += part.gpu_hours;
      for (const auto& [week, gh] : part.weekly_gpu_hours) out.weekly_gpu_hours[week] += gh;
    }
    if (row) level += row->net_hosts;
  }
  return out;
}

}  // namespace kiln::reliability
