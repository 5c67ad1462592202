#include "orchestrator/rollouts/rollout_service.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "common/histogram.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/rollouts/rollout_internal.h"

namespace kiln::rollouts {
namespace {

using nlohmann::json;

// Compliance from versions aggregated per pod (kind -> version -> count).
PodCompliance complianceFromCounts(const Bundle& b, const PodSnapshot& s) {
  PodCompliance out;
  out.pod = s.id;
  if (std::find(b.platforms.begin(), b.platforms.end(), s.platform) == b.platforms.end()) {
    out.state = Compliance::kIncompatible;
    out.reasons.push_back("platform " + s.platform + " is not one of the bundle's");
    out.hosts_incompatible = s.hosts;  // every host of the pod, so the host counts add up
    return out;
  }
  auto versions = [&](const std::string& kind) -> std::pair<const std::map<std::string, int>*, int> {
    const bool sw = kind == core::kSwitchComponent;
    const auto& m = sw ? s.switch_versions : s.host_versions;
    auto it = m.find(kind);
    static const std::map<std::string, int> kEmpty;
    return {it == m.end() ? &kEmpty : &it->second, sw ? s.switch_trays : s.hosts};
  };
  for (const auto& p : b.prerequisites) {
    auto [v, expected] = versions(p.kind);
    int known = 0;
    for (const auto& [ver, n] : *v) {
      known += n;
      if (compareVersions(ver, p.min_version) < 0) {
        out.state = Compliance::kIncompatible;
        out.reasons.push_back(std::to_string(n) + " targets have " + p.kind + " " + ver + ", below the prerequisite " +
                              p.min_version);
      }
    }
    if (known < expected) {
      out.state = Compliance::kIncompatible;
      out.reasons.push_back(p.kind + " version unknown on " + std::to_string(expected - known) + " targets");
    }
  }
  // Hosts that need a change: the most any one component kind needs (a lower bound, from
  // counts); those running a newer version than the bundle's would be downgraded.
  int worst_up = 0, worst_down = 0;
  bool downgrade = false, upgrade = false;
  for (const auto& c : b.components) {
    auto [v, expected] = versions(c.kind);
    ComponentCompliance cc{c.kind, c.version, {}};
    for (const auto& [ver, n] : *v) cc.current.emplace_back(ver, n);
    out.components.push_back(std::move(cc));
    auto it = v->find(c.version);
    const int at_target = it == v->end() ? 0 : it->second;
    if (at_target >= expected) continue;
    std::string from, back;
    int older = 0, newer = 0;
    for (const auto& [ver, n] : *v) {
      if (ver == c.version) continue;
      if (compareVersions(c.version, ver) < 0) {
        back += (back.empty() ? "" : ", ") + ver;
        newer += n;
      } else {
        from += (from.empty() ? "" : ", ") + ver;
        older += n;
      }
    }
    older += std::max(0, expected - at_target - older - newer);  // targets whose version is unknown: an upgrade
    if (!back.empty()) {
      out.reasons.push_back(c.kind + " " + back + " -> " + c.version + " (older)");
      out.downgrades.push_back(out.reasons.back());
    }
    if (older > 0) out.reasons.push_back(c.kind + " " + (from.empty() ? "unknown" : from) + " -> " + c.version);
    downgrade = downgrade || newer > 0;
    upgrade = upgrade || older > 0;
    if (c.kind != core::kSwitchComponent) {
      worst_up = std::max(worst_up, older);
      worst_down = std::max(worst_down, newer);
    }
  }
  if (out.state != Compliance::kIncompatible) {
    if (downgrade) out.state = Compliance::kNeedsDowngrade;
    else if (upgrade) out.state = Compliance::kNeedsUpgrade;
    out.hosts_needing_upgrade = worst_up;
    out.hosts_needing_downgrade = worst_down;
    out.hosts_compliant = s.hosts - std::min(s.hosts, std::max(worst_up, worst_down));
  } else {
    out.hosts_incompatible = s.hosts;
  }
  return out;
}

PodFacts factsOf(const Bundle& b, const PodSnapshot& s) {
  PodFacts f;
  f.id = s.id;
  f.site = s.site;
  f.building = s.building;
  f.platform = s.platform;
  f.state = s.state;
  f.labels = s.labels;
  f.allocated = s.allocated;
  f.other_rollout = s.other_rollout;
  f.compliance = complianceFromCounts(b, s);
  return f;
}

constexpr auto kFinishedRolloutMetricsFor = std::chrono::hours(1);

double unixSeconds(core::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// The per-rollout series of /metrics. A pod's time is as the rollout view counts it (podSeconds):
// started to finished, of pods that succeeded or failed.
void renderRolloutMetrics(const std::vector<MetricRollout>& rollouts, std::string& out) {
  auto label = [](const MetricRollout& r) { return "rollout=\"" + promLabelValue(r.id) + "\""; };
  out += "# HELP kiln_rollout_info Rollouts not finished, and those finished in the last hour (value 1).\n"
         "# TYPE kiln_rollout_info gauge\n";
  for (const auto& r : rollouts)
    out += "kiln_rollout_info{" + label(r) + ",bundle=\"" + promLabelValue(r.bundle_id) + "\",state=\"" + promLabelValue(rolloutStateName(r.state)) +
           "\"} 1\n";
  out += "# HELP kiln_rollout_pod_phase A rollout's pods by phase.\n# TYPE kiln_rollout_pod_phase gauge\n";
  for (const auto& r : rollouts) {
    std::map<PodPhase, int> n;
    for (const auto& p : r.pods) ++n[p.phase];
    for (auto ph : allPodPhases())
      out += "kiln_rollout_pod_phase{" + label(r) + ",phase=\"" + podPhaseName(ph) + "\"} " + std::to_string(n[ph]) + "\n";
  }
  out += "# HELP kiln_rollout_failure_budget_pods How many of a rollout's pods may fail before it halts (+Inf: no budget).\n"
         "# TYPE kiln_rollout_failure_budget_pods gauge\n";
  for (const auto& r : rollouts) {
    auto policy = parsePolicy(r.policy);
    if (!policy.ok()) continue;
    const int eligible = static_cast<int>(std::count_if(r.pods.begin(), r.pods.end(), [](const MetricRollout::Pod& p) {
      return p.phase != PodPhase::kSkipped;
    }));
    const int budget = failureBudget(*policy, eligible);
    out += "kiln_rollout_failure_budget_pods{" + label(r) + "} " +
           (budget == std::numeric_limits<int>::max() ? std::string("+Inf") : std::to_string(budget)) + "\n";
  }
  out += "# HELP kiln_rollout_last_progress_timestamp_seconds When a pod of the rollout last started or finished (Unix time).\n"
         "# TYPE kiln_rollout_last_progress_timestamp_seconds gauge\n";
  std::map<std::string, std::vector<double>> seconds;                       // rollout -> pod times
  std::map<std::pair<std::string, std::string>, Histogram> by_platform;     // (rollout, platform)
  for (const auto& r : rollouts) {
    std::optional<core::TimePoint> last = r.started_at;
    auto& all = seconds[r.id];
    for (const auto& p : r.pods) {
      for (const auto& t : {p.started_at, p.finished_at})
        if (t && (!last || *t > *last)) last = t;
      if (!p.started_at || !p.finished_at || (p.phase != PodPhase::kSucceeded && p.phase != PodPhase::kFailed)) continue;
      const double s = std::chrono::duration<double>(*p.finished_at - *p.started_at).count();
      all.push_back(s);
      by_platform.try_emplace({r.id, p.platform}, kPodBuckets).first->second.record(s);
    }
    if (last) out += "kiln_rollout_last_progress_timestamp_seconds{" + label(r) + "} " + number(unixSeconds(*last)) + "\n";
  }
  out += "# HELP kiln_rollout_pod_duration_seconds Finished pods' upgrade times (drain to validated) by rollout and platform.\n"
         "# TYPE kiln_rollout_pod_duration_seconds histogram\n";
  for (const auto& [key, h] : by_platform)
    h.render(out, "kiln_rollout_pod_duration_seconds",
             "rollout=\"" + promLabelValue(key.first) + "\",platform=\"" + promLabelValue(key.second) + "\"");
  for (const auto& [name, q] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}}) {
    out += std::string("# HELP kiln_rollout_pod_duration_") + name + "_seconds The " + name +
           " of the rollout's finished pods' times, nearest rank, as GET /rollouts/{id} says.\n";
    out += std::string("# TYPE kiln_rollout_pod_duration_") + name + "_seconds gauge\n";
    for (const auto& r : rollouts)
      if (!seconds[r.id].empty())
        out += std::string("kiln_rollout_pod_duration_") + name + "_seconds{" + label(r) + "} " + number(percentile(seconds[r.id], q)) + "\n";
  }
}

}  // namespace

const std::vector<std::string>& rolloutStates() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    for (auto st : allRolloutStates()) out.push_back(rolloutStateName(st));
    return out;
  }();
  return all;
}

RolloutService::RolloutService(core::Store& fleet, RolloutStore& store, runs::RunService& runs, core::Clock& clock,
                               RolloutServiceOptions options)
    : fleet_(fleet),
      store_(store),
      runs_(runs),
      clock_(clock),
      options_(std::move(options)),
      failures_(options_.log ? *options_.log : nullLogger(), clock_) {}

Result<json> RolloutService::putBundle(const json& doc, const core::Actor& actor, bool* created,
                                       const std::optional<core::IfMatch>& if_match) {
  // The workflow is checked with the rest, so one 422 names every bad field.
  std::string workflow = Bundle{}.workflow;
  if (doc.is_object() && doc.contains("workflow") && doc["workflow"].is_string()) workflow = doc["workflow"].get<std::string>();
  const bool no_workflow = !workflow.empty() && !runs_.workflowParams(workflow).ok();
  const std::string no_workflow_message = "bundle workflow '" + workflow + "' does not exist";
  auto b = parseBundle(doc);
  if (!b.ok()) {
    Error e = b.error();
    if (no_workflow && !e.fields.empty()) e.fields.push_back({"workflow", no_workflow_message});
    return e;
  }
  if (no_workflow) return Error(invalidContent(no_workflow_message)).with("field", "workflow");
  auto row = store_.putBundle(*b, actor, if_match);
  if (!row.ok()) return row.error();
  using Outcome = RolloutStore::PutOutcome;
  *created = row->second == Outcome::kCreated;
  json j = toJson(row->first.bundle);
  j["used"] = row->first.used;
  j["etag"] = bundleEtag(row->first.bundle);
  // What the call did, as a script re-publishing bundles needs to know (201 says created).
  j["outcome"] = row->second == Outcome::kCreated ? "created" : row->second == Outcome::kUpdated ? "updated" : "unchanged";
  return j;
}

Result<json> RolloutService::listBundles() {
  auto rows = store_.listBundles();
  if (!rows.ok()) return rows.error();
  json items = json::array();
  for (const auto& r : *rows) {
    json j = toJson(r.bundle);
    j["used"] = r.used;
    core::putTime(j, "created_at", r.created_at);
    j["created_by"] = r.created_by;
    items.push_back(j);
  }
  return json{{"items", items}, {"next_cursor", nullptr}};
}

Result<Bundle> RolloutService::bundleFor(const std::string& ref) {
  auto row = store_.getBundle(ref);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no bundle '" + ref + "'");
  return (*row)->bundle;
}

Result<json> RolloutService::getBundle(const std::string& ref) {
  auto row = store_.getBundle(ref);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no bundle '" + ref + "'");
  json j = toJson((*row)->bundle);
  j["used"] = (*row)->used;
  j["etag"] = bundleEtag((*row)->bundle);
  core::putTime(j, "created_at", (*row)->created_at);
  return j;
}

Result<json> RolloutService::compliance(const std::string& ref, const Selector& selector) {
  auto b = bundleFor(ref);
  if (!b.ok()) return b.error();
  auto snaps = store_.podSnapshots(selector);
  if (!snaps.ok()) return snaps.error();
  json pods = json::array();
  std::map<std::string, int> counts = {{"compliant", 0}, {"needs_upgrade", 0}, {"needs_downgrade", 0}, {"incompatible", 0}};
  int hosts_compliant = 0, hosts_upgrade = 0, hosts_downgrade = 0, hosts_incompatible = 0;
  for (const auto& s : *snaps) {
    auto c = complianceFromCounts(*b, s);
    ++counts[complianceName(c.state)];
    hosts_compliant += c.hosts_compliant;
    hosts_upgrade += c.hosts_needing_upgrade;
    hosts_downgrade += c.hosts_needing_downgrade;
    hosts_incompatible += c.hosts_incompatible;
    // Per component kind: each version the pod runs, and whether the bundle is newer, the same or older.
    json components = json::array();
    for (const auto& cc : c.components) {
      json current = json::array();
      for (const auto& [ver, n] : cc.current)
        current.push_back({{"version", ver}, {"targets", n}, {"bundle_is", bundleIs(cc.version, ver)}});
      components.push_back({{"kind", cc.kind}, {"version", cc.version}, {"current", current}});
    }
    pods.push_back({{"pod", s.id}, {"building", s.building}, {"platform", s.platform}, {"state", complianceName(c.state)},
                    {"reasons", c.reasons}, {"hosts_compliant", c.hosts_compliant},
                    {"hosts_needing_upgrade", c.hosts_needing_upgrade},
                    {"hosts_needing_downgrade", c.hosts_needing_downgrade}, {"hosts_incompatible", c.hosts_incompatible},
                    {"components", components}});
  }
  return json{{"bundle", b->id},
              {"counts", counts},
              {"host_counts", {{"compliant", hosts_compliant}, {"needs_upgrade", hosts_upgrade},
                               {"needs_downgrade", hosts_downgrade}, {"incompatible", hosts_incompatible}}},
              {"pods", pods}};
}

Result<Plan> RolloutService::plan(const Bundle& b, const Selector& s, const Policy& p, std::vector<PodFacts>* facts) {
  auto snaps = store_.podSnapshots(s);
  if (!snaps.ok()) return snaps.error();
  std::vector<PodFacts> fs;
  fs.reserve(snaps->size());
  for (const auto& snap : *snaps) {
    fs.push_back(factsOf(b, snap));
    if (!selectorMatches(s, fs.back())) fs.pop_back();
  }
  Plan plan = planRollout(fs, p);
  if (facts) *facts = std::move(fs);
  return plan;
}

Result<json> RolloutService::create(const json& body, const core::Actor& actor, bool* dry_run,
                                    const std::string& rollback_of, const std::optional<core::IdempotencyClaim>& claim) {
  if (!body.is_object()) return invalidContent("expected {bundle, selector, policy, dry_run, start, allow_downgrade, reason}");
  // Every bad field of the request in one 422, and nothing written before all are checked.
  Error bad = invalidContent("invalid rollout");
  auto fail = [&](const std::string& path, const std::string& message) { bad.fields.push_back({path, message}); };
  auto take = [&](const Error& e, const char* part) {
    if (e.fields.empty()) fail(part, e.message);
    for (const auto& f : e.fields) bad.fields.push_back(f);
  };
  for (const auto& [k, _] : body.items())
    if (k != "bundle" && k != "selector" && k != "policy" && k != "dry_run" && k != "start" && k != "allow_downgrade" &&
        k != "reason")
      fail(k, "unknown field");
  for (const char* flag : {"dry_run", "start", "allow_downgrade"})
    if (body.contains(flag) && !body[flag].is_boolean()) fail(flag, "expected true or false");
  if (body.contains("reason") && !body["reason"].is_string()) fail("reason", "expected text");
  const bool allow_downgrade = body.value("allow_downgrade", false) == true;
  const std::string reason = body.contains("reason") && body["reason"].is_string() ? body["reason"].get<std::string>() : "";
  if (allow_downgrade && reason.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("reason", "allow_downgrade needs a reason: why these pods go back to older versions (it is audited)");
  std::optional<Bundle> b;
  if (!body.contains("bundle") || !body["bundle"].is_string()) {
    fail("bundle", "required: a bundle id like b-3 or name@version");
  } else {
    auto found = bundleFor(body["bundle"].get<std::string>());
    if (found.ok()) b = std::move(*found);
    else if (found.error().code == ErrorCode::kNotFound) fail("bundle", found.error().message);
    else return found.error();
  }
  auto selector = parseSelector(body.contains("selector") ? body["selector"] : json());
  if (!selector.ok()) take(selector.error(), "selector");
  auto policy = parsePolicy(body.contains("policy") ? body["policy"] : json());
  if (!policy.ok()) take(policy.error(), "policy");
  if (!bad.fields.empty()) {
    bad.message = "invalid rollout: " + bad.fields[0].path + ": " + bad.fields[0].message;
    // The one-field form as well (details.field), as the console and scripts read it.
    if (bad.fields.size() == 1) bad.with("field", bad.fields[0].path);
    return bad;
  }
  *dry_run = body.value("dry_run", false);
  const bool start = body.value("start", false);
  auto p = plan(*b, *selector, *policy, nullptr);
  if (!p.ok()) return p.error();
  json out = {{"bundle", toJson(*b)}, {"selector", toJson(*selector)}, {"policy", toJson(*policy)}, {"plan", toJson(*p)}};
  // A downgrade is never created as if it were an upgrade: one rule, here, for REST, kilnctl
  // and the console (issue 18). Rollbacks go back on purpose.
  std::string downgrade_summary;
  if (!p->downgrades.empty()) {
    const auto& first = p->downgrades.front();
    downgrade_summary = std::to_string(p->downgrades.size()) + (p->downgrades.size() == 1 ? " pod" : " pods") +
                        " would move to older versions (" + first.pod +
                        (first.reasons.empty() ? "" : ": " + first.reasons.front()) +
                        (p->downgrades.size() > 1 ? ", ..." : "") + ")";
    out["warnings"] = json::array({downgrade_summary});
  }
  if (*dry_run) {
    out["dry_run"] = true;
    return out;
  }
  if (!p->downgrades.empty() && rollback_of.empty() && !allow_downgrade) {
    Error e = invalidContent("refused: " + downgrade_summary +
                             "; this is a downgrade, not an upgrade: roll back the rollout that upgraded them, or say "
                             "allow_downgrade: true with a reason");
    e.fields.push_back({"allow_downgrade", downgrade_summary + ": set allow_downgrade: true with a reason, or roll back"});
    return e.with("downgrade_pods", std::to_string(p->downgrades.size()));
  }
  if (p->eligible == 0) return Error(conflict("nothing to roll out: no selected pod needs this bundle")).with("excluded", std::to_string(p->excluded.size()));
  auto id = store_.nextRolloutId();
  if (!id.ok()) return id.error();
  RolloutRow row;
  row.id = *id;
  row.bundle_id = b->id;
  row.selector = toJson(*selector);
  row.policy = toJson(*policy);
  row.plan = toJson(*p);
  row.rollback_of = rollback_of;
  row.claim = claim;
  if (!p->downgrades.empty() && rollback_of.empty()) row.downgrade_reason = reason;
  std::vector<RolloutPodRow> pods;
  int position = 0;
  for (std::size_t w = 0; w < p->waves.size(); ++w)
    for (const auto& pod : p->waves[w]) {
      RolloutPodRow r;
      r.pod = pod;
      r.wave = static_cast<int>(w);
      r.position = position++;
      pods.push_back(r);
    }
  auto created = store_.createRollout(row, pods, actor);
  if (!created.ok()) return created.error();
  if (start) {
    auto started = store_.transition(*id, {RolloutState::kCreated}, RolloutState::kRunning, "started by " + actor.token_id, actor);
    if (!started.ok()) return started.error();
  }
  return view(*id);
}

Result<json> RolloutService::pods(const std::string& id) {
  auto rows = store_.rolloutPods(id);
  if (!rows.ok()) return rows.error();
  if (rows->empty()) {
    auto ro = store_.getRollout(id);
    if (!ro.ok()) return ro.error();
  }
  json items = json::array();
  for (const auto& p : *rows) {
    json j = {{"pod", p.pod},         {"building", p.building},     {"wave", p.wave},
              {"phase", podPhaseName(p.phase)}, {"waiting_reason", p.waiting_reason}, {"message", p.message},
              {"position", p.position},
              {"attempt", p.attempt}, {"run_id", p.run_id},         {"validation_run_id", p.validation_run_id}};
    core::putTime(j, "started_at", p.started_at);
    core::putTime(j, "finished_at", p.finished_at);
    j["duration_s"] = p.started_at && p.finished_at ? json(std::chrono::duration<double>(*p.finished_at - *p.started_at).count())
                                                     : json();
    items.push_back(j);
  }
  return json{{"items", items}, {"next_cursor", nullptr}};
}

Result<json> RolloutService::view(const std::string& id) {
  auto ro = loadRollout(store_, id);
  if (!ro.ok()) return ro.error();
  auto rows = store_.rolloutPods(id);
  if (!rows.ok()) return rows.error();
  std::map<std::string, int> counts;
  for (auto ph : {PodPhase::kPending, PodPhase::kDraining, PodPhase::kUpgrading, PodPhase::kValidating,
                  PodPhase::kSucceeded, PodPhase::kFailed, PodPhase::kSkipped, PodPhase::kAborted})
    counts[podPhaseName(ph)] = 0;
  const std::vector<double> durations = podSeconds(*rows);
  std::map<int, std::pair<int, int>> waves;  // wave -> (pods, finished)
  std::map<std::string, int> waiting;
  std::set<int> started_waves;
  std::map<int, std::optional<core::TimePoint>> last_finish;  // wave -> its last pod's finish
  int remaining = 0;
  for (const auto& p : *rows) {
    ++counts[podPhaseName(p.phase)];
    auto& w = waves[p.wave];
    ++w.first;
    if (finished(p.phase)) ++w.second;
    else ++remaining;
    if (p.phase != PodPhase::kPending) started_waves.insert(p.wave);
    if (p.finished_at && (!last_finish[p.wave] || *p.finished_at > *last_finish[p.wave])) last_finish[p.wave] = p.finished_at;
    if (p.phase == PodPhase::kPending && !p.waiting_reason.empty())
      ++waiting[p.waiting_reason.substr(0, p.waiting_reason.find(':'))];
  }
  json wave_list = json::array();
  int current = -1;
  for (const auto& [w, c] : waves) {
    const bool done = c.first == c.second;
    if (!done && current < 0) current = w;
    wave_list.push_back({{"index", w}, {"name", w == 0 ? "canary" : "wave " + std::to_string(w)}, {"pods", c.first},
                         {"finished", c.second}, {"state", done ? "done" : (current == w ? "current" : "pending")}});
  }
  const double p50 = percentile(durations, 50), p90 = percentile(durations, 90);
  json eta = nullptr;
  if (!durations.empty() && remaining > 0) {
    const int later_waves = std::max(0, static_cast<int>(waves.size()) - std::max(current, 0) - 1);
    const int rounds = static_cast<int>(std::ceil(static_cast<double>(remaining) / ro->policy.max_concurrent_pods));
    // A round starts only inside a maintenance window that stays open for the P90 pod time, as
    // admission has it (no windows: at once).
    const core::TimePoint now = clock_.now();
    const auto need = std::chrono::duration_cast<core::Clock_::duration>(std::chrono::duration<double>(std::ceil(p90)));
    core::TimePoint t = now;
    // The current wave waiting for its soak starts when the soak ends.
    if (current > 0 && !started_waves.count(current) && last_finish[current - 1])
      t = std::max(now, *last_finish[current - 1] + ro->policy.soak);
    for (int r = 0; r < rounds; ++r) {
      const auto open = nextWindowFitting(ro->policy.windows, t, need);
      if (!open) break;
      t = *open + std::chrono::duration_cast<core::Clock_::duration>(std::chrono::duration<double>(p50));
    }
    eta = std::chrono::duration<double>(t - now).count() + static_cast<double>(later_waves * ro->policy.soak.count());
  }
  auto events = store_.rolloutEvents(id, 20);
  json j = {{"id", ro->row.id},
            {"bundle", {{"id", ro->bundle.id}, {"name", ro->bundle.name}, {"version", ro->bundle.version}}},
            {"state", rolloutStateName(ro->row.state)},
            {"halt_reason", ro->row.halt_reason},
            {"rollback_of", ro->row.rollback_of.empty() ? json() : json(ro->row.rollback_of)},
            {"selector", ro->row.selector},
            {"policy", ro->row.policy},
            {"plan", ro->row.plan},
            {"created_by", ro->row.created_by},
            {"counts", counts},
            {"total", rows->size()},
            {"waves", wave_list},
            {"current_wave", current < 0 ? json() : json(current)},
            {"waiting", waiting},
            {"pod_durations", {{"count", durations.size()}, {"p50_s", p50}, {"p90_s", p90}}},
            {"eta_s", eta},
            {"events", events.ok() ? *events : json::array()}};
  core::putTime(j, "created_at", ro->row.created_at);
  core::putTime(j, "started_at", ro->row.started_at);
  core::putTime(j, "finished_at", ro->row.finished_at);
  return j;
}

Result<json> RolloutService::list(const std::string& state, const core::PageRequest& page) {
  std::optional<RolloutState> filter;
  if (!state.empty()) {
    filter = parseRolloutState(state);
    if (!filter) return invalidArgument("state: no rollout state '" + state + "'").with("field", "state");
  }
  auto rows = store_.listRollouts(filter, page);
  if (!rows.ok()) return rows.error();
  json items = json::array();
  for (const auto& r : rows->items) {
    json j = {{"id", r.id},          {"bundle", r.bundle_id},  {"state", rolloutStateName(r.state)}, {"halt_reason", r.halt_reason},
              {"created_by", r.created_by}, {"pods", r.plan.value("eligible", 0)}};
    core::putTime(j, "created_at", r.created_at);
    core::putTime(j, "started_at", r.started_at);
    core::putTime(j, "finished_at", r.finished_at);
    items.push_back(std::move(j));
  }
  return json{{"items", items}, {"next_cursor", rows->next_cursor ? json(*rows->next_cursor) : json()}};
}

Result<json> RolloutService::events(const std::string& id) {
  auto ro = store_.getRollout(id);
  if (!ro.ok()) return ro.error();
  // Every event: the API pages them (newest 1000 by default).
  auto e = store_.rolloutEvents(id, std::numeric_limits<int>::max());
  if (!e.ok()) return e.error();
  return json{{"items", *e}, {"next_cursor", nullptr}};
}

Result<json> RolloutService::verb(const std::string& id, const std::string& verb, const core::Actor& actor,
                                  const std::string& reason) {
  const std::string why = reason.empty() ? "" : ": " + reason;
  Result<RolloutRow> r = notFound("");
  if (verb == "start") r = store_.transition(id, {RolloutState::kCreated}, RolloutState::kRunning, "started by " + actor.token_id + why, actor);
  else if (verb == "pause") r = store_.transition(id, {RolloutState::kRunning}, RolloutState::kPaused, "paused by " + actor.token_id + why, actor);
  else if (verb == "resume") {
    // Resuming a halted rollout retries its failed pods (clear the fault first, or skip them).
    // A retried pod whose hosts are still in repair waits at admission (PodHostFacts) instead
    // of failing again.
    // The failed pods go back to pending while the rollout is still halted (checked under its
    // lock), then it runs: the other order would let the controller see a running rollout with
    // every pod finished and complete it before the pods are retried.
    auto before = store_.getRollout(id);
    if (!before.ok()) return before.error();
    if (before->state == RolloutState::kHalted) {
      auto rows = store_.rolloutPods(id);
      if (!rows.ok()) return rows.error();
      std::vector<PodUpdate> updates;
      for (const auto& p : *rows)
        if (p.phase == PodPhase::kFailed) {
          PodUpdate u{p.pod, PodPhase::kFailed, PodPhase::kPending};
          u.message = "retried on resume";
          u.run_id = "";
          u.validation_run_id = "";
          u.only_while = {RolloutState::kHalted};
          updates.push_back(u);
        }
      // Halted by hand-skipped failures (or none left): nothing to retry, nothing to say.
      if (!updates.empty())
        if (auto st = store_.updatePods(id, updates,
                                        {{"", "retry", std::to_string(updates.size()) +
                                                           (updates.size() == 1 ? " failed pod" : " failed pods") +
                                                           " retried on resume"}});
            !st.ok())
          return st.error();
    }
    r = store_.transition(id, {RolloutState::kPaused, RolloutState::kHalted}, RolloutState::kRunning, "resumed by " + actor.token_id + why, actor);
  } else if (verb == "abort") {
    r = store_.transition(id, {RolloutState::kCreated, RolloutState::kRunning, RolloutState::kPaused, RolloutState::kHalted}, RolloutState::kAborting, "aborted by " + actor.token_id + why, actor);
  } else {
    return notFound("no verb '" + verb + "'");
  }
  if (!r.ok()) return r.error();
  return view(id);
}

Result<json> RolloutService::podVerb(const std::string& id, const std::string& pod, const std::string& verb,
                                     const core::Actor& actor, const std::string& reason) {
  const std::string why = reason.empty() ? "" : ": " + reason;
  auto rows = store_.rolloutPods(id);
  if (!rows.ok()) return rows.error();
  auto it = std::find_if(rows->begin(), rows->end(), [&](const RolloutPodRow& r) { return r.pod == pod; });
  if (it == rows->end()) return notFound("pod " + pod + " is not in rollout " + id);
  PodUpdate u{pod, it->phase, it->phase};
  if (verb == "retry") {
    if (it->phase != PodPhase::kFailed && it->phase != PodPhase::kAborted)
      return conflict("only a failed or aborted pod can be retried; " + pod + " is " + podPhaseName(it->phase)).with("phase", podPhaseName(it->phase));
    // A finished (or finishing) rollout is not reconciled any more: its pod would stay pending
    // for ever. Checked here for the message, and again by the store under the rollout's lock,
    // where a retry racing the controller's completion is refused.
    auto ro = store_.getRollout(id);
    if (!ro.ok()) return ro.error();
    if (ro->state == RolloutState::kCompleted || ro->state == RolloutState::kAborted || ro->state == RolloutState::kAborting)
      return conflict("rollout " + id + " is " + rolloutStateName(ro->state) + ": start a new rollout of its bundle to upgrade " + pod)
          .with("state", rolloutStateName(ro->state));
    u.only_while = {RolloutState::kRunning, RolloutState::kPaused, RolloutState::kHalted};
    u.phase = PodPhase::kPending;
    u.run_id = "";
    u.validation_run_id = "";
    u.message = "retried by " + actor.token_id + why;
  } else if (verb == "skip") {
    if (it->phase != PodPhase::kPending && it->phase != PodPhase::kFailed)
      return conflict("only a pending or failed pod can be skipped; " + pod + " is " + podPhaseName(it->phase)).with("phase", podPhaseName(it->phase));
    u.only_while = {RolloutState::kCreated, RolloutState::kRunning, RolloutState::kPaused, RolloutState::kHalted, RolloutState::kAborting};
    u.phase = PodPhase::kSkipped;
    u.message = "skipped by " + actor.token_id + why;
    u.set_finished = true;
  } else {
    return notFound("no pod verb '" + verb + "'");
  }
  if (auto st = store_.updatePods(id, {u}, {{pod, verb, verb + " by " + actor.token_id + why}}); !st.ok()) return st.error();
  noted(fleet_.audit(actor, "rollout.pod." + verb, id + "/" + pod, reason.empty() ? "{}" : json{{"reason", reason}}.dump()),
        "rollout " + id + ": audit of " + verb + " of " + pod);
  return view(id);
}

Result<json> RolloutService::rollback(const std::string& id, const core::Actor& actor, const std::string& reason) {
  auto ro = loadRollout(store_, id);
  if (!ro.ok()) return ro.error();
  if (ro->row.state == RolloutState::kRunning || ro->row.state == RolloutState::kAborting || ro->row.state == RolloutState::kCreated)
    return conflict("pause, abort or finish rollout " + id + " before rolling it back").with("state", rolloutStateName(ro->row.state));
  auto rows = store_.rolloutPods(id);
  if (!rows.ok()) return rows.error();
  // Changed: the pods that succeeded, and the failed or aborted ones whose upgrade workflow
  // started (some of their hosts may hold the new firmware). The rollback's plan leaves out,
  // as compliant, those of the latter whose hosts all still run the previous bundle.
  std::vector<std::string> changed, touched;
  for (const auto& p : *rows) {
    if (p.phase == PodPhase::kSucceeded) changed.push_back(p.pod);
    else if ((p.phase == PodPhase::kFailed || p.phase == PodPhase::kAborted) && !p.run_id.empty()) touched.push_back(p.pod);
  }
  if (changed.empty() && touched.empty()) return conflict("rollout " + id + " changed no pod: nothing to roll back");
  std::vector<std::string> asked = changed;
  asked.insert(asked.end(), touched.begin(), touched.end());
  // A later rollout that changed these pods since: rolling this one back would silently undo
  // it too (issue 18). Roll back the newest first.
  auto later = store_.laterChanges(id, asked);
  if (!later.ok()) return later.error();
  if (!later->empty()) {
    const auto& [pod, newer] = *later->begin();
    return conflict("pod " + pod + " was changed again by rollout " + newer + " after " + id + " (" +
                    std::to_string(later->size()) + (later->size() == 1 ? " pod" : " pods") + " in all): roll back " +
                    newer + " first; rolling back " + id + " now would undo it as well")
        .with("pod", pod)
        .with("rollout", newer);
  }
  auto prev = store_.previousBundles(id, asked);
  if (!prev.ok()) return prev.error();
  std::set<std::string> bundles;
  for (const auto& pod : changed) {
    auto it = prev->find(pod);
    if (it == prev->end())
      return conflict("no earlier bundle is known for pod " + pod + " (it was never upgraded by a Kiln rollout before " + id + ")")
          .with("pod", pod);
    bundles.insert(it->second);
  }
  // A partly upgraded pod with no known earlier bundle cannot be rolled back; it does not keep
  // the others from it (the rollback's event names it).
  std::vector<std::string> unknown;
  for (const auto& pod : touched) {
    auto it = prev->find(pod);
    if (it == prev->end()) {
      unknown.push_back(pod);
      continue;
    }
    bundles.insert(it->second);
    changed.push_back(pod);
  }
  if (changed.empty())
    return conflict("no earlier bundle is known for pod " + unknown.front() + " (it was never upgraded by a Kiln rollout before " + id + ")")
        .with("pod", unknown.front());
  if (bundles.size() != 1)
    return conflict("the changed pods came from " + std::to_string(bundles.size()) + " different bundles: roll them back one rollout per bundle");
  json body = {{"bundle", *bundles.begin()}, {"selector", {{"pods", changed}}}, {"policy", ro->row.policy}, {"start", true}};
  bool dry = false;
  auto created = create(body, actor, &dry, id);
  if (!created.ok()) return created.error();
  // Record the link both ways: the new rollout's rollback_of, this one's event.
  std::string left;
  for (const auto& pod : unknown) left += (left.empty() ? "" : ", ") + pod;
  noted(store_.updatePods(id, {},
                          {{"", "rollback",
                            "rolled back by " + (*created)["id"].get<std::string>() + " (" + actor.token_id +
                                (reason.empty() ? "" : ": " + reason) + ")" +
                                (left.empty() ? "" : "; not " + left + ": no earlier bundle known")}}), "rollout " + id + ": the rollback event");
  json detail = {{"rollback", (*created)["id"]}};
  if (!reason.empty()) detail["reason"] = reason;
  noted(fleet_.audit(actor, "rollout.rollback", id, detail.dump()), "rollout " + id + ": audit of the rollback");
  return created;
}

std::string RolloutService::metrics() {
  auto c = store_.counts();
  if (!c.ok()) return {};
  std::string out = "# HELP kiln_rollouts Rollouts by state.\n# TYPE kiln_rollouts gauge\n";
  for (auto st : allRolloutStates())
    out += std::string("kiln_rollouts{state=\"") + rolloutStateName(st) + "\"} " +
           std::to_string(c->first.count(st) ? c->first.at(st) : 0) + "\n";
  out += "# HELP kiln_rollout_pods Pods of active rollouts by phase.\n# TYPE kiln_rollout_pods gauge\n";
  for (auto ph : allPodPhases()) {
    const std::string n = podPhaseName(ph);
    out += "kiln_rollout_pods{phase=\"" + n + "\"} " + std::to_string(c->second.count(ph) ? c->second.at(ph) : 0) + "\n";
  }
  // Per rollout: those not finished, and finished ones for an hour, so that a scrape after the
  // last pod still sees the final counts and times.
  auto rollouts = store_.metricRollouts(clock_.now() - kFinishedRolloutMetricsFor);
  // A failed read leaves the per-rollout series out of this scrape, and says why in a comment
  // line (the exposition format's own), so that a missing series can be explained.
  if (rollouts.ok()) renderRolloutMetrics(*rollouts, out);
  else out += "# kiln: per-rollout series unavailable: " + rollouts.error().message + "\n";
  return out;
}

}  // namespace kiln::rollouts
