#pragma once
// An in-memory fake of the fleet store's narrow parts (core::FleetHosts, FleetReads,
// HostListing, AuditLog: what the rollouts, the run service, the fleet service and the Slurm
// driver hold), every method as the PostgreSQL store does it, for tests without PostgreSQL.
// Counts the calls the rollout controller's cost depends on. Its interface methods take the
// fakes' one lock (fakes_lock.h); the rest is for a test's own thread.

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/store.h"
#include "orchestrator/core/testing/fakes_lock.h"

namespace kiln::core::testing {

// Pods "<building>-p<n>" of 18 catalina hosts "<pod>-h01".."-h18", all available; a pod's
// state follows its hosts' as the store keeps it. The parts of the fleet store its consumers
// hold (the rollout controller and service, the run service, the Slurm driver), each as PgStore
// does it; no GPUs or components are kept (getHost answers none). A transition stamps
// state_since with `clock`'s time when given, else the epoch.
class FakeFleet final : public core::HostLifecycle,
                        public core::FleetReads,
                        public core::HostListing,
                        public core::AuditLog {
 public:
  explicit FakeFleet(const core::Clock* clock = nullptr) : clock_(clock) {}

  void addPod(const std::string& pod, const std::string& building) {
    core::PodDetail d;
    d.pod.id = pod;
    d.pod.building = building;
    d.pod.site = "s1";
    d.pod.platform = "catalina";
    d.pod.state = core::PodState::kInService;
    for (int i = 1; i <= 18; ++i) {
      core::HostSummary h;
      h.id = pod + "-h" + (i < 10 ? "0" : "") + std::to_string(i);
      h.pod = pod;
      h.building = building;
      h.site = d.pod.site;
      h.platform = "catalina";
      h.state = core::HostState::kAvailable;
      h.tray = i;
      h.spare = i > 16;
      d.hosts.push_back(h);
    }
    pods_[pod] = d;
  }
  core::HostSummary* host(const std::string& id) {
    for (auto& [_, d] : pods_)
      for (auto& h : d.hosts)
        if (h.id == id) return &h;
    return nullptr;
  }
  // The pod's management endpoints, as an import sets them (core/management.h).
  void setManagement(const std::string& pod, core::ManagementSpec m) { pods_.at(pod).management = std::move(m); }
  // Sets the state as a fixture does (no event, no audit record, state_since unchanged).
  void setState(const std::string& id, core::HostState state) {
    host(id)->state = state;
    refreshPodState(host(id)->pod);
  }
  core::HostState state(const std::string& id) { return host(id)->state; }

  int get_pod_calls = 0, hosts_of_pods_calls = 0, transition_batches = 0, transitions_applied = 0;

  // As the SQL: the pod's summary counts its hosts by state and the GPUs of those serving jobs.
  Result<core::PodDetail> getPod(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    ++get_pod_calls;
    auto it = pods_.find(id);
    if (it == pods_.end()) return notFound("no pod '" + id + "'");
    core::PodDetail d = it->second;
    d.pod.hosts_by_state.clear();
    d.pod.healthy_gpus = 0;
    const auto& g = core::geometry(*core::parsePlatform(d.pod.platform));
    for (const auto& h : d.hosts) {
      ++d.pod.hosts_by_state[std::string(core::hostStateName(h.state))];
      if (core::servesJobs(h.state)) d.pod.healthy_gpus += g.gpus_per_tray;
    }
    return d;
  }
  Result<std::map<std::string, core::ManagementSpec>> podManagement(const std::vector<std::string>& ids) override {
    core::testing::FakesLock fakes_lock;
    std::map<std::string, core::ManagementSpec> out;
    for (const auto& id : ids)
      if (auto it = pods_.find(id); it != pods_.end() && !it->second.management.empty()) out[id] = it->second.management;
    return out;
  }
  Result<std::map<std::string, std::vector<core::HostSummary>>> hostsOfPods(
      const std::vector<std::string>& ids) override {
    core::testing::FakesLock fakes_lock;
    ++hosts_of_pods_calls;
    std::map<std::string, std::vector<core::HostSummary>> out;
    for (const auto& id : ids)
      if (auto it = pods_.find(id); it != pods_.end()) out[id] = it->second.hosts;
    return out;
  }
  Result<std::map<std::string, core::HostSummary>> hostsById(const std::vector<std::string>& ids) override {
    core::testing::FakesLock fakes_lock;
    std::map<std::string, core::HostSummary> out;
    for (const auto& id : ids)
      if (auto* h = host(id)) out[id] = *h;
    return out;
  }
  Result<core::HostDetail> getHost(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    auto* h = host(id);
    if (!h) return notFound("no host '" + id + "'");
    core::HostDetail d;
    d.host = *h;
    if (auto pod = pods_.find(h->pod); pod != pods_.end()) d.management = pod->second.management;
    for (auto a : core::allowedActions(h->state)) d.allowed_actions.emplace_back(core::hostActionName(a));
    return d;
  }
  // As the SQL: every filter, the sort with id as the tie-break, keyset pages. The cursor is the
  // last id for the id order, else [the sort column as text, id] (state_since as microseconds
  // since the epoch here, a timestamp there: opaque either way).
  Result<core::Page<core::HostSummary>> listHosts(const core::HostFilter& f, const core::PageRequest& page) override {
    core::testing::FakesLock fakes_lock;
    std::string label_key, label_value;
    if (!f.label.empty()) {
      const auto eq = f.label.find('=');
      if (eq == std::string::npos) return invalidArgument("label filter must be key=value");
      label_key = f.label.substr(0, eq);
      label_value = f.label.substr(eq + 1);
    }
    const auto lower = [](std::string v) {
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
      return v;
    };
    const auto column = [&](const core::HostSummary& h) -> std::string {
      switch (f.sort.key) {
        case core::HostSortKey::kId:
          return h.id;
        case core::HostSortKey::kPod:
          return h.pod;
        case core::HostSortKey::kState:
          return std::string(core::hostStateName(h.state));
        case core::HostSortKey::kReason:
          return h.state_reason;
        case core::HostSortKey::kStateSince: {
          const auto us =
              std::chrono::duration_cast<std::chrono::microseconds>(h.state_since.time_since_epoch()).count();
          std::string digits = std::to_string(us);
          return std::string(20 - std::min<std::size_t>(20, digits.size()), '0') + digits;  // text order = time order
        }
      }
      return h.id;
    };
    std::optional<std::pair<std::string, std::string>> after;  // (column, id) of the previous page's last host
    if (!page.cursor.empty()) {
      if (f.sort.key == core::HostSortKey::kId) {
        after.emplace(page.cursor, page.cursor);
      } else {
        const auto key = nlohmann::json::parse(page.cursor, nullptr, /*allow_exceptions=*/false);
        if (!key.is_array() || key.size() != 2 || !key[0].is_string() || !key[1].is_string())
          return invalidArgument("cursor is not valid");
        after.emplace(key[0].get<std::string>(), key[1].get<std::string>());
      }
    }
    std::vector<std::pair<std::pair<std::string, std::string>, const core::HostSummary*>> rows;
    for (const auto& [_, d] : pods_) {
      if (!label_key.empty()) {
        auto l = d.pod.labels.find(label_key);
        if (l == d.pod.labels.end() || l->second != label_value) continue;
      }
      for (const auto& h : d.hosts) {
        if ((!f.pod.empty() && h.pod != f.pod) || (!f.building.empty() && h.building != f.building) ||
            (!f.site.empty() && h.site != f.site) || (!f.state.empty() && core::hostStateName(h.state) != f.state))
          continue;
        if (!f.reason.empty() && lower(h.state_reason).find(lower(f.reason)) == std::string::npos) continue;
        if (!f.id_prefix.empty() && lower(h.id).rfind(lower(f.id_prefix), 0) != 0) continue;
        std::pair<std::string, std::string> key{column(h), h.id};
        if (after && (f.sort.descending ? !(key < *after) : !(key > *after))) continue;
        rows.push_back({std::move(key), &h});
      }
    }
    std::sort(rows.begin(), rows.end(),
              [&](const auto& a, const auto& b) { return f.sort.descending ? a.first > b.first : a.first < b.first; });
    const std::size_t limit = static_cast<std::size_t>(std::clamp(page.limit, 1, 1000));
    core::Page<core::HostSummary> out;
    for (std::size_t i = 0; i < rows.size() && i < limit; ++i) out.items.push_back(*rows[i].second);
    if (rows.size() > limit) {
      const auto& last = rows[limit - 1].first;
      out.next_cursor =
          f.sort.key == core::HostSortKey::kId ? last.second : nlohmann::json::array({last.first, last.second}).dump();
    }
    return out;
  }
  Result<std::vector<Result<core::HostState>>> transitionHosts(const std::vector<core::HostTransition>& ts,
                                                               const core::Actor& actor) override {
    core::testing::FakesLock fakes_lock;
    ++transition_batches;
    std::vector<Result<core::HostState>> out;
    for (const auto& t : ts) out.push_back(apply(t, actor));
    return out;
  }
  Result<core::HostSummary> transitionHost(const core::HostTransition& t, const core::Actor& actor) override {
    core::testing::FakesLock fakes_lock;
    auto to = apply(t, actor);
    if (!to.ok()) return to.error();
    return *host(t.host);
  }
  Status audit(const core::Actor& actor, const std::string& action, const std::string& target,
               const std::string& details_json) override {
    core::testing::FakesLock fakes_lock;
    record(actor, action, target, details_json);
    return Ok{};
  }
  // What was audited (audit(), and each applied transition as "host.<action>"), oldest first.
  std::vector<core::AuditRecord> audits() const {
    std::lock_guard lock(audit_mu_);
    return audits_;
  }

  std::map<std::string, core::PodDetail> pods_;

 private:
  core::TimePoint now() const { return clock_ ? clock_->now() : core::TimePoint{}; }
  void record(const core::Actor& actor, const std::string& action, const std::string& target,
              const std::string& details_json) {
    std::lock_guard lock(audit_mu_);
    core::AuditRecord r;
    r.id = static_cast<std::int64_t>(audits_.size()) + 1;
    r.at = now();
    r.actor = actor.token_id;
    r.actor_name = actor.name;
    r.action = action;
    r.target = target;
    r.details_json = details_json;
    audits_.push_back(std::move(r));
  }
  // As the store's one transition: checked by core::nextState, the reason and time kept, audited.
  Result<core::HostState> apply(const core::HostTransition& t, const core::Actor& actor) {
    auto* h = host(t.host);
    if (!h) return notFound("no host '" + t.host + "'");
    const std::string from(core::hostStateName(h->state));
    auto next = core::nextState(h->state, t.action, t.override_to);
    if (!next.ok()) {
      next.error().with("host", t.host);
      return next.error();
    }
    h->state = *next;
    h->state_since = now();
    h->state_reason = t.reason;
    ++transitions_applied;
    refreshPodState(h->pod);
    const std::string action(core::hostActionName(t.action));
    record(
        actor, "host." + action, t.host,
        nlohmann::json{{"from", from}, {"to", std::string(core::hostStateName(*next))}, {"reason", t.reason}}.dump());
    return *next;
  }
  // As the store keeps it: the pod's state summarises its hosts' (core::podState).
  void refreshPodState(const std::string& pod) {
    auto& d = pods_.at(pod);
    std::map<core::HostState, int> by_state;
    for (const auto& h : d.hosts) ++by_state[h.state];
    d.pod.state = core::podState(by_state, core::geometry(*core::parsePlatform(d.pod.platform)));
  }

  const core::Clock* clock_;
  mutable std::mutex audit_mu_;  // audit() may be called from the run service's threads
  std::vector<core::AuditRecord> audits_;
};

}  // namespace kiln::core::testing
