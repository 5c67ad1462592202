#include "orchestrator/reliability/reliability_service.h"

#include <algorithm>
#include <cstdio>

#include <ctime>
#include <iomanip>
#include <sstream>

namespace kiln::reliability {

using nlohmann::json;

std::optional<TimePoint> parseTime(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  if (text.size() == 10) {
    in >> std::get_time(&tm, "%Y-%m-%d");
  } else {
    in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  }
  if (in.fail()) return std::nullopt;
  std::string rest;
  std::getline(in, rest);
  // Fractions of a second and a Z or +00:00 suffix are accepted; other offsets are not.
  if (!rest.empty() && rest[0] == '.') rest.erase(0, rest.find_first_not_of("0123456789", 1));
  if (!(rest.empty() || rest == "Z" || rest == "+00:00")) return std::nullopt;
  const std::time_t t = timegm(&tm);
  if (t == -1) return std::nullopt;
  // TimePoint counts nanoseconds in an int64: years past 2262 (or before 1677) overflow it
  // (undefined behaviour in from_time_t, found by fuzzing). No interruption is that far out.
  constexpr std::time_t kLimit = 9'000'000'000;  // ~2255
  if (t < -kLimit || t > kLimit) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

std::string formatTime(TimePoint t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<Interruption> decodeInterruption(const json& b) {
  if (!b.is_object()) return invalidContent("expected an interruption object");
  Error bad = invalidContent("invalid interruption");
  auto fail = [&](const std::string& p, const std::string& m) { bad.fields.push_back({p, m}); };
  for (const auto& [k, _] : b.items())
    if (k != "id" && k != "at" && k != "job" && k != "job_gpus" && k != "hosts" && k != "pod" && k != "cause" &&
        k != "owner" && k != "description")
      fail(k, "unknown field");
  Interruption i;
  auto str = [&](const char* key, std::string& out, std::size_t max, bool required) {
    if (!b.contains(key)) {
      if (required) fail(key, "is required");
      return;
    }
    if (!b[key].is_string() || b[key].get<std::string>().size() > max || (required && b[key].get<std::string>().empty()))
      fail(key, "expected a string of at most " + std::to_string(max) + " characters");
    else out = b[key].get<std::string>();
  };
  str("id", i.id, 128, true);
  std::string at;
  str("at", at, 64, true);
  if (!at.empty()) {
    auto t = parseTime(at);
    if (!t) fail("at", "expected an ISO 8601 UTC time like 2026-12-02T10:00:00Z");
    else i.at = *t;
  }
  str("job", i.job, 256, false);
  str("pod", i.pod, 64, false);
  str("cause", i.cause, 64, true);
  if (!i.cause.empty() && !isCause(i.cause)) {
    std::string list;
    for (const auto& c : causes()) list += (list.empty() ? "" : ", ") + c;
    fail("cause", "expected one of " + list);
  }
  str("owner", i.owner, 128, false);
  str("description", i.description, 4000, false);
  if (b.contains("job_gpus")) {
    if (!b["job_gpus"].is_number_integer() || b["job_gpus"].get<long long>() < 1 || b["job_gpus"].get<long long>() > 10000000)
      fail("job_gpus", "expected a whole number of GPUs");
    else i.job_gpus = b["job_gpus"].get<int>();
  }
  if (b.contains("hosts")) {
    if (!b["hosts"].is_array()) fail("hosts", "expected a list of host ids");
    else
      for (const auto& h : b["hosts"]) {
        if (!h.is_string()) fail("hosts", "expected a list of host ids");
        else i.hosts.push_back(h.get<std::string>());
      }
  }
  if (i.hosts.empty() && i.pod.empty()) fail("hosts", "give the affected hosts or pod");
  if (!bad.fields.empty()) {
    bad.message = "invalid interruption: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }
  return i;
}

Result<RecordOutcome> ReliabilityService::record(const json& body, const core::Actor& actor) {
  auto decoded = decodeInterruption(body);
  if (!decoded.ok()) return decoded.error();
  auto created = store_.record(*decoded, actor);
  if (!created.ok()) return created.error();
  return RecordOutcome{std::move(*decoded), *created};
}

Result<std::pair<TimePoint, TimePoint>> ReliabilityService::window(const std::string& from, const std::string& to) {
  const TimePoint now = clock_.now();
  TimePoint f = now - std::chrono::hours(24 * 28), t = now;
  if (!to.empty()) {
    auto p = parseTime(to);
    if (!p) return invalidArgument("to must be an ISO 8601 UTC time like 2026-12-02T00:00:00Z");
    t = *p;
  }
  if (!from.empty()) {
    auto p = parseTime(from);
    if (!p) return invalidArgument("from must be an ISO 8601 UTC time like 2026-11-01T00:00:00Z");
    f = *p;
  } else if (!to.empty()) {
    f = t - std::chrono::hours(24 * 28);
  }
  if (f >= t) return invalidArgument("from must be before to");
  if (t - f > std::chrono::hours(24 * 366 * 3)) return invalidArgument("the window is at most 3 years");
  return std::make_pair(f, t);
}

Result<ReliabilityReport> ReliabilityService::report(const std::string& from, const std::string& to, const Scope& scope,
                                                     int lemon_threshold) {
  auto w = window(from, to);
  if (!w.ok()) return w.error();
  auto [f, t] = *w;
  auto data = store_.data(f, t, scope, lemon_threshold);
  if (!data.ok()) return data.error();
  const ServiceSeries series = serviceSeriesFromRollup(data->service_level_at_first_day, data->service_days,
                                                       data->service_hours, data->service_raw_deltas, f, t, 4);
  std::map<std::string, std::int64_t> by_cause;
  std::map<TimePoint, std::int64_t> weekly_count;
  std::int64_t confirmed = 0, candidates = 0;
  for (const auto& c : data->interruptions) {
    if (c.candidate) {
      candidates += c.n;
      continue;
    }
    confirmed += c.n;
    by_cause[c.cause] += c.n;
    weekly_count[c.week] += c.n;
  }
  ReliabilityReport r;
  r.from = f;
  r.to = t;
  r.days = Window{f, t}.days();
  r.scope = scope;
  r.total = rates(series.gpu_hours, confirmed);
  r.candidates = candidates;
  r.targets = targets_;
  for (const auto& [cause, n] : by_cause)
    r.causes.push_back({cause, n, static_cast<double>(n) / static_cast<double>(confirmed)});
  std::sort(r.causes.begin(), r.causes.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  for (const auto& [week, gh] : series.weekly_gpu_hours) {
    const std::int64_t n = weekly_count.count(week) ? weekly_count[week] : 0;
    r.weekly.push_back({week, rates(gh, n)});
  }
  r.lemon_threshold = lemon_threshold;
  r.lemons = std::move(data->lemons);
  r.history_start = data->history_start;
  if (data->history_start && *data->history_start < t) r.covered_days = Window{std::max(f, *data->history_start), t}.days();
  return r;
}

Result<core::Page<Interruption>> ReliabilityService::list(const std::string& from, const std::string& to,
                                                         const std::string& cause, const std::string& candidate,
                                                         const core::PageRequest& page) {
  auto w = window(from, to);
  if (!w.ok()) return w.error();
  std::optional<bool> cand;
  if (candidate == "true") cand = true;
  else if (candidate == "false") cand = false;
  else if (!candidate.empty()) return invalidArgument("candidate must be true or false");
  if (!cause.empty() && !isCause(cause)) return invalidArgument("unknown cause '" + cause + "'");
  return store_.list(w->first, w->second, cause, cand, page);
}

std::string ReliabilityService::metrics() {
  auto counts = store_.countsByCause();
  if (!counts.ok()) return {};
  std::string out = "# HELP kiln_interruptions_total Recorded interruptions by cause (candidates excluded).\n"
                    "# TYPE kiln_interruptions_total counter\n";
  for (const auto& c : causes())
    out += "kiln_interruptions_total{cause=\"" + c + "\"} " + std::to_string(counts->count(c) ? counts->at(c) : 0) + "\n";
  // The targets that alerting and dashboards compare against (kilnd's reliability_target; by
  // default docs/FACTS.md's 2 per 8K GPUs per day = 8,000 x 24 / 2 = 96,000 GPU-hours MTBI), so that
  // no rule file repeats the numbers.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", targets_.per_8k_gpus_per_day);
  out += "# HELP kiln_reliability_north_star_per_8k_gpus_per_day The target interruption rate per 8,000 GPUs per day.\n"
         "# TYPE kiln_reliability_north_star_per_8k_gpus_per_day gauge\n";
  out += std::string("kiln_reliability_north_star_per_8k_gpus_per_day ") + buf + "\n";
  // In base units, as Prometheus names want them: 96,000 GPU-hours = 345,600,000 GPU-seconds.
  std::snprintf(buf, sizeof buf, "%.0f", targets_.mtbiGpuHours() * 3600);
  out += "# HELP kiln_reliability_north_star_mtbi_gpu_seconds The target mean time between interruptions in GPU-seconds (/ 3600: GPU-hours).\n"
         "# TYPE kiln_reliability_north_star_mtbi_gpu_seconds gauge\n";
  out += std::string("kiln_reliability_north_star_mtbi_gpu_seconds ") + buf + "\n";
  return out;
}

}  // namespace kiln::reliability
