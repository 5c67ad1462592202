#include "orchestrator/api/rollout_views.h"

#include <chrono>

#include "orchestrator/api/rollout_documents.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/rollouts/plan_document.h"

namespace kiln::api {
namespace {

using nlohmann::json;
using rollouts::Compliance;

const char* outcomeName(rollouts::RolloutStore::PutOutcome o) {
  using Outcome = rollouts::RolloutStore::PutOutcome;
  return o == Outcome::kCreated ? "created" : o == Outcome::kUpdated ? "updated" : "unchanged";
}

const char* waveStateName(rollouts::RolloutView::WaveState s) {
  using S = rollouts::RolloutView::WaveState;
  return s == S::kDone ? "done" : s == S::kCurrent ? "current" : "pending";
}

// {id, at, pod, kind, message}; pod "" for the rollout's own events.
json eventsJson(const std::vector<rollouts::RolloutEventRow>& events) {
  json items = json::array();
  for (const auto& e : events) {
    json j = {{"id", e.id}, {"pod", e.event.pod}, {"kind", e.event.kind}, {"message", e.event.message}};
    core::putTime(j, "at", e.at);
    items.push_back(std::move(j));
  }
  return items;
}

json byCompliance(const std::map<Compliance, int>& m) {
  json out = json::object();
  for (const auto& [c, n] : m) out[rollouts::complianceName(c)] = n;
  return out;
}

}  // namespace

json toJson(const rollouts::PutBundleResult& r) {
  json j = rollouts::toJson(r.row.bundle);
  j["used"] = r.row.used;
  j["etag"] = rollouts::bundleEtag(r.row.bundle);
  // What the call did, as a script re-publishing bundles needs to know (201 says created).
  j["outcome"] = outcomeName(r.outcome);
  return j;
}

json bundleJson(const rollouts::BundleRow& row) {
  json j = rollouts::toJson(row.bundle);
  j["used"] = row.used;
  j["etag"] = rollouts::bundleEtag(row.bundle);
  core::putTime(j, "created_at", row.created_at);
  return j;
}

json bundleListJson(const std::vector<rollouts::BundleRow>& rows) {
  json items = json::array();
  for (const auto& r : rows) {
    json j = rollouts::toJson(r.bundle);
    j["used"] = r.used;
    core::putTime(j, "created_at", r.created_at);
    j["created_by"] = r.created_by;
    items.push_back(std::move(j));
  }
  return json{{"items", std::move(items)}, {"next_cursor", nullptr}};
}

json toJson(const rollouts::ComplianceReport& r) {
  json pods = json::array();
  for (const auto& item : r.items) {
    const auto& c = item.compliance;
    // Per component kind: each version the pod runs, and whether the bundle is newer, the same or older.
    json components = json::array();
    for (const auto& cc : c.components) {
      json current = json::array();
      for (const auto& [ver, n] : cc.current)
        current.push_back({{"version", ver}, {"targets", n}, {"bundle_is", rollouts::bundleIs(cc.version, ver)}});
      components.push_back({{"kind", cc.kind}, {"version", cc.version}, {"current", current}});
    }
    pods.push_back({{"pod", c.pod}, {"building", item.building}, {"platform", item.platform},
                    {"state", rollouts::complianceName(c.state)}, {"reasons", c.reasons},
                    {"hosts_compliant", c.hosts_compliant}, {"hosts_needing_upgrade", c.hosts_needing_upgrade},
                    {"hosts_needing_downgrade", c.hosts_needing_downgrade}, {"hosts_incompatible", c.hosts_incompatible},
                    {"components", components}});
  }
  return json{{"bundle", r.bundle}, {"counts", byCompliance(r.pods)}, {"host_counts", byCompliance(r.hosts)}, {"pods", pods}};
}

json toJson(const rollouts::RolloutView& v) {
  json counts = json::object();
  for (const auto& [ph, n] : v.counts) counts[rollouts::podPhaseName(ph)] = n;
  json waves = json::array();
  for (const auto& w : v.waves)
    waves.push_back({{"index", w.index}, {"name", w.index == 0 ? "canary" : "wave " + std::to_string(w.index)},
                     {"pods", w.pods}, {"finished", w.finished}, {"state", waveStateName(w.state)}});
  const auto& row = v.row;
  json j = {{"id", row.id},
            {"bundle", {{"id", v.bundle.id}, {"name", v.bundle.name}, {"version", v.bundle.version}}},
            {"state", rollouts::rolloutStateName(row.state)},
            {"halt_reason", row.halt_reason},
            {"rollback_of", row.rollback_of.empty() ? json() : json(row.rollback_of)},
            {"selector", toJson(row.selector)},
            {"policy", toJson(row.policy)},
            {"plan", row.plan},
            {"created_by", row.created_by},
            {"counts", counts},
            {"total", v.total},
            {"waves", waves},
            {"current_wave", v.current_wave ? json(*v.current_wave) : json()},
            {"waiting", v.waiting},
            {"pod_durations", {{"count", v.durations_count}, {"p50_s", v.p50_s}, {"p90_s", v.p90_s}}},
            {"eta_s", v.eta_s ? json(*v.eta_s) : json()},
            {"events", eventsJson(v.events)}};
  core::putTime(j, "created_at", row.created_at);
  core::putTime(j, "started_at", row.started_at);
  core::putTime(j, "finished_at", row.finished_at);
  return j;
}

json toJson(const rollouts::CreateOutcome& o) {
  if (o.rollout) return toJson(*o.rollout);
  json out = {{"bundle", rollouts::toJson(o.bundle)},
              {"selector", toJson(o.selector)},
              {"policy", toJson(o.policy)},
              {"plan", rollouts::planDocument(o.plan)}};
  if (!o.warnings.empty()) out["warnings"] = o.warnings;
  if (o.dry_run) out["dry_run"] = true;
  return out;
}

json rolloutPodsJson(const std::vector<rollouts::RolloutPodRow>& rows) {
  json items = json::array();
  for (const auto& p : rows) {
    json j = {{"pod", p.pod},
              {"building", p.building},
              {"wave", p.wave},
              {"phase", rollouts::podPhaseName(p.phase)},
              {"waiting_reason", p.waiting_reason},
              {"message", p.message},
              {"position", p.position},
              {"attempt", p.attempt},
              {"run_id", p.run_id},
              {"validation_run_id", p.validation_run_id}};
    core::putTime(j, "started_at", p.started_at);
    core::putTime(j, "finished_at", p.finished_at);
    j["duration_s"] = p.started_at && p.finished_at ? json(std::chrono::duration<double>(*p.finished_at - *p.started_at).count())
                                                     : json();
    items.push_back(std::move(j));
  }
  return json{{"items", std::move(items)}, {"next_cursor", nullptr}};
}

json rolloutListJson(const core::Page<rollouts::RolloutRow>& page) {
  json items = json::array();
  for (const auto& r : page.items) {
    json j = {{"id", r.id},
              {"bundle", r.bundle_id},
              {"state", rollouts::rolloutStateName(r.state)},
              {"halt_reason", r.halt_reason},
              {"created_by", r.created_by},
              {"pods", r.plan.value("eligible", 0)}};
    core::putTime(j, "created_at", r.created_at);
    core::putTime(j, "started_at", r.started_at);
    core::putTime(j, "finished_at", r.finished_at);
    items.push_back(std::move(j));
  }
  return json{{"items", std::move(items)}, {"next_cursor", page.next_cursor ? json(*page.next_cursor) : json()}};
}

json rolloutEventsJson(const std::vector<rollouts::RolloutEventRow>& events) {
  return json{{"items", eventsJson(events)}, {"next_cursor", nullptr}};
}

}  // namespace kiln::api
