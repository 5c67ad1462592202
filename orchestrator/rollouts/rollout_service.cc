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
#include "orchestrator/rollouts/plan_document.h"
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
    const int eligible = static_cast<int>(std::count_if(r.pods.begin(), r.pods.end(), [](const MetricRollout::Pod& p) {
      return p.phase != PodPhase::kSkipped;
    }));
    const int budget = failureBudget(r.policy, eligible);
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

RolloutService::RolloutService(core::AuditLog& audit, RolloutServiceStore& store, runs::RunControl& runs,
                               core::Clock& clock, RolloutServiceOptions options)
    : audit_(audit),
      store_(store),
      runs_(runs),
      clock_(clock),
      options_(std::move(options)),
      failures_(options_.log ? *options_.log : nullLogger(), clock_) {}

Result<PutBundleResult> RolloutService::putBundle(const Bundle& bundle, const core::Actor& actor,
                                                  const std::optional<core::IfMatch>& if_match) {
  std::vector<std::string> sha256s;
  for (const auto& c : bundle.components) sha256s.push_back(c.sha256);
  if (auto trusted = checkArtifactTrust({bundle.checksums, bundle.signature}, sha256s, options_.verify_signature,
                                        "bundle " + bundle.name + "@" + bundle.version);
      !trusted.ok())
    return trusted.error();
  auto row = store_.putBundle(bundle, actor, if_match);
  if (!row.ok()) return row.error();
  return PutBundleResult{std::move(row->first), row->second};
}

bool RolloutService::workflowExists(const std::string& name) { return runs_.workflowParams(name).ok(); }

Result<std::vector<BundleRow>> RolloutService::listBundles() { return store_.listBundles(); }

Result<Bundle> RolloutService::bundleFor(const std::string& ref) {
  auto row = getBundle(ref);
  if (!row.ok()) return row.error();
  return row->bundle;
}

Result<BundleRow> RolloutService::getBundle(const std::string& ref) {
  auto row = store_.getBundle(ref);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no bundle '" + ref + "'");
  return std::move(**row);
}

Result<ComplianceReport> RolloutService::compliance(const std::string& ref, const Selector& selector) {
  auto b = bundleFor(ref);
  if (!b.ok()) return b.error();
  auto snaps = store_.podSnapshots(selector);
  if (!snaps.ok()) return snaps.error();
  ComplianceReport out;
  out.bundle = b->id;
  for (auto c : {Compliance::kCompliant, Compliance::kNeedsUpgrade, Compliance::kNeedsDowngrade, Compliance::kIncompatible})
    out.pods[c] = out.hosts[c] = 0;
  for (const auto& s : *snaps) {
    auto c = complianceFromCounts(*b, s);
    ++out.pods[c.state];
    out.hosts[Compliance::kCompliant] += c.hosts_compliant;
    out.hosts[Compliance::kNeedsUpgrade] += c.hosts_needing_upgrade;
    out.hosts[Compliance::kNeedsDowngrade] += c.hosts_needing_downgrade;
    out.hosts[Compliance::kIncompatible] += c.hosts_incompatible;
    out.items.push_back({s.building, s.platform, std::move(c)});
  }
  return out;
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

Result<CreateOutcome> RolloutService::create(const CreateRequest& req, const core::Actor& actor,
                                             const std::string& rollback_of,
                                             const std::optional<core::IdempotencyClaim>& claim) {
  auto p = plan(req.bundle, req.selector, req.policy, nullptr);
  if (!p.ok()) return p.error();
  CreateOutcome out;
  out.dry_run = req.dry_run;
  // A downgrade is never created as if it were an upgrade: one rule, here, for REST, kilnctl
  // and the console (issue 18). Rollbacks go back on purpose.
  std::string downgrade_summary;
  if (!p->downgrades.empty()) {
    const auto& first = p->downgrades.front();
    downgrade_summary = std::to_string(p->downgrades.size()) + (p->downgrades.size() == 1 ? " pod" : " pods") +
                        " would move to older versions (" + first.pod +
                        (first.reasons.empty() ? "" : ": " + first.reasons.front()) +
                        (p->downgrades.size() > 1 ? ", ..." : "") + ")";
    out.warnings.push_back(downgrade_summary);
  }
  if (req.dry_run) {
    out.bundle = req.bundle;
    out.selector = req.selector;
    out.policy = req.policy;
    out.plan = std::move(*p);
    return out;
  }
  if (!p->downgrades.empty() && rollback_of.empty() && !req.allow_downgrade) {
    Error e = invalidContent("refused: " + downgrade_summary +
                             "; this is a downgrade, not an upgrade: roll back the rollout that upgraded them, or say "
                             "allow_downgrade: true with a reason");
    e.fields.push_back({"allow_downgrade", downgrade_summary + ": set allow_downgrade: true with a reason, or roll back"});
    return e.with("downgrade_pods", std::to_string(p->downgrades.size()));
  }
  // An allowed downgrade is audited with its reason (decodeCreateRollout names it in its 422).
  if (!p->downgrades.empty() && rollback_of.empty() && req.reason.find_first_not_of(" \t\r\n") == std::string::npos)
    return Error(invalidContent("allow_downgrade needs a reason: why these pods go back to older versions (it is audited)"))
        .with("field", "reason");
  if (p->eligible == 0) return Error(conflict("nothing to roll out: no selected pod needs this bundle")).with("excluded", std::to_string(p->excluded.size()));
  auto id = store_.nextRolloutId();
  if (!id.ok()) return id.error();
  RolloutRow row;
  row.id = *id;
  row.bundle_id = req.bundle.id;
  row.selector = req.selector;
  row.policy = req.policy;
  row.plan = planDocument(*p);
  row.rollback_of = rollback_of;
  row.claim = claim;
  if (!p->downgrades.empty() && rollback_of.empty()) row.downgrade_reason = req.reason;
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
  if (req.start) {
    auto started = store_.transition(*id, {RolloutState::kCreated}, RolloutState::kRunning, "started by " + actor.token_id, actor);
    if (!started.ok()) return started.error();
  }
  auto v = view(*id);
  if (!v.ok()) return v.error();
  out.rollout = std::move(*v);
  return out;
}

Result<std::vector<RolloutPodRow>> RolloutService::pods(const std::string& id) {
  auto rows = store_.rolloutPods(id);
  if (!rows.ok()) return rows.error();
  if (rows->empty()) {
    auto ro = store_.getRollout(id);
    if (!ro.ok()) return ro.error();
  }
  return rows;
}

Result<RolloutView> RolloutService::view(const std::string& id) {
  auto ro = loadRollout(store_, store_, id);
  if (!ro.ok()) return ro.error();
  auto rows = store_.rolloutPods(id);
  if (!rows.ok()) return rows.error();
  RolloutView v;
  for (auto ph : {PodPhase::kPending, PodPhase::kDraining, PodPhase::kUpgrading, PodPhase::kValidating,
                  PodPhase::kSucceeded, PodPhase::kFailed, PodPhase::kSkipped, PodPhase::kAborted})
    v.counts[ph] = 0;
  const std::vector<double> durations = podSeconds(*rows);
  std::map<int, std::pair<int, int>> waves;  // wave -> (pods, finished)
  std::set<int> started_waves;
  std::map<int, std::optional<core::TimePoint>> last_finish;  // wave -> its last pod's finish
  int remaining = 0;
  for (const auto& p : *rows) {
    ++v.counts[p.phase];
    auto& w = waves[p.wave];
    ++w.first;
    if (finished(p.phase)) ++w.second;
    else ++remaining;
    if (p.phase != PodPhase::kPending) started_waves.insert(p.wave);
    if (p.finished_at && (!last_finish[p.wave] || *p.finished_at > *last_finish[p.wave])) last_finish[p.wave] = p.finished_at;
    if (p.phase == PodPhase::kPending && !p.waiting_reason.empty())
      ++v.waiting[p.waiting_reason.substr(0, p.waiting_reason.find(':'))];
  }
  int current = -1;
  for (const auto& [w, c] : waves) {
    const bool done = c.first == c.second;
    if (!done && current < 0) current = w;
    v.waves.push_back({w, c.first, c.second,
                       done ? RolloutView::WaveState::kDone
                            : (current == w ? RolloutView::WaveState::kCurrent : RolloutView::WaveState::kPending)});
  }
  const double p50 = percentile(durations, 50), p90 = percentile(durations, 90);
  if (!durations.empty() && remaining > 0) {
    const int later_waves = std::max(0, static_cast<int>(waves.size()) - std::max(current, 0) - 1);
    const int rounds = static_cast<int>(std::ceil(static_cast<double>(remaining) / ro->row.policy.max_concurrent_pods));
    // A round starts only inside a maintenance window that stays open for the P90 pod time, as
    // admission has it (no windows: at once).
    const core::TimePoint now = clock_.now();
    const auto need = std::chrono::duration_cast<core::Clock_::duration>(std::chrono::duration<double>(std::ceil(p90)));
    core::TimePoint t = now;
    // The current wave waiting for its soak starts when the soak ends.
    if (current > 0 && !started_waves.count(current) && last_finish[current - 1])
      t = std::max(now, *last_finish[current - 1] + ro->row.policy.soak);
    for (int r = 0; r < rounds; ++r) {
      const auto open = nextWindowFitting(ro->row.policy.windows, t, need);
      if (!open) break;
      t = *open + std::chrono::duration_cast<core::Clock_::duration>(std::chrono::duration<double>(p50));
    }
    v.eta_s = std::chrono::duration<double>(t - now).count() + static_cast<double>(later_waves * ro->row.policy.soak.count());
  }
  auto events = store_.rolloutEvents(id, 20);
  v.total = rows->size();
  if (current >= 0) v.current_wave = current;
  v.durations_count = durations.size();
  v.p50_s = p50;
  v.p90_s = p90;
  if (events.ok()) v.events = std::move(*events);
  v.row = std::move(ro->row);
  v.bundle = std::move(ro->bundle);
  return v;
}

Result<core::Page<RolloutRow>> RolloutService::list(const std::string& state, const core::PageRequest& page) {
  std::optional<RolloutState> filter;
  if (!state.empty()) {
    filter = parseRolloutState(state);
    if (!filter) return invalidArgument("state: no rollout state '" + state + "'").with("field", "state");
  }
  return store_.listRollouts(filter, page);
}

Result<std::vector<RolloutEventRow>> RolloutService::events(const std::string& id) {
  auto ro = store_.getRollout(id);
  if (!ro.ok()) return ro.error();
  // Every event: the API pages them (newest 1000 by default).
  return store_.rolloutEvents(id, std::numeric_limits<int>::max());
}

Result<RolloutView> RolloutService::verb(const std::string& id, const std::string& verb, const core::Actor& actor,
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

Result<RolloutView> RolloutService::podVerb(const std::string& id, const std::string& pod, const std::string& verb,
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
  noted(audit_.audit(actor, "rollout.pod." + verb, id + "/" + pod, reason.empty() ? "{}" : json{{"reason", reason}}.dump()),
        "rollout " + id + ": audit of " + verb + " of " + pod);
  return view(id);
}

Result<RolloutView> RolloutService::rollback(const std::string& id, const core::Actor& actor, const std::string& reason) {
  auto ro = loadRollout(store_, store_, id);
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
  CreateRequest req;
  auto previous = bundleFor(*bundles.begin());
  if (!previous.ok()) return previous.error();
  req.bundle = std::move(*previous);
  req.selector.pods = changed;
  req.policy = ro->row.policy;
  req.start = true;
  auto outcome = create(req, actor, id);
  if (!outcome.ok()) return outcome.error();
  const RolloutView& created = *outcome->rollout;
  // Record the link both ways: the new rollout's rollback_of, this one's event.
  std::string left;
  for (const auto& pod : unknown) left += (left.empty() ? "" : ", ") + pod;
  noted(store_.updatePods(id, {},
                          {{"", "rollback",
                            "rolled back by " + created.row.id + " (" + actor.token_id +
                                (reason.empty() ? "" : ": " + reason) + ")" +
                                (left.empty() ? "" : "; not " + left + ": no earlier bundle known")}}), "rollout " + id + ": the rollback event");
  json detail = {{"rollback", created.row.id}};
  if (!reason.empty()) detail["reason"] = reason;
  noted(audit_.audit(actor, "rollout.rollback", id, detail.dump()), "rollout " + id + ": audit of the rollback");
  return std::move(*outcome->rollout);
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
