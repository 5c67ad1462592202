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

namespace kiln::rollouts {
namespace {

using nlohmann::json;

const core::Actor kController{"system", "rollout controller"};

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

// The install workflow's parameters from the bundle: firmware-upgrade's names for its
// components (tray package, NIC image, target versions), plus generic <kind>_version /
// _artifact / _sha256; only names the workflow declares are passed.
json installParams(const Bundle& b, const std::vector<std::string>& declared) {
  std::map<std::string, std::string> p = b.workflowParams();
  for (const auto& c : b.components) {
    p["target_" + c.kind] = c.version;
    if (c.kind == "hmc_bundle" || ((c.kind == "gpu_vbios" || c.kind == "sbios") && !p.count("tray_package")))
      p["tray_package"] = c.artifact;
    if (c.kind == "nic") p["nic_image"] = c.artifact;
  }
  json out = json::object();
  for (const auto& name : declared)
    if (auto it = p.find(name); it != p.end()) out[name] = it->second;
  return out;
}

// How long each finished pod took, start to finish (succeeded or failed: skipped and aborted
// pods say nothing of the pod time): the view's P50/P90 and admission's window check.
std::vector<double> podSeconds(const std::vector<RolloutPodRow>& rows) {
  std::vector<double> out;
  for (const auto& p : rows)
    if (p.started_at && p.finished_at && (p.phase == PodPhase::kSucceeded || p.phase == PodPhase::kFailed))
      out.push_back(std::chrono::duration<double>(*p.finished_at - *p.started_at).count());
  return out;
}

constexpr std::array<PodPhase, 8> kAllPodPhases = {PodPhase::kPending,   PodPhase::kDraining, PodPhase::kUpgrading,
                                                   PodPhase::kValidating, PodPhase::kSucceeded, PodPhase::kFailed,
                                                   PodPhase::kSkipped,   PodPhase::kAborted};
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
    out += "kiln_rollout_info{" + label(r) + ",bundle=\"" + promLabelValue(r.bundle_id) + "\",state=\"" + promLabelValue(r.state) +
           "\"} 1\n";
  out += "# HELP kiln_rollout_pod_phase A rollout's pods by phase.\n# TYPE kiln_rollout_pod_phase gauge\n";
  for (const auto& r : rollouts) {
    std::map<PodPhase, int> n;
    for (const auto& p : r.pods) ++n[p.phase];
    for (auto ph : kAllPodPhases)
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

std::string schedulerReason(const std::string& rollout, const Bundle& bundle) {
  return "kiln: " + rollout + " " + bundle.workflow + " " + bundle.name + " " + bundle.version;
}

const std::vector<std::string>& rolloutStates() {
  static const std::vector<std::string> all = {"created", "running", "paused", "halted", "completed", "aborting", "aborted"};
  return all;
}

RolloutService::RolloutService(core::Store& fleet, RolloutStore& store, runs::RunService& runs, core::Clock& clock,
                               RolloutServiceOptions options)
    : fleet_(fleet), store_(store), runs_(runs), clock_(clock), options_(std::move(options)) {}

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
    auto started = store_.transition(*id, {"created"}, "running", "started by " + actor.token_id, actor);
    if (!started.ok()) return started.error();
  }
  return view(*id);
}

Result<RolloutService::Loaded> RolloutService::load(const std::string& id) {
  auto row = store_.getRollout(id);
  if (!row.ok()) return row.error();
  auto b = bundleFor(row->bundle_id);
  if (!b.ok()) return b.error();
  auto p = parsePolicy(row->policy);
  if (!p.ok()) return p.error();
  return Loaded{*row, *b, *p};
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
  auto ro = load(id);
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
            {"state", ro->row.state},
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
  auto rows = store_.listRollouts(state, page);
  if (!rows.ok()) return rows.error();
  json items = json::array();
  for (const auto& r : rows->items) {
    json j = {{"id", r.id},          {"bundle", r.bundle_id},  {"state", r.state}, {"halt_reason", r.halt_reason},
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
  if (verb == "start") r = store_.transition(id, {"created"}, "running", "started by " + actor.token_id + why, actor);
  else if (verb == "pause") r = store_.transition(id, {"running"}, "paused", "paused by " + actor.token_id + why, actor);
  else if (verb == "resume") {
    // Resuming a halted rollout retries its failed pods (clear the fault first, or skip them).
    // A retried pod whose hosts are still in repair waits at admission (PodHostFacts) instead
    // of failing again.
    // The failed pods go back to pending while the rollout is still halted (checked under its
    // lock), then it runs: the other order would let the controller see a running rollout with
    // every pod finished and complete it before the pods are retried.
    auto before = store_.getRollout(id);
    if (!before.ok()) return before.error();
    if (before->state == "halted") {
      auto rows = store_.rolloutPods(id);
      if (!rows.ok()) return rows.error();
      std::vector<PodUpdate> updates;
      for (const auto& p : *rows)
        if (p.phase == PodPhase::kFailed) {
          PodUpdate u{p.pod, PodPhase::kFailed, PodPhase::kPending};
          u.message = "retried on resume";
          u.run_id = "";
          u.validation_run_id = "";
          u.only_while = {"halted"};
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
    r = store_.transition(id, {"paused", "halted"}, "running", "resumed by " + actor.token_id + why, actor);
  } else if (verb == "abort") {
    r = store_.transition(id, {"created", "running", "paused", "halted"}, "aborting", "aborted by " + actor.token_id + why, actor);
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
    if (ro->state == "completed" || ro->state == "aborted" || ro->state == "aborting")
      return conflict("rollout " + id + " is " + ro->state + ": start a new rollout of its bundle to upgrade " + pod)
          .with("state", ro->state);
    u.only_while = {"running", "paused", "halted"};
    u.phase = PodPhase::kPending;
    u.run_id = "";
    u.validation_run_id = "";
    u.message = "retried by " + actor.token_id + why;
  } else if (verb == "skip") {
    if (it->phase != PodPhase::kPending && it->phase != PodPhase::kFailed)
      return conflict("only a pending or failed pod can be skipped; " + pod + " is " + podPhaseName(it->phase)).with("phase", podPhaseName(it->phase));
    u.only_while = {"created", "running", "paused", "halted", "aborting"};
    u.phase = PodPhase::kSkipped;
    u.message = "skipped by " + actor.token_id + why;
    u.set_finished = true;
  } else {
    return notFound("no pod verb '" + verb + "'");
  }
  if (auto st = store_.updatePods(id, {u}, {{pod, verb, verb + " by " + actor.token_id + why}}); !st.ok()) return st.error();
  (void)fleet_.audit(actor, "rollout.pod." + verb, id + "/" + pod, reason.empty() ? "{}" : json{{"reason", reason}}.dump());
  return view(id);
}

Result<json> RolloutService::rollback(const std::string& id, const core::Actor& actor, const std::string& reason) {
  auto ro = load(id);
  if (!ro.ok()) return ro.error();
  if (ro->row.state == "running" || ro->row.state == "aborting" || ro->row.state == "created")
    return conflict("pause, abort or finish rollout " + id + " before rolling it back").with("state", ro->row.state);
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
  (void)store_.updatePods(id, {},
                          {{"", "rollback",
                            "rolled back by " + (*created)["id"].get<std::string>() + " (" + actor.token_id +
                                (reason.empty() ? "" : ": " + reason) + ")" +
                                (left.empty() ? "" : "; not " + left + ": no earlier bundle known")}});
  json detail = {{"rollback", (*created)["id"]}};
  if (!reason.empty()) detail["reason"] = reason;
  (void)fleet_.audit(actor, "rollout.rollback", id, detail.dump());
  return created;
}

int RolloutService::reconcile(const Loaded& ro, RolloutPodRow& pod, const std::map<std::string, std::string>& run_states) {
  const std::string tag = "rollout " + ro.row.id + ": ";
  const bool aborting = ro.row.state == "aborting";
  auto finish = [&](PodPhase from, PodPhase to, const std::string& message) {
    PodUpdate u{pod.pod, from, to};
    u.message = message;
    u.set_finished = true;
    (void)store_.updatePods(ro.row.id, {u}, {{pod.pod, podPhaseName(to), message}});
    return 1;
  };
  // The host moves of a step go to the store as one batch (one transaction). A refused move
  // (the host is not where the step expects it, e.g. an earlier pass that a crash cut short
  // moved it already) is skipped and the others apply.
  std::vector<core::HostTransition> moves;
  auto move = [&](const std::string& host, core::HostAction a, const std::string& reason) {
    moves.push_back({host, a, std::nullopt, tag + reason});
  };
  // Applies the moves and folds the states they led to into `states` (host -> state);
  // false when the store could not be reached (nothing applied).
  auto applyMoves = [&](std::map<std::string, std::string>& states) {
    if (moves.empty()) return true;
    auto outcomes = fleet_.transitionHosts(moves, kController);
    if (!outcomes.ok()) return false;
    for (std::size_t i = 0; i < moves.size() && i < outcomes->size(); ++i)
      if ((*outcomes)[i].ok()) states[moves[i].host] = std::string(core::hostStateName(*(*outcomes)[i]));
    moves.clear();
    return true;
  };
  // The run's state from the pass's one query; runStatus (every group's state) only once it
  // finished. A run the query did not see is read directly.
  auto finishedRun = [&](const std::string& run_id) -> std::optional<runs::RunStatus> {
    auto known = run_states.find(run_id);
    if (known != run_states.end() && known->second == "running") {
      if (aborting) (void)runs_.stopRun(run_id, kController);
      return std::nullopt;
    }
    auto status = runs_.runStatus(run_id);
    if (!status.ok()) return std::nullopt;
    if (status->state == "running") {
      if (aborting) (void)runs_.stopRun(run_id, kController);
      return std::nullopt;
    }
    return *status;
  };

  switch (pod.phase) {
    case PodPhase::kDraining: {
      auto detail = fleet_.getPod(pod.pod);
      if (!detail.ok()) return 0;
      if (aborting) {
        // Say what the operator finds: a pod aborted right after admission has nothing drained.
        const auto out = std::count_if(detail->hosts.begin(), detail->hosts.end(), [](const core::HostSummary& h) {
          return h.state == "draining" || h.state == "maintenance";
        });
        return finish(PodPhase::kDraining, PodPhase::kAborted,
                      out == 0 ? std::string("aborted while draining, before any host was drained")
                               : "aborted while draining: " + std::to_string(out) + " of " +
                                     std::to_string(detail->hosts.size()) + " hosts left draining or in maintenance");
      }
      std::map<std::string, std::string> states;
      std::vector<std::string> allocated;
      // The job scheduler's gate: a drained host goes to maintenance only once no job can run
      // on it (Slurm: its node is drained and empty). Held hosts stay draining.
      const std::string why = schedulerReason(ro.row.id, ro.bundle);
      std::vector<std::string> held;
      auto drained = [&](const core::HostSummary& h) {
        if (options_.drain_gate) {
          if (auto wait = options_.drain_gate(h, why)) {
            held.push_back(*wait);
            return;
          }
        }
        move(h.id, core::HostAction::kDrained, "no job on the host");
      };
      for (const auto& h : detail->hosts) {
        states[h.id] = h.state;
        if (h.state == "available") {
          move(h.id, core::HostAction::kDrain, "drain for upgrade");
          drained(h);
        } else if (h.state == "draining") {
          drained(h);
        } else if (h.state == "allocated") {
          allocated.push_back(h.id);
        }
      }
      if (!applyMoves(states)) return 0;
      if (allocated.empty() && !held.empty()) {
        PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kDraining};
        u.waiting_reason = held.front() + (held.size() > 1 ? " (and " + std::to_string(held.size() - 1) + " more hosts)" : "");
        if (u.waiting_reason != pod.waiting_reason) (void)store_.updatePods(ro.row.id, {u}, {});
        return 0;
      }
      if (!allocated.empty()) {
        askRelease(ro.row.id, pod.pod, [&] { return allocated; }, why);
        PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kDraining};
        u.waiting_reason = "allocated: waiting for the job scheduler to release " + std::to_string(allocated.size()) + " hosts";
        (void)store_.updatePods(ro.row.id, {u}, {});
        return 0;
      }
      std::vector<std::string> ready;
      for (const auto& h : detail->hosts)  // tray order
        if (states[h.id] == "maintenance") ready.push_back(h.id);
      if (ready.empty()) return finish(PodPhase::kDraining, PodPhase::kFailed, "no host of the pod could be drained");
      auto declared = runs_.workflowParams(ro.bundle.workflow);
      if (!declared.ok()) return finish(PodPhase::kDraining, PodPhase::kFailed, declared.error().message);
      runs::StartRequest req;
      req.workflow = ro.bundle.workflow;
      req.hosts = ready;
      req.params = installParams(ro.bundle, *declared);
      req.purpose = "rollout";
      req.owner = ro.row.id + "/" + pod.pod + "/upgrade/" + std::to_string(pod.attempt);
      auto run = runs_.startRun(req, kController);
      if (!run.ok()) return finish(PodPhase::kDraining, PodPhase::kFailed, "cannot start " + req.workflow + ": " + run.error().message);
      PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kUpgrading};
      u.run_id = (*run)["id"].get<std::string>();
      u.waiting_reason = "";
      (void)store_.updatePods(ro.row.id, {u},
                              {{pod.pod, "upgrading", std::to_string(ready.size()) + " hosts drained; " + req.workflow + " " +
                                                          *u.run_id + " started"}});
      return 1;
    }
    case PodPhase::kUpgrading: {
      auto status = finishedRun(pod.run_id);
      if (!status) return 0;
      std::vector<std::string> passed, failed;
      for (const auto& [host, st] : status->hosts) {
        if (st == runs::HostStatus::kPassed) passed.push_back(host);
        // Withdrawn by the abort before its agent took the step: nothing failed, the host
        // stays drained in maintenance with the others.
        else if (!(aborting && st == runs::HostStatus::kCancelled)) failed.push_back(host);
      }
      for (const auto& h : failed) {
        auto it = status->reasons.find(h);
        move(h, core::HostAction::kValidationFail, "upgrade failed: " + (it == status->reasons.end() ? std::string("cancelled") : it->second));
      }
      if (!aborting)
        for (const auto& h : passed) move(h, core::HostAction::kMaintenanceDone, "upgrade done");
      // The pod ends here (aborted, or no host left to validate): its failed hosts go to repair
      // now, as the validation's end would have sent them.
      if (aborting || passed.empty())
        for (const auto& h : failed) move(h, core::HostAction::kRepair, "failed during the upgrade");
      std::map<std::string, std::string> states;
      if (!applyMoves(states)) return 0;
      if (aborting)
        return finish(PodPhase::kUpgrading, PodPhase::kAborted,
                      "aborted: the upgrade stopped at a safe point; hosts left in maintenance");
      if (passed.empty()) {
        std::string why = status->reasons.empty() ? "" : ": " + status->reasons.begin()->second;
        return finish(PodPhase::kUpgrading, PodPhase::kFailed, "the upgrade failed on every host" + why);
      }
      runs::StartRequest req;
      req.workflow = options_.validation_workflow;
      req.hosts = passed;
      req.purpose = "rollout";
      req.owner = ro.row.id + "/" + pod.pod + "/validate/" + std::to_string(pod.attempt);
      auto run = runs_.startRun(req, kController);
      if (!run.ok()) return finish(PodPhase::kUpgrading, PodPhase::kFailed, "cannot start validation: " + run.error().message);
      PodUpdate u{pod.pod, PodPhase::kUpgrading, PodPhase::kValidating};
      u.validation_run_id = (*run)["id"].get<std::string>();
      (void)store_.updatePods(ro.row.id, {u},
                              {{pod.pod, "validating", std::to_string(passed.size()) + " hosts upgraded, " +
                                                           std::to_string(failed.size()) + " failed; validation " +
                                                           *u.validation_run_id + " started"}});
      return 1;
    }
    case PodPhase::kValidating: {
      auto status = finishedRun(pod.validation_run_id);
      if (!status) return 0;
      auto detail = fleet_.getPod(pod.pod);
      if (!detail.ok()) return 0;
      std::map<std::string, std::string> states;
      for (const auto& h : detail->hosts) states[h.id] = h.state;
      std::set<std::string> to_repair;
      int withdrawn = 0;
      for (const auto& [host, st] : status->hosts) {
        if (st == runs::HostStatus::kPassed) {
          move(host, core::HostAction::kValidationPass, "pod validation passed");
        } else if (aborting && st == runs::HostStatus::kCancelled) {
          // The abort withdrew its check before it ran: not validated, so it stays out of
          // service (validating), and nothing says it is broken.
          ++withdrawn;
        } else {
          auto it = status->reasons.find(host);
          move(host, core::HostAction::kValidationFail,
               "pod validation failed: " + (it == status->reasons.end() ? std::string("cancelled") : it->second));
          to_repair.insert(host);
        }
      }
      // Hosts that failed the upgrade or the validation go to repair; the spares cover them
      // while 64 GPUs of the pod serve.
      for (const auto& h : detail->hosts)
        if (h.state == "failed") to_repair.insert(h.id);
      for (const auto& h : to_repair) move(h, core::HostAction::kRepair, "failed during the upgrade");
      if (!applyMoves(states)) return 0;
      int serving = 0;
      for (const auto& [_, state] : states)
        if (state == "available" || state == "allocated") ++serving;
      const auto& g = core::geometry(*core::parsePlatform(detail->pod.platform));
      const int gpus = serving * g.gpus_per_tray;
      if (withdrawn > 0)
        return finish(PodPhase::kValidating, PodPhase::kAborted,
                      "aborted: validation stopped at a safe point; " + std::to_string(serving) + " hosts back in service, " +
                          std::to_string(withdrawn) + " left in validating (not validated)" +
                          (to_repair.empty() ? "" : ", " + std::to_string(to_repair.size()) + " sent to repair"));
      if (gpus >= g.active_gpus_per_pod())
        return finish(PodPhase::kValidating, PodPhase::kSucceeded,
                      std::to_string(serving) + " hosts back in service (" + std::to_string(gpus) + " GPUs)" +
                          (to_repair.empty() ? "" : "; spares cover " + std::to_string(to_repair.size()) + " hosts sent to repair"));
      return finish(PodPhase::kValidating, PodPhase::kFailed,
                    "only " + std::to_string(gpus) + " healthy GPUs after the upgrade (a slice needs " +
                        std::to_string(g.active_gpus_per_pod()) + ")");
    }
    default:
      return 0;
  }
}

void RolloutService::askRelease(const std::string& rollout, const std::string& pod,
                                const std::function<std::vector<std::string>()>& allocated_hosts, const std::string& reason) {
  if (!options_.release_hook) return;
  const std::string key = rollout + "/" + pod;
  const auto now = clock_.now();
  {
    std::lock_guard lock(asks_->mu);
    auto it = asks_->by_pod.find(key);
    if (it != asks_->by_pod.end() && (it->second.pending || now < it->second.next)) return;
  }
  // Only when an ask is due: the controller comes here for a waiting pod on every pass.
  std::vector<std::string> hosts = allocated_hosts();
  if (hosts.empty()) return;
  {
    std::lock_guard lock(asks_->mu);
    asks_->by_pod[key] = ReleaseAsk{rollout, pod, hosts.size(), now, now + options_.hook_repeat, true, std::nullopt};
  }
  // The hook returns at once; its answer is learned by a later pass (learnReleaseAnswers).
  options_.release_hook({rollout, pod, std::move(hosts), reason}, [asks = asks_, key](bool told) {
    std::lock_guard lock(asks->mu);
    if (auto it = asks->by_pod.find(key); it != asks->by_pod.end() && it->second.pending) it->second.told = told;
  });
}

void RolloutService::learnReleaseAnswers() {
  std::vector<ReleaseAsk> answered;
  {
    std::lock_guard lock(asks_->mu);
    for (auto& [_, a] : asks_->by_pod)
      if (a.pending && a.told) {
        a.pending = false;
        a.next = a.asked_at + (*a.told ? options_.hook_repeat : options_.hook_retry);
        answered.push_back(a);
      }
  }
  for (const auto& a : answered)
    (void)store_.updatePods(a.rollout, {},
                            {{a.pod, "release",
                              *a.told ? "asked the job scheduler to release " + std::to_string(a.hosts) + " allocated hosts"
                                      : "the job scheduler could not be reached; asking again in " +
                                            std::to_string(options_.hook_retry.count()) + " s"}});
}

int RolloutService::admitPods(const Loaded& ro, const std::vector<RolloutPodRow>& rows) {
  AdmissionInput in;
  in.policy = ro.policy;
  in.paused = ro.row.state == "paused";
  in.halted = ro.row.state == "halted";
  in.now = clock_.now();
  std::set<std::string> buildings, pending;
  for (const auto& p : rows) {
    in.pods.push_back({p.pod, p.building, p.wave, p.phase, false});
    if (p.phase == PodPhase::kPending) {
      buildings.insert(p.building);
      pending.insert(p.pod);
    }
  }
  // Only the window check reads the pod time: no sort on every pass of a rollout without windows.
  if (const auto durations = ro.policy.windows.empty() ? std::vector<double>() : podSeconds(rows); !durations.empty())
    in.pod_time_p90 = std::chrono::seconds(static_cast<long>(std::ceil(percentile(durations, 90))));
  if (!pending.empty()) {
    auto states = store_.podHostStates(pending);
    if (!states.ok()) return 0;
    for (auto& p : in.pods) {
      auto it = states->find(p.id);
      if (it == states->end()) continue;
      for (const auto& [state, n] : it->second.hosts) {
        if (state == "allocated") p.allocated = true;
        else p.hosts.out[state] = n;
      }
      if (p.hosts.out.empty()) continue;
      const auto platform = core::parsePlatform(it->second.platform);
      if (!platform) continue;
      const auto& g = core::geometry(*platform);
      p.hosts.total = g.gpus_per_pod / g.gpus_per_tray;
      p.hosts.slice_gpus = g.active_gpus_per_pod();
      p.hosts.needed = (p.hosts.slice_gpus + g.gpus_per_tray - 1) / g.gpus_per_tray;
    }
    auto loads = store_.buildingLoads(buildings);
    if (!loads.ok()) return 0;
    in.buildings = *loads;
  }
  // When did the wave before the current one finish?
  int current = std::numeric_limits<int>::max();
  for (const auto& p : rows)
    if (!finished(p.phase)) current = std::min(current, p.wave);
  for (const auto& p : rows)
    if (p.wave == current - 1 && p.finished_at && (!in.previous_wave_finished || *p.finished_at > *in.previous_wave_finished))
      in.previous_wave_finished = p.finished_at;

  AdmissionResult res = admit(in);
  int changes = 0;
  for (const auto& id : res.release)
    askRelease(ro.row.id, id, [&] {
      std::vector<std::string> allocated;
      if (auto detail = fleet_.getPod(id); detail.ok())
        for (const auto& h : detail->hosts)
          if (h.state == "allocated") allocated.push_back(h.id);
      return allocated;
    }, schedulerReason(ro.row.id, ro.bundle));
  if (res.halt && ro.row.state == "running") {
    (void)store_.transition(ro.row.id, {"running"}, "halted", res.halt_reason, kController);
    return 1;  // admit nothing in the pass that halts
  }
  if (res.complete) {
    if (ro.row.state == "running") (void)store_.transition(ro.row.id, {"running"}, "completed", "every pod finished", kController);
    return 1;
  }
  if (!res.admit.empty()) {
    // The versions each admitted pod has now (kind -> version -> targets), from one query.
    std::map<std::string, json> before;
    Selector admitted;
    admitted.pods = res.admit;
    if (auto snaps = store_.podSnapshots(admitted); snaps.ok())
      for (const auto& snap : *snaps) {
        json v = json::object();
        for (const auto* m : {&snap.host_versions, &snap.switch_versions})
          for (const auto& [kind, versions] : *m)
            for (const auto& [version, n] : versions) v[kind][version] = n;
        before[snap.id] = std::move(v);
      }
    std::vector<PodUpdate> updates;
    std::vector<RolloutEvent> events;
    for (const auto& id : res.admit) {
      PodUpdate u{id, PodPhase::kPending, PodPhase::kDraining};
      u.set_started = true;
      u.bump_attempt = true;
      u.waiting_reason = "";
      u.message = "";
      if (auto it = before.find(id); it != before.end()) u.before_versions = it->second;
      updates.push_back(std::move(u));
      events.push_back({id, "admitted", "draining for the upgrade"});
    }
    if (store_.updatePods(ro.row.id, updates, events).ok()) changes += static_cast<int>(updates.size());
  }
  (void)store_.setWaiting(ro.row.id, res.waiting);
  return changes;
}

int RolloutService::tick() {
  learnReleaseAnswers();
  auto ids = store_.activeRollouts();
  if (!ids.ok()) return 0;
  int changes = 0;
  for (const auto& id : *ids) {
    auto ro = load(id);
    if (!ro.ok()) continue;
    auto rows = store_.rolloutPods(id);
    if (!rows.ok()) continue;
    // The states of every run of the pods in flight, in one query.
    std::vector<std::string> run_ids;
    for (const auto& p : *rows) {
      if (p.phase == PodPhase::kUpgrading && !p.run_id.empty()) run_ids.push_back(p.run_id);
      if (p.phase == PodPhase::kValidating && !p.validation_run_id.empty()) run_ids.push_back(p.validation_run_id);
    }
    std::map<std::string, std::string> run_states;
    if (auto st = runs_.runStates(run_ids); st.ok()) run_states = std::move(*st);
    int reconciled = 0;
    for (auto& p : *rows)
      if (inFlight(p.phase)) reconciled += reconcile(*ro, p, run_states);
    changes += reconciled;
    if (reconciled > 0) rows = store_.rolloutPods(id);  // a pod changed phase
    if (!rows.ok()) continue;
    if (ro->row.state == "aborting") {
      const bool busy = std::any_of(rows->begin(), rows->end(), [](const RolloutPodRow& p) { return inFlight(p.phase); });
      if (!busy) {
        (void)store_.transition(id, {"aborting"}, "aborted", "every pod in flight stopped at a safe point", kController);
        ++changes;
      }
      continue;
    }
    changes += admitPods(*ro, *rows);
  }
  return changes;
}

std::string RolloutService::metrics() {
  auto c = store_.counts();
  if (!c.ok()) return {};
  std::string out = "# HELP kiln_rollouts Rollouts by state.\n# TYPE kiln_rollouts gauge\n";
  for (const char* s : {"created", "running", "paused", "halted", "completed", "aborting", "aborted"})
    out += std::string("kiln_rollouts{state=\"") + s + "\"} " + std::to_string(c->first.count(s) ? c->first.at(s) : 0) + "\n";
  out += "# HELP kiln_rollout_pods Pods of active rollouts by phase.\n# TYPE kiln_rollout_pods gauge\n";
  for (auto ph : kAllPodPhases) {
    const std::string n = podPhaseName(ph);
    out += "kiln_rollout_pods{phase=\"" + n + "\"} " + std::to_string(c->second.count(n) ? c->second.at(n) : 0) + "\n";
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
