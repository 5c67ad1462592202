#include "cli/run_view.h"

#include <algorithm>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "cli/time_text.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

constexpr std::size_t kMessageWidth = 100;  // table cells; --json has the whole text

const json& arrayAt(const json& object, const char* key) {
  static const json kEmpty = json::array();
  if (!object.is_object()) return kEmpty;
  auto it = object.find(key);
  return it != object.end() && it->is_array() ? *it : kEmpty;
}

std::int64_t intAt(const json& object, const char* key, std::int64_t fallback = 0) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<std::int64_t>() : fallback;
}

bool boolAt(const json& object, const char* key) {
  if (!object.is_object()) return false;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

bool isFinishedHost(const std::string& status) {
  return status == "passed" || status == "failed" || status == "cancelled";
}

std::string timeAt(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !(*object.find(key)).is_number()) return "";
  return formatTimestamp(intAt(object, key));
}

std::string joined(const json& list, const std::string& separator) {
  std::string out;
  for (const auto& v : list) out += (out.empty() ? "" : separator) + cellText(v);
  return out;
}

struct Counts {
  std::int64_t hosts = 0, passed = 0, failed = 0, running = 0, cancelled = 0;
};

Counts countsOf(const json& run) {
  const json progress = run.is_object() && run.contains("progress") ? run["progress"] : json();
  if (progress.is_object())
    return {intAt(progress, "hosts"), intAt(progress, "passed"), intAt(progress, "failed"), intAt(progress, "running"),
            intAt(progress, "cancelled")};
  Counts c;
  for (const auto& h : arrayAt(run, "hosts")) {
    const std::string s = field(h, "status");
    ++c.hosts;
    if (s == "passed") ++c.passed;
    else if (s == "failed") ++c.failed;
    else if (s == "cancelled") ++c.cancelled;
    else ++c.running;
  }
  return c;
}

std::string countsText(const Counts& c) {
  std::string out = std::to_string(c.hosts) + (c.hosts == 1 ? " host, " : " hosts, ") + std::to_string(c.passed) +
                    " passed, " + std::to_string(c.failed) + " failed, " + std::to_string(c.running) + " running";
  if (c.cancelled > 0) out += ", " + std::to_string(c.cancelled) + " cancelled";
  return out;
}

// "dcgm-diag 10, gpu-state 4": where the unfinished hosts are, in workflow step order.
std::string runningSteps(const json& run) {
  std::map<std::string, int> at;
  for (const auto& h : arrayAt(run, "hosts")) {
    if (isFinishedHost(field(h, "status"))) continue;
    std::string step = field(h, "current_step");
    if (step.empty()) step = field(h, "status");
    ++at[step];
  }
  std::vector<std::string> order;
  for (const auto& s : arrayAt(run, "steps"))
    if (at.count(cellText(s))) order.push_back(cellText(s));
  for (const auto& [step, _] : at)
    if (std::find(order.begin(), order.end(), step) == order.end()) order.push_back(step);
  std::string out;
  for (const auto& step : order) out += (out.empty() ? "" : ", ") + step + " " + std::to_string(at[step]);
  return out;
}

std::string attemptText(const json& rec) {
  std::string out = field(rec, "attempt");
  if (intAt(rec, "retest_round") > 0) out += " (retest " + field(rec, "retest_round") + ")";
  return out;
}

std::string exitText(const json& rec) {
  const std::string outcome = field(rec, "outcome");
  if (outcome == "skipped" || outcome == "shared" || intAt(rec, "exit_code", -1) < 0) return "";
  return field(rec, "exit_code");
}

std::string durationText(const json& rec) {
  if (!rec.is_object() || !rec.contains("duration_ms") || intAt(rec, "duration_ms") <= 0) return "";
  return formatDuration(std::chrono::milliseconds(intAt(rec, "duration_ms")));
}

std::string renderSummary(const json& run) {
  const json summary = run.is_object() && run.contains("summary") ? run["summary"] : json();
  if (!summary.is_object() || !summary.contains("hosts")) return "";
  std::string healthy = field(summary, "healthy") + " of " + field(summary, "hosts") + " hosts";
  if (intAt(summary, "cancelled") > 0) healthy += " (" + field(summary, "cancelled") + " cancelled)";
  std::string out = "\nSummary:\n" + renderKeyValues({{"healthy", healthy}});
  std::vector<std::vector<std::string>> unhealthy;
  for (const auto& u : arrayAt(summary, "unhealthy"))
    unhealthy.push_back({field(u, "host"), field(u, "pod"), shorten(joined(arrayAt(u, "reasons"), "; "), kMessageWidth)});
  if (!unhealthy.empty()) out += "\nUnhealthy hosts:\n" + renderTable({"HOST", "POD", "REASONS"}, unhealthy);
  std::vector<std::vector<std::string>> pods;
  for (const auto& p : arrayAt(summary, "pods")) {
    const json cover = p.is_object() && p.contains("spares_cover") ? p["spares_cover"] : json();
    pods.push_back({field(p, "pod"), field(p, "healthy_hosts") + "/" + field(p, "hosts"), field(p, "healthy_gpus"),
                    cover.is_boolean() ? (cover.get<bool>() ? "yes" : "NO") : "", joined(arrayAt(p, "failed_hosts"), ",")});
  }
  if (!pods.empty())
    out += "\nPods:\n" + renderTable({"POD", "HEALTHY_HOSTS", "HEALTHY_GPUS", "SPARES_COVER", "FAILED_HOSTS"}, pods);
  return out;
}

std::string runHeader(const json& run) {
  std::string workflow = field(run, "workflow");
  if (!field(run, "workflow_hash").empty()) workflow += " (" + field(run, "workflow_hash").substr(0, 12) + ")";
  std::string created = timeAt(run, "created_at_ms");
  if (!field(run, "created_by").empty()) created += " by " + field(run, "created_by");
  std::string finished = timeAt(run, "finished_at_ms");
  if (!finished.empty() && intAt(run, "created_at_ms") > 0)
    finished += " (after " +
                formatDuration(std::chrono::milliseconds(intAt(run, "finished_at_ms") - intAt(run, "created_at_ms"))) + ")";
  return renderKeyValues({{"id", field(run, "id")},
                          {"workflow", workflow},
                          {"purpose", field(run, "purpose")},
                          {"scope", field(run, "scope")},
                          {"state", field(run, "state")},
                          {"progress", countsText(countsOf(run))},
                          {"params", field(run, "params")},
                          {"created", created},
                          {"finished", finished}});
}

}  // namespace

std::string renderRun(const json& run) {
  std::string out = runHeader(run);
  std::vector<std::vector<std::string>> hosts;
  for (const auto& h : arrayAt(run, "hosts")) {
    std::string step = field(h, "current_step");
    if (!step.empty() && h.contains("waiting_until_ms") && h["waiting_until_ms"].is_number()) step += " (waiting)";
    hosts.push_back({field(h, "host"), field(h, "status"), step, field(h, "pass"),
                     shorten(joined(arrayAt(h, "failures"), "; "), kMessageWidth),
                     shorten(joined(arrayAt(h, "warnings"), "; "), kMessageWidth)});
  }
  out += "\nHosts:\n" + renderTable({"HOST", "STATUS", "STEP", "PASS", "FAILURES", "WARNINGS"}, hosts);
  for (const auto& h : arrayAt(run, "hosts")) {
    const json& steps = arrayAt(h, "steps");
    out += "\n" + field(h, "host") + ": " + field(h, "status") + "\n";
    if (steps.empty()) {
      out += "  (no step finished yet)\n";
      continue;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : steps)
      rows.push_back({field(r, "step"), field(r, "pass"), attemptText(r), field(r, "outcome"), exitText(r),
                      durationText(r), shorten(field(r, "message"), kMessageWidth)});
    out += renderTable({"STEP", "PASS", "ATTEMPT", "OUTCOME", "EXIT", "TIME", "MESSAGE"}, rows);
  }
  return out + renderSummary(run);
}

std::string renderRunList(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : arrayAt(page, "items")) {
    const json summary = r.is_object() && r.contains("summary") ? r["summary"] : json();
    std::string healthy;
    if (summary.is_object() && summary.contains("hosts"))
      healthy = field(summary, "healthy") + "/" + field(summary, "hosts");
    rows.push_back({field(r, "id"), field(r, "workflow"), field(r, "purpose"), field(r, "state"), healthy,
                    timeAt(r, "created_at_ms"), field(r, "created_by"), timeAt(r, "finished_at_ms")});
  }
  return renderTable({"ID", "WORKFLOW", "PURPOSE", "STATE", "HEALTHY", "CREATED", "BY", "FINISHED"}, rows);
}

std::string progressLine(const json& run) {
  std::string out = field(run, "id") + " " + field(run, "state") + ": " + countsText(countsOf(run));
  const std::string at = runningSteps(run);
  if (!at.empty()) out += " (" + at + ")";
  return out;
}

std::string progressBar(const json& run, std::chrono::milliseconds elapsed, int width) {
  const Counts c = countsOf(run);
  const std::int64_t done = c.passed + c.failed + c.cancelled;
  const std::int64_t filled = c.hosts > 0 ? std::min<std::int64_t>(width, done * width / c.hosts) : 0;
  std::string out = "[" + std::string(static_cast<std::size_t>(filled), '#') +
                    std::string(static_cast<std::size_t>(width - filled), '-') + "] " + std::to_string(done) + "/" +
                    std::to_string(c.hosts) + " done";
  if (c.failed > 0) out += ", " + std::to_string(c.failed) + " failed";
  return out + ", " + formatDuration(elapsed);
}

std::string renderVerdict(const json& run) {
  const Counts c = countsOf(run);
  const std::string state = field(run, "state");
  std::string out = field(run, "id") + " " + state + ": " + std::to_string(c.passed) + " of " + std::to_string(c.hosts) +
                    (c.hosts == 1 ? " host" : " hosts") + " healthy";
  if (c.cancelled > 0) out += ", " + std::to_string(c.cancelled) + " cancelled";
  if (c.running > 0) out += ", " + std::to_string(c.running) + " unfinished";
  out += "\n";
  for (const auto& h : arrayAt(run, "hosts")) {
    if (field(h, "status") != "failed") continue;
    out += "  FAILED " + field(h, "host") + ": " + shorten(joined(arrayAt(h, "failures"), "; "), 300) + "\n";
  }
  const json summary = run.is_object() && run.contains("summary") ? run["summary"] : json();
  for (const auto& p : arrayAt(summary, "pods")) {
    if (!p.is_object() || !p.contains("spares_cover") || !p["spares_cover"].is_boolean()) continue;
    if (p["spares_cover"].get<bool>()) continue;
    out += "  pod " + field(p, "pod") + ": " + field(p, "healthy_gpus") +
           " healthy GPUs: its spares no longer cover a 64-GPU slice\n";
  }
  return out;
}

std::string renderQuarantine(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& q : arrayAt(page, "items")) {
    std::string since;
    if (q.is_object() && q.contains("seconds_in_quarantine") && q["seconds_in_quarantine"].is_number())
      since = formatDuration(std::chrono::seconds(intAt(q, "seconds_in_quarantine")));
    std::string validation = "not started";
    if (!field(q, "validation_run").empty()) {
      validation = field(q, "validation_run") + " " + field(q, "validation_state");
      const json progress = q.contains("progress") ? q["progress"] : json();
      if (field(q, "validation_state") == "running" && progress.is_object()) {
        std::string where = "pass " + field(progress, "pass");
        if (progress.contains("step_index") && progress["step_index"].is_number())
          where += ", step " + std::to_string(intAt(progress, "step_index") + 1);
        if (progress.contains("waiting_until_ms") && progress["waiting_until_ms"].is_number()) where += ", soaking";
        validation += ": " + where;
      }
    }
    const bool repeat = boolAt(q, "repeat_offender");
    rows.push_back({field(q, "host"), field(q, "pod"), since, field(q, "repairs"), repeat ? "REPEAT" : "",
                    shorten(field(q, "last_failure"), 80), validation});
  }
  return renderTable({"HOST", "POD", "IN_QUARANTINE", "REPAIRS", "OFFENDER", "LAST_FAILURE", "VALIDATION"}, rows);
}

}  // namespace kiln::cli
