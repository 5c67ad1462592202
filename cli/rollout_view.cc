#include "cli/rollout_view.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "cli/time_text.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

long long count(const json& object, const char* key) {
  const json& v = member(object, key);
  return v.is_number() ? v.get<long long>() : 0;
}

std::string timeField(const json& object, const char* key) {
  const json& v = member(object, key);
  return v.is_number() ? formatTimestamp(v.get<std::int64_t>()) : "";
}

// 25.0 -> "25", 12.5 -> "12.5"
std::string numberText(const json& v) {
  if (!v.is_number()) return cellText(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v.get<double>());
  return buf;
}

std::string seconds(double s) {
  return formatDuration(std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(s * 1000))));
}

// "p1 p2 p3 ... (+12 more)"
std::string podList(const json& pods, std::size_t shown = 8) {
  if (!pods.is_array()) return "";
  std::string out;
  std::size_t i = 0;
  for (const auto& p : pods) {
    if (i++ == shown) return out + " ... (+" + std::to_string(pods.size() - shown) + " more)";
    out += (out.empty() ? "" : " ") + cellText(p);
  }
  return out;
}

std::string bundleName(const json& b) {
  if (b.is_string()) return b.get<std::string>();
  const std::string name = field(b, "name"), version = field(b, "version"), id = field(b, "id");
  if (name.empty()) return id;
  return name + "@" + version + (id.empty() ? "" : " (" + id + ")");
}

std::string waveName(const json& index) {
  if (!index.is_number_integer()) return cellText(index);
  const long long w = index.get<long long>();
  return w == 0 ? "canary" : "wave " + std::to_string(w);
}

// "10 succeeded, 1 failed" from the phases that are above zero.
std::string phaseList(const json& counts, std::initializer_list<const char*> phases) {
  std::string out;
  for (const char* p : phases)
    if (long long n = count(counts, p); n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + p;
  return out;
}

long long inFlight(const json& counts) {
  return count(counts, "draining") + count(counts, "upgrading") + count(counts, "validating");
}

long long done(const json& counts) {
  return count(counts, "succeeded") + count(counts, "failed") + count(counts, "skipped") + count(counts, "aborted");
}

const json* currentWave(const json& rollout) {
  const json& cw = member(rollout, "current_wave");
  const json& waves = member(rollout, "waves");
  if (!cw.is_number_integer() || !waves.is_array()) return nullptr;
  for (const auto& w : waves)
    if (member(w, "index") == cw) return &w;
  return nullptr;
}

// The shared part of the progress line and the terminal status line.
std::string progressBody(const json& r) {
  const json& counts = member(r, "counts");
  std::string out;
  if (const json* w = currentWave(r))
    out += waveName(member(*w, "index")) + " " + field(*w, "finished") + "/" + field(*w, "pods") + ", ";
  out += std::to_string(done(counts)) + "/" + field(r, "total") + " done";
  const std::string finished = phaseList(counts, {"succeeded", "failed", "skipped", "aborted"});
  if (!finished.empty()) out += " (" + finished + ")";
  if (long long n = inFlight(counts); n > 0) {
    out += ", " + std::to_string(n) + " in flight (" + phaseList(counts, {"draining", "upgrading", "validating"}) + ")";
  }
  if (long long n = count(counts, "pending"); n > 0) out += ", " + std::to_string(n) + " pending";
  std::string waiting;
  const json& w = member(r, "waiting");
  if (w.is_object())
    for (const auto& [why, n] : w.items())
      if (why.rfind("wave ", 0) != 0) waiting += (waiting.empty() ? "" : ", ") + why + " " + cellText(n);
  if (!waiting.empty()) out += "; waiting: " + waiting;
  const json& d = member(r, "pod_durations");
  if (count(d, "count") > 0 && member(d, "p50_s").is_number() && member(d, "p90_s").is_number())
    out += "; P50 " + seconds(d["p50_s"].get<double>()) + ", P90 " + seconds(d["p90_s"].get<double>());
  const json& eta = member(r, "eta_s");
  if (eta.is_number()) out += "; ETA " + seconds(eta.get<double>());
  return out;
}

std::string stateWithReason(const json& r) {
  std::string state = field(r, "state");
  const std::string reason = field(r, "halt_reason");
  if (state == "halted" && !reason.empty()) state += " (" + reason + ")";
  return state;
}

}  // namespace

// ---- bundles ----

std::string renderBundleList(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : member(page, "items").is_array() ? page["items"] : json::array()) {
    std::string components;
    for (const auto& c : member(b, "components").is_array() ? b["components"] : json::array())
      components += (components.empty() ? "" : " ") + field(c, "kind") + "=" + field(c, "version");
    rows.push_back({field(b, "id"), field(b, "name"), field(b, "version"), field(b, "platforms"), field(b, "workflow"),
                    shorten(components, 60), field(b, "used") == "true" ? "yes" : "no", timeField(b, "created_at_ms"),
                    field(b, "created_by")});
  }
  return renderTable({"ID", "NAME", "VERSION", "PLATFORMS", "WORKFLOW", "COMPONENTS", "USED", "CREATED", "BY"}, rows);
}

std::string renderBundle(const json& b) {
  std::string out = renderKeyValues({{"id", field(b, "id")},
                                     {"name", field(b, "name")},
                                     {"version", field(b, "version")},
                                     {"platforms", field(b, "platforms")},
                                     {"workflow", field(b, "workflow")},
                                     {"used", field(b, "used") == "true" ? "yes (immutable)" : "no"},
                                     {"created", timeField(b, "created_at_ms")}});
  std::vector<std::vector<std::string>> comps;
  for (const auto& c : member(b, "components").is_array() ? b["components"] : json::array())
    comps.push_back({field(c, "kind"), field(c, "version"), field(c, "artifact"), field(c, "sha256").substr(0, 12)});
  out += "\nComponents:\n" + renderTable({"KIND", "VERSION", "ARTIFACT", "SHA256"}, comps);
  std::vector<std::vector<std::string>> pre;
  for (const auto& p : member(b, "prerequisites").is_array() ? b["prerequisites"] : json::array())
    pre.push_back({field(p, "kind"), field(p, "min_version")});
  if (!pre.empty()) out += "\nPrerequisites:\n" + renderTable({"KIND", "MIN_VERSION"}, pre);
  return out;
}

std::string renderCompliance(const json& report) {
  const json& c = member(report, "counts");
  const json& h = member(report, "host_counts");
  const long long pods =
      count(c, "compliant") + count(c, "needs_upgrade") + count(c, "needs_downgrade") + count(c, "incompatible");
  const long long hosts =
      count(h, "compliant") + count(h, "needs_upgrade") + count(h, "needs_downgrade") + count(h, "incompatible");
  // Pods running newer versions than the bundle are never counted as needing the upgrade.
  const auto downgrade = [&](const json& m) {
    return count(m, "needs_downgrade") > 0 ? ", " + std::to_string(count(m, "needs_downgrade")) + " would be DOWNGRADED"
                                           : std::string();
  };
  std::string out = "bundle " + field(report, "bundle") + ": " + std::to_string(pods) + " pods: " +
                    std::to_string(count(c, "compliant")) + " compliant, " + std::to_string(count(c, "needs_upgrade")) +
                    " need the upgrade" + downgrade(c) + ", " + std::to_string(count(c, "incompatible")) + " incompatible\n";
  out += "hosts: " + std::to_string(hosts) + ": " + std::to_string(count(h, "compliant")) + " compliant, " +
         std::to_string(count(h, "needs_upgrade")) + " need the upgrade" + downgrade(h) + ", " +
         std::to_string(count(h, "incompatible")) + " incompatible\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : member(report, "pods").is_array() ? report["pods"] : json::array()) {
    std::string reasons;
    for (const auto& r : member(p, "reasons").is_array() ? p["reasons"] : json::array())
      reasons += (reasons.empty() ? "" : "; ") + cellText(r);
    rows.push_back({field(p, "pod"), field(p, "building"), field(p, "platform"), field(p, "state"),
                    field(p, "hosts_compliant") + "/" + field(p, "hosts_needing_upgrade") + "/" + field(p, "hosts_incompatible"),
                    shorten(reasons, 100)});
  }
  if (!rows.empty())
    out += "\n" + renderTable({"POD", "BUILDING", "PLATFORM", "STATE", "HOSTS OK/UPGRADE/INCOMPATIBLE", "REASONS"}, rows);
  return out;
}

// ---- rollouts ----

std::string policyText(const json& p) {
  if (!p.is_object()) return "";
  std::vector<std::string> parts;
  if (p.contains("canary_pods")) parts.push_back("canary " + field(p, "canary_pods"));
  if (p.contains("waves")) parts.push_back("waves " + field(p, "waves"));
  if (p.contains("soak")) parts.push_back("soak " + field(p, "soak"));
  if (p.contains("max_concurrent_pods")) parts.push_back(field(p, "max_concurrent_pods") + " pods at once");
  const json& floor = member(p, "capacity_floor");
  if (floor.is_object()) {
    if (floor.contains("max_pods_down")) parts.push_back("at most " + field(floor, "max_pods_down") + " pods down per building");
    if (floor.contains("max_percent_down"))
      parts.push_back("at most " + numberText(floor["max_percent_down"]) + "% of a building down");
  }
  if (p.contains("allocated")) parts.push_back("allocated pods: " + field(p, "allocated"));
  const json& budget = member(p, "failure_budget");
  if (budget.is_object()) {
    if (budget.contains("pods"))
      parts.push_back("halt when more than " + field(budget, "pods") + (field(budget, "pods") == "1" ? " pod fails" : " pods fail"));
    if (budget.contains("percent")) parts.push_back("halt when more than " + numberText(budget["percent"]) + "% fail");
  }
  if (p.contains("max_rebooting_pods_per_building"))
    parts.push_back(field(p, "max_rebooting_pods_per_building") + " rebooting per building");
  if (p.contains("order")) parts.push_back("order " + field(p, "order"));
  const json& windows = member(p, "windows");
  if (windows.is_array() && !windows.empty()) {
    std::string list;
    for (const auto& w : windows) list += (list.empty() ? "" : "; ") + (w.is_string() ? w.get<std::string>() : w.dump());
    parts.push_back("new pods only in " + list + " (UTC)");
  }
  std::string out;
  for (const auto& s : parts) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string selectorText(const json& s) {
  std::string out;
  if (s.is_object())
    for (const char* key : {"sites", "buildings", "platforms", "pods", "labels"}) {
      const json& v = member(s, key);
      if (v.is_null() || v.empty()) continue;
      std::string text;
      if (v.is_object())
        for (const auto& [k, val] : v.items()) text += (text.empty() ? "" : ",") + k + "=" + cellText(val);
      else
        text = cellText(v);
      out += (out.empty() ? "" : "; ") + std::string(key) + " " + shorten(text, 120);
    }
  return out.empty() ? "every pod" : out;
}

std::string renderPlan(const json& doc) {
  const json& plan = member(doc, "plan");
  const json& waves = member(plan, "waves");
  const json& excluded = member(plan, "excluded");
  const std::size_t wave_count = waves.is_array() ? waves.size() : 0;
  const std::size_t excluded_count = excluded.is_array() ? excluded.size() : 0;
  std::string out = "Dry run (nothing was written): bundle " + bundleName(member(doc, "bundle")) + ", " +
                    field(plan, "eligible") + " pods eligible in " + std::to_string(wave_count) +
                    (wave_count == 1 ? " wave, " : " waves, ") + std::to_string(excluded_count) + " excluded\n";
  out += renderKeyValues({{"selector", selectorText(member(doc, "selector"))}, {"policy", policyText(member(doc, "policy"))}});
  std::vector<std::vector<std::string>> rows;
  for (const auto& w : waves.is_array() ? waves : json::array()) {
    const json& pods = member(w, "pods");
    rows.push_back({waveName(member(w, "index")), std::to_string(pods.is_array() ? pods.size() : 0), podList(pods)});
  }
  out += "\nWaves:\n" + (rows.empty() ? std::string("(none: no selected pod needs the bundle)\n")
                                      : renderTable({"WAVE", "PODS", "POD LIST"}, rows));
  // A downgrade is never shown as an upgrade: kilnd refuses to create it without --allow-downgrade.
  for (const auto& w : member(doc, "warnings").is_array() ? doc["warnings"] : json::array())
    if (w.is_string()) out += "\nWARNING: " + w.get<std::string>() + "\n";
  const json& downgrades = member(plan, "downgrades");
  if (downgrades.is_array() && !downgrades.empty()) {
    std::vector<std::vector<std::string>> dn;
    for (const auto& d : downgrades) {
      std::string reasons;
      for (const auto& r : member(d, "reasons").is_array() ? d["reasons"] : json::array())
        if (r.is_string()) reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
      dn.push_back({field(d, "pod"), reasons});
    }
    out += "\nDowngrades (" + std::to_string(downgrades.size()) +
           "; create refuses them without --allow-downgrade --reason TEXT):\n" + renderTable({"POD", "OLDER VERSIONS"}, dn);
  }
  if (excluded_count > 0) {
    std::vector<std::vector<std::string>> ex;
    for (const auto& e : excluded) ex.push_back({field(e, "pod"), field(e, "reason")});
    out += "\nExcluded (" + std::to_string(excluded_count) + "):\n" + renderTable({"POD", "REASON"}, ex);
  }
  return out;
}

std::string renderRolloutList(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : member(page, "items").is_array() ? page["items"] : json::array())
    rows.push_back({field(r, "id"), field(r, "bundle"), field(r, "state"), field(r, "pods"), timeField(r, "created_at_ms"),
                    field(r, "created_by"), timeField(r, "started_at_ms"), timeField(r, "finished_at_ms"),
                    shorten(field(r, "halt_reason"), 60)});
  return renderTable({"ID", "BUNDLE", "STATE", "PODS", "CREATED", "BY", "STARTED", "FINISHED", "HALT_REASON"}, rows);
}

std::string renderRollout(const json& r) {
  const json& counts = member(r, "counts");
  std::vector<std::pair<std::string, std::string>> kv = {{"id", field(r, "id")},
                                                         {"bundle", bundleName(member(r, "bundle"))},
                                                         {"state", field(r, "state")}};
  if (!field(r, "halt_reason").empty()) kv.emplace_back("halt reason", field(r, "halt_reason"));
  if (!field(r, "rollback_of").empty()) kv.emplace_back("rollback of", field(r, "rollback_of"));
  kv.emplace_back("created", timeField(r, "created_at_ms") + (field(r, "created_by").empty() ? "" : " by " + field(r, "created_by")));
  kv.emplace_back("started", timeField(r, "started_at_ms"));
  kv.emplace_back("finished", timeField(r, "finished_at_ms"));
  kv.emplace_back("selector", selectorText(member(r, "selector")));
  kv.emplace_back("policy", policyText(member(r, "policy")));
  std::string pods = field(r, "total") + " pods";
  const std::string finished = phaseList(counts, {"succeeded", "failed", "skipped", "aborted"});
  if (!finished.empty()) pods += ": " + finished;
  if (long long n = inFlight(counts); n > 0)
    pods += (finished.empty() ? ": " : "; ") + std::to_string(n) + " in flight (" +
            phaseList(counts, {"draining", "upgrading", "validating"}) + ")";
  if (long long n = count(counts, "pending"); n > 0) pods += (finished.empty() && inFlight(counts) == 0 ? ": " : "; ") + std::to_string(n) + " pending";
  kv.emplace_back("pods", pods);
  const json& d = member(r, "pod_durations");
  if (count(d, "count") > 0 && member(d, "p50_s").is_number() && member(d, "p90_s").is_number())
    kv.emplace_back("pod time", "P50 " + seconds(d["p50_s"].get<double>()) + ", P90 " + seconds(d["p90_s"].get<double>()) +
                                    " (" + field(d, "count") + " pods finished)");
  else
    kv.emplace_back("pod time", "no pod finished yet");
  const json& eta = member(r, "eta_s");
  kv.emplace_back("ETA", eta.is_number() ? seconds(eta.get<double>())
                         : field(r, "state") == "completed" ? "done"
                                                             : "unknown until a pod finishes");
  std::string out = renderKeyValues(kv);

  std::vector<std::vector<std::string>> waves;
  for (const auto& w : member(r, "waves").is_array() ? r["waves"] : json::array())
    waves.push_back({waveName(member(w, "index")), field(w, "pods"), field(w, "finished"), field(w, "state"), waveBar(w)});
  if (!waves.empty()) out += "\nWaves:\n" + renderTable({"WAVE", "PODS", "FINISHED", "STATE", "PROGRESS"}, waves);

  std::vector<std::vector<std::string>> waiting;
  const json& w = member(r, "waiting");
  if (w.is_object())
    for (const auto& [why, n] : w.items()) waiting.push_back({why, cellText(n)});
  if (!waiting.empty()) out += "\nWhy pods wait:\n" + renderTable({"REASON", "PODS"}, waiting);

  std::vector<std::vector<std::string>> events;
  for (const auto& e : member(r, "events").is_array() ? r["events"] : json::array())
    events.push_back({timeField(e, "at_ms"), field(e, "pod"), field(e, "kind"), shorten(field(e, "message"), 100)});
  if (!events.empty()) out += "\nRecent events:\n" + renderTable({"TIME", "POD", "KIND", "MESSAGE"}, events);
  return out;
}

std::string renderRolloutPods(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : member(page, "items").is_array() ? page["items"] : json::array()) {
    const json& d = member(p, "duration_s");
    std::string runs = field(p, "run_id");
    if (!field(p, "validation_run_id").empty()) runs += (runs.empty() ? "" : " ") + field(p, "validation_run_id");
    const std::string detail = field(p, "waiting_reason").empty() ? field(p, "message") : field(p, "waiting_reason");
    rows.push_back({field(p, "pod"), field(p, "building"), waveName(member(p, "wave")), field(p, "phase"), field(p, "attempt"),
                    d.is_number() ? seconds(d.get<double>()) : "", runs, shorten(detail, 100)});
  }
  return renderTable({"POD", "BUILDING", "WAVE", "PHASE", "ATTEMPT", "DURATION", "RUNS", "WAITING OR MESSAGE"}, rows);
}

std::string rolloutProgressLine(const json& r) {
  return field(r, "id") + " " + stateWithReason(r) + ": " + progressBody(r);
}

std::string waveBar(const json& wave, int width) {
  const long long pods = count(wave, "pods"), fin = count(wave, "finished");
  const int filled = pods > 0 ? static_cast<int>(std::min<long long>(width, fin * width / pods)) : 0;
  return "[" + std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '-') +
         "] " + std::to_string(fin) + "/" + std::to_string(pods);
}

std::vector<std::string> rolloutBars(const json& r) {
  std::vector<std::string> lines;
  for (const auto& w : member(r, "waves").is_array() ? r["waves"] : json::array()) {
    std::string name = waveName(member(w, "index"));
    name.resize(std::max<std::size_t>(name.size(), 8), ' ');
    lines.push_back(name + waveBar(w) + " " + field(w, "state"));
  }
  lines.push_back(stateWithReason(r) + ": " + progressBody(r));
  return lines;
}

std::string rolloutVerdict(const json& r) {
  const std::string id = field(r, "id"), state = field(r, "state");
  const json& counts = member(r, "counts");
  std::string out = id + " " + state;
  if (state == "completed") {
    out += ": " + field(r, "total") + " pods, " + phaseList(counts, {"succeeded", "failed", "skipped", "aborted"});
    if (failedPods(r) > 0) out += " (completed with failed pods: kilnctl rollout show " + id + " --pods)";
  } else if (state == "halted") {
    out += ": " + (field(r, "halt_reason").empty() ? std::string("the failure budget is spent") : field(r, "halt_reason")) +
           " (kilnctl rollout resume " + id + " retries the failed pods)";
  } else if (state == "aborting") {
    out += ": pods in flight are stopping at a safe point and stay drained (kilnctl rollout show " + id + " --pods)";
  } else {
    out += ": " + progressBody(r);
  }
  return out + "\n";
}

long long failedPods(const json& r) { return count(member(r, "counts"), "failed"); }

}  // namespace kiln::cli
