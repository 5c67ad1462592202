#include "orchestrator/api/reliability_views.h"

#include <optional>

namespace kiln::api {
namespace {

using nlohmann::json;
using reliability::formatTime;

json orNull(const std::optional<double>& v) { return v ? json(*v) : json(); }

json interruptionJson(const reliability::Interruption& i) {
  return json{{"id", i.id},
              {"at", formatTime(i.at)},
              {"job", i.job},
              {"job_gpus", i.job_gpus ? json(*i.job_gpus) : json()},
              {"hosts", i.hosts},
              {"pod", i.pod.empty() ? json() : json(i.pod)},
              {"cause", i.cause},
              {"owner", i.owner},
              {"description", i.description}};
}

}  // namespace

json toJson(const reliability::RecordOutcome& r) {
  json j = interruptionJson(r.interruption);
  j["created"] = r.created;
  return j;
}

json interruptionListJson(const core::Page<reliability::Interruption>& page) {
  json items = json::array();
  for (const auto& i : page.items) {
    json j = interruptionJson(i);
    j["candidate"] = i.candidate;
    items.push_back(std::move(j));
  }
  return json{{"items", std::move(items)}, {"next_cursor", page.next_cursor ? json(*page.next_cursor) : json()}};
}

json toJson(const reliability::ReliabilityReport& r) {
  json causes = json::array();
  for (const auto& c : r.causes) causes.push_back({{"cause", c.cause}, {"count", c.count}, {"share", c.share}});
  json weekly = json::array();
  for (const auto& w : r.weekly)
    weekly.push_back({{"week", formatTime(w.start)},
                      {"gpu_hours", w.rates.gpu_hours},
                      {"interruptions", w.rates.interruptions},
                      {"per_8k_gpus_per_day", orNull(w.rates.per_8k_gpus_per_day)},
                      {"mtbi_gpu_hours", orNull(w.rates.mtbi_gpu_hours)}});
  json lemons = json::array();
  for (const auto& l : r.lemons)
    lemons.push_back({{"host", l.host}, {"pod", l.pod}, {"state", l.state}, {"interruptions", l.interruptions},
                      {"repairs", l.repairs}});
  return json{{"from", formatTime(r.from)},
              {"to", formatTime(r.to)},
              {"days", r.days},
              {"scope", {{"site", r.scope.site}, {"building", r.scope.building}, {"platform", r.scope.platform}}},
              {"gpu_hours", r.total.gpu_hours},
              {"interruptions", r.total.interruptions},
              {"candidates", r.candidates},
              {"per_8k_gpus_per_day", orNull(r.total.per_8k_gpus_per_day)},
              {"mtbi_gpu_hours", orNull(r.total.mtbi_gpu_hours)},
              {"history_start", r.history_start ? json(formatTime(*r.history_start)) : json()},
              {"covered_days", r.covered_days},
              {"north_star", {{"per_8k_gpus_per_day", r.targets.per_8k_gpus_per_day},
                              {"mtbi_gpu_hours", r.targets.mtbiGpuHours()}}},
              {"causes", std::move(causes)},
              {"weekly", std::move(weekly)},
              {"lemon_threshold", r.lemon_threshold},
              {"lemons", std::move(lemons)}};
}

}  // namespace kiln::api
