#pragma once
// An in-memory fake of rollouts::RolloutStore (and so of both sides' interfaces), every method
// as PgRolloutStore's SQL does it, over a core::testing::FakeFleet, for tests without
// PostgreSQL. Counts the calls the rollout controller's cost depends on. Its interface methods
// take the fakes' one lock (core/testing/fakes_lock.h); the rest is for a test's own thread.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/store.h"
#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/core/testing/fakes_lock.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/rollouts/testing/fake_bundle_catalog.h"

namespace kiln::rollouts::testing {

// A policy under which only max_concurrent_pods limits admission: one wave, no canary and no soak,
// and a capacity floor, power limit and failure budget that never bind.
inline Policy onlyConcurrencyLimits(int max_concurrent) {
  Policy p;
  p.canary_pods = 0;
  p.waves = {{100, true}};
  p.soak = std::chrono::seconds(0);
  p.max_concurrent_pods = max_concurrent;
  p.max_fraction_down_per_building = 1.0;  // capacity floor: 100 % may be down
  p.failure_budget_pods.reset();
  p.failure_budget_percent = 100;
  p.max_rebooting_pods_per_building = 100;
  return p;
}

// Rollouts, their pods and events in memory, with a FakeBundleCatalog; pod facts (buildings,
// pod and host states) from a FakeFleet. Every method of both sides' interfaces does what
// PgRolloutStore's SQL does. Times the database stamps with now() (a rollout's creation, start
// and finish, a pod's start and finish, an event) come from `clock` when given, else they are
// the epoch.
class FakeRolloutStore final : public RolloutStore {
 public:
  explicit FakeRolloutStore(core::testing::FakeFleet& fleet, const core::Clock* clock = nullptr)
      : bundles_(clock), fleet_(fleet), clock_(clock) {}

  // A running rollout of `bundle` over `pods` (plan order, one wave) under `policy`.
  void addRollout(const std::string& id, const Bundle& bundle, const std::vector<std::string>& pods,
                  const Policy& policy, const std::string& state = "running") {
    bundles_.add(bundle);
    bundles_.markUsed(bundle.id);
    RolloutRow r;
    r.id = id;
    r.bundle_id = bundle.id;
    r.state = parseRolloutState(state).value();
    r.policy = policy;
    r.created_at = now();
    rollouts_[id] = r;
    int position = 0;
    for (const auto& p : pods) {
      RolloutPodRow row;
      row.rollout_id = id;
      row.pod = p;
      row.building = fleet_.pods_.at(p).pod.building;
      row.position = position++;
      pods_[id].push_back(row);
    }
  }
  RolloutPodRow& pod(const std::string& rollout, const std::string& pod) {
    if (auto* p = findPod(rollout, pod)) return *p;
    throw std::out_of_range(pod);
  }
  RolloutPodRow* findPod(const std::string& rollout, const std::string& pod) {
    auto it = pods_.find(rollout);
    if (it == pods_.end()) return nullptr;
    for (auto& p : it->second)
      if (p.pod == pod) return &p;
    return nullptr;
  }
  // The versions the pod's hosts report: every host of the pod at `version` of `kind` (what the
  // agents' inventory says after an upgrade). Unset pods have driver 570.1 on their 18 hosts.
  void setVersion(const std::string& pod, const std::string& kind, const std::string& version) {
    auto [it, added] = versions_.try_emplace(pod);
    if (added) it->second["driver"]["570.1"] = 18;
    it->second[kind] = {{version, 18}};
  }
  // Some hosts of the pod at one version, the rest at another (a partly flashed pod).
  void setVersions(const std::string& pod, const std::string& kind, std::map<std::string, int> hosts_by_version) {
    versions_[pod][kind] = std::move(hosts_by_version);
  }
  // Events of a kind, of every rollout, oldest first, as "pod: message".
  std::vector<std::string> eventsOf(const std::string& kind) const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& e : events_)
      if (e.event.kind == kind) out.push_back(e.event.pod + ": " + e.event.message);
    return out;
  }

  int update_pods_calls = 0, set_waiting_calls = 0;
  std::optional<Error> fail_update_pods;  // set: every updatePods answers it, writing nothing

  Result<std::pair<BundleRow, PutOutcome>> putBundle(const Bundle& b, const core::Actor& actor,
                                                     const std::optional<core::IfMatch>& if_match) override {
    core::testing::FakesLock fakes_lock;
    return bundles_.putBundle(b, actor, if_match);
  }
  Result<std::optional<BundleRow>> getBundle(const std::string& ref) override {
    core::testing::FakesLock fakes_lock;
    return bundles_.getBundle(ref);
  }
  Result<std::vector<BundleRow>> listBundles() override {
    core::testing::FakesLock fakes_lock;
    return bundles_.listBundles();
  }
  // As the SQL: the pods the selector's sites, buildings, platforms, pods and labels match (all
  // pods when it names none), by id, with the active rollout holding each.
  Result<std::vector<PodSnapshot>> podSnapshots(const Selector& s) override {
    core::testing::FakesLock fakes_lock;
    auto among = [](const std::vector<std::string>& values, const std::string& v) {
      return values.empty() || std::find(values.begin(), values.end(), v) != values.end();
    };
    std::vector<PodSnapshot> out;
    for (const auto& [id, d] : fleet_.pods_) {
      if (!among(s.sites, d.pod.site) || !among(s.buildings, d.pod.building) || !among(s.platforms, d.pod.platform) ||
          !among(s.pods, id))
        continue;
      bool labelled = true;
      for (const auto& [k, v] : s.labels) {
        auto it = d.pod.labels.find(k);
        labelled &= it != d.pod.labels.end() && it->second == v;
      }
      if (!labelled) continue;
      PodSnapshot snap;
      snap.id = id;
      snap.site = d.pod.site;
      snap.building = d.pod.building;
      snap.platform = d.pod.platform;
      snap.state = d.pod.state;
      snap.labels = d.pod.labels;
      snap.hosts = static_cast<int>(d.hosts.size());
      snap.switch_trays = static_cast<int>(d.switch_trays.size());
      for (const auto& h : d.hosts) snap.allocated |= h.state == core::HostState::kAllocated;
      snap.other_rollout = holder(id);
      if (auto it = versions_.find(id); it != versions_.end())
        snap.host_versions = it->second;
      else
        snap.host_versions["driver"]["570.1"] = snap.hosts;
      out.push_back(snap);
    }
    return out;
  }
  // "ro-<n>" from a sequence that skips the ids addRollout took.
  Result<std::string> nextRolloutId() override {
    core::testing::FakesLock fakes_lock;
    std::string id;
    do id = "ro-" + std::to_string(++next_rollout_);
    while (rollouts_.count(id));
    return id;
  }
  // As the SQL: kConflict when a pod is in flight or pending in another active rollout; the
  // rollout starts in state created, its pods pending; its bundle counts as used from then on.
  Result<RolloutRow> createRollout(const RolloutRow& r, const std::vector<RolloutPodRow>& pods,
                                   const core::Actor& actor) override {
    core::testing::FakesLock fakes_lock;
    for (const auto& p : pods)
      if (auto other = holder(p.pod); !other.empty())
        return conflict("pod " + p.pod + " is already in rollout " + other).with("pod", p.pod);
    RolloutRow row = r;
    row.state = RolloutState::kCreated;
    row.created_by = actor.token_id;
    row.created_at = now();
    row.claim.reset();
    row.downgrade_reason.clear();
    rollouts_[r.id] = row;
    bundles_.markUsed(r.bundle_id);
    auto& rows = pods_[r.id];
    for (const auto& p : pods) {
      RolloutPodRow pr;
      pr.rollout_id = r.id;
      pr.pod = p.pod;
      pr.building = fleet_.pods_.at(p.pod).pod.building;
      pr.wave = p.wave;
      pr.position = p.position;
      rows.push_back(pr);
    }
    addEvent(r.id,
             {"", "created", "rollout of bundle " + r.bundle_id + " over " + std::to_string(pods.size()) + " pods"});
    return row;
  }
  Result<RolloutRow> getRollout(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    auto it = rollouts_.find(id);
    if (it == rollouts_.end()) return notFound("no rollout '" + id + "'");
    return it->second;
  }
  Result<std::vector<RolloutPodRow>> rolloutPods(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    auto it = pods_.find(id);
    if (it == pods_.end()) return std::vector<RolloutPodRow>();
    auto rows = it->second;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.position < b.position; });
    return rows;
  }
  // As the SQL: newest first by the number in the id, pages keyed by that number.
  Result<core::Page<RolloutRow>> listRollouts(std::optional<RolloutState> state,
                                              const core::PageRequest& page) override {
    core::testing::FakesLock fakes_lock;
    auto number = [](const std::string& text) -> std::optional<std::int64_t> {
      std::int64_t n = 0;
      const auto* end = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(text.data(), end, n);
      if (ec != std::errc() || ptr != end) return std::nullopt;
      return n;
    };
    std::int64_t before = std::numeric_limits<std::int64_t>::max();
    if (!page.cursor.empty()) {
      auto n = number(page.cursor);
      if (!n) return invalidArgument("cursor is not valid");
      before = *n;
    }
    std::vector<std::pair<std::int64_t, const RolloutRow*>> rows;
    for (const auto& [id, r] : rollouts_) {
      auto n = number(id.substr(std::min<std::size_t>(3, id.size())));
      if (n && *n < before && (!state || r.state == *state)) rows.emplace_back(*n, &r);
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const auto limit = static_cast<std::size_t>(std::clamp(page.limit, 1, 1000));
    core::Page<RolloutRow> out;
    for (std::size_t i = 0; i < rows.size() && i < limit; ++i) out.items.push_back(*rows[i].second);
    if (rows.size() > limit) out.next_cursor = std::to_string(rows[limit - 1].first);
    return out;
  }
  // As the SQL: the newest `limit`, newest first.
  Result<std::vector<RolloutEventRow>> rolloutEvents(const std::string& id, int limit) override {
    core::testing::FakesLock fakes_lock;
    std::lock_guard lock(mu_);
    std::vector<RolloutEventRow> out;
    for (auto it = events_.rbegin(); it != events_.rend() && static_cast<int>(out.size()) < limit; ++it)
      if (it->rollout == id) out.push_back({it->id, it->at, it->event});
    return out;
  }
  // Oldest first.
  Result<std::vector<std::string>> activeRollouts() override {
    core::testing::FakesLock fakes_lock;
    std::vector<const RolloutRow*> rows;
    for (const auto& [id, r] : rollouts_)
      if (active(r.state)) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto* a, const auto* b) { return a->created_at < b->created_at; });
    std::vector<std::string> out;
    for (const auto* r : rows) out.push_back(r->id);
    return out;
  }
  Result<RolloutRow> transition(const std::string& id, const std::vector<RolloutState>& from, RolloutState to_state,
                                const std::string& reason, const core::Actor&) override {
    core::testing::FakesLock fakes_lock;
    const std::string to = rolloutStateName(to_state);
    auto it = rollouts_.find(id);
    if (it == rollouts_.end()) return notFound("no rollout '" + id + "'");
    auto& r = it->second;
    const std::string current = rolloutStateName(r.state);
    if (std::find(from.begin(), from.end(), r.state) == from.end())
      return conflict("rollout " + id + " is " + current + "; this needs it to be " + stateList(from))
          .with("state", current);
    const bool completing = to_state == RolloutState::kCompleted;
    if (completing || to_state == RolloutState::kAborted)  // as the store checks under the row lock
      for (const auto& p : pods_[id])
        if (completing ? !finished(p.phase) : inFlight(p.phase))
          return conflict("rollout " + id + " still has a pod unfinished").with("state", current);
    r.state = to_state;
    if (to_state == RolloutState::kHalted) r.halt_reason = reason;
    if (to_state == RolloutState::kRunning && !r.started_at) r.started_at = now();
    if (completing || to_state == RolloutState::kAborted) r.finished_at = now();
    addEvent(id, {"", to, reason.empty() ? current + " -> " + to : reason});
    return r;
  }
  Status updatePods(const std::string& id, const std::vector<PodUpdate>& updates,
                    const std::vector<RolloutEvent>& events) override {
    core::testing::FakesLock fakes_lock;
    ++update_pods_calls;
    if (fail_update_pods) return *fail_update_pods;
    for (const auto& u : updates) {
      if (u.only_while.empty()) continue;
      auto r = rollouts_.find(id);
      if (r == rollouts_.end()) return notFound("no rollout '" + id + "'");
      const auto state = r->second.state;
      if (std::find(u.only_while.begin(), u.only_while.end(), state) == u.only_while.end())
        return conflict("rollout " + id + " is " + rolloutStateName(state)).with("state", rolloutStateName(state));
      if (auto* p = findPod(id, u.pod); !p || p->phase != u.expect)
        return conflict("pod " + u.pod + " moved on").with("pod", u.pod);
    }
    for (const auto& u : updates) {
      auto* found = findPod(id, u.pod);
      if (!found || found->phase != u.expect) continue;  // as the SQL's WHERE: nothing to update
      auto& p = *found;
      p.phase = u.phase;
      if (u.run_id) p.run_id = *u.run_id;
      if (u.validation_run_id) p.validation_run_id = *u.validation_run_id;
      if (u.message) p.message = *u.message;
      if (u.waiting_reason) p.waiting_reason = *u.waiting_reason;
      if (u.before_versions) p.before_versions = *u.before_versions;
      if (u.bump_attempt) ++p.attempt;
      if (u.set_started) p.started_at = now();
      if (u.set_finished)
        p.finished_at = now();
      else if (u.phase == PodPhase::kPending)
        p.finished_at.reset();
    }
    for (const auto& e : events) addEvent(id, e);
    return Ok{};
  }
  Status setWaiting(const std::string& id, const std::map<std::string, std::string>& reasons) override {
    core::testing::FakesLock fakes_lock;
    ++set_waiting_calls;
    auto rows = pods_.find(id);
    if (rows == pods_.end()) return Ok{};
    for (auto& p : rows->second) {
      if (auto it = reasons.find(p.pod); it != reasons.end())
        p.waiting_reason = it->second;
      else if (p.phase == PodPhase::kPending)
        p.waiting_reason.clear();
    }
    return Ok{};
  }
  // As the SQL: a pod is down when its state is not in service or it is in flight in any rollout.
  Result<std::map<std::string, BuildingLoad>> buildingLoads(const std::set<std::string>& buildings) override {
    core::testing::FakesLock fakes_lock;
    std::set<std::string> in_flight, rebooting;
    for (const auto& [_, rows] : pods_)
      for (const auto& p : rows)
        if (inFlight(p.phase)) {
          in_flight.insert(p.pod);
          if (p.phase != PodPhase::kValidating) rebooting.insert(p.pod);
        }
    std::map<std::string, BuildingLoad> out;
    for (const auto& [id, d] : fleet_.pods_) {
      if (!buildings.count(d.pod.building)) continue;
      auto& load = out[d.pod.building];
      ++load.pods;
      if (!core::podInService(d.pod.state) || in_flight.count(id)) ++load.down;
      if (rebooting.count(id)) ++load.upgrading;
    }
    return out;
  }
  Result<std::map<std::string, PodHostStates>> podHostStates(const std::set<std::string>& pods) override {
    core::testing::FakesLock fakes_lock;
    std::map<std::string, PodHostStates> out;
    for (const auto& id : pods) {
      auto it = fleet_.pods_.find(id);
      if (it == fleet_.pods_.end()) continue;
      for (const auto& h : it->second.hosts)
        if (admissionCounts(h.state)) {
          out[id].platform = it->second.pod.platform;
          ++out[id].hosts[h.state];
        }
    }
    return out;
  }
  // As the SQL: every rollout by state; the pods of unfinished rollouts by phase.
  Result<std::pair<std::map<RolloutState, int>, std::map<PodPhase, int>>> counts() override {
    core::testing::FakesLock fakes_lock;
    std::pair<std::map<RolloutState, int>, std::map<PodPhase, int>> out;
    for (const auto& [id, r] : rollouts_) {
      ++out.first[r.state];
      if (finished(r.state)) continue;
      for (const auto& p : pods_[id]) ++out.second[p.phase];
    }
    return out;
  }
  // As the SQL: unfinished rollouts and those finished at or after `finished_since`, oldest
  // first, their pods in plan order.
  Result<std::vector<MetricRollout>> metricRollouts(core::TimePoint finished_since) override {
    core::testing::FakesLock fakes_lock;
    std::vector<const RolloutRow*> rows;
    for (const auto& [id, r] : rollouts_)
      if (!finished(r.state) || (r.finished_at && *r.finished_at >= finished_since)) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto* a, const auto* b) { return a->created_at < b->created_at; });
    std::vector<MetricRollout> out;
    for (const auto* r : rows) {
      MetricRollout m;
      m.id = r->id;
      m.bundle_id = r->bundle_id;
      m.state = r->state;
      m.policy = r->policy;
      m.started_at = r->started_at;
      for (const auto& p : *rolloutPods(r->id)) {
        MetricRollout::Pod pod;
        pod.phase = p.phase;
        pod.platform = fleet_.pods_.at(p.pod).pod.platform;
        pod.started_at = p.started_at;
        pod.finished_at = p.finished_at;
        m.pods.push_back(pod);
      }
      out.push_back(std::move(m));
    }
    return out;
  }
  // As the SQL: per pod, the bundle of the other rollout in which it succeeded last, among those
  // that finished before this rollout started its first pod.
  Result<std::map<std::string, std::string>> previousBundles(const std::string& rollout_id,
                                                             const std::vector<std::string>& pods) override {
    core::testing::FakesLock fakes_lock;
    std::optional<core::TimePoint> started;
    if (auto rows = pods_.find(rollout_id); rows != pods_.end())
      for (const auto& p : rows->second)
        if (p.started_at && (!started || *p.started_at < *started)) started = p.started_at;
    const core::TimePoint before = started.value_or(now());
    std::map<std::string, std::string> out;
    std::map<std::string, core::TimePoint> newest;
    for (const auto& [id, rows] : pods_) {
      if (id == rollout_id) continue;
      for (const auto& p : rows) {
        if (p.phase != PodPhase::kSucceeded || !p.finished_at || *p.finished_at >= before) continue;
        if (std::find(pods.begin(), pods.end(), p.pod) == pods.end()) continue;
        if (auto it = newest.find(p.pod); it != newest.end() && it->second >= *p.finished_at) continue;
        newest[p.pod] = *p.finished_at;
        out[p.pod] = rollouts_.at(id).bundle_id;
      }
    }
    return out;
  }
  // As the SQL: per pod, the newest rollout created after `rollout_id` in which the pod
  // succeeded or got an upgrade run.
  Result<std::map<std::string, std::string>> laterChanges(const std::string& rollout_id,
                                                          const std::vector<std::string>& pods) override {
    core::testing::FakesLock fakes_lock;
    std::map<std::string, std::string> out;
    auto self = rollouts_.find(rollout_id);
    if (self == rollouts_.end()) return out;
    std::map<std::string, core::TimePoint> newest;
    for (const auto& [id, rows] : pods_) {
      if (id == rollout_id) continue;
      const auto created = rollouts_.at(id).created_at;
      if (created <= self->second.created_at) continue;
      for (const auto& p : rows) {
        if (p.phase != PodPhase::kSucceeded && p.run_id.empty()) continue;
        if (std::find(pods.begin(), pods.end(), p.pod) == pods.end()) continue;
        if (auto it = newest.find(p.pod); it != newest.end() && it->second >= created) continue;
        newest[p.pod] = created;
        out[p.pod] = id;
      }
    }
    return out;
  }

  FakeBundleCatalog bundles_;
  std::map<std::string, RolloutRow> rollouts_;
  std::map<std::string, std::vector<RolloutPodRow>> pods_;

 private:
  struct StoredEvent {
    std::int64_t id = 0;
    std::string rollout;
    core::TimePoint at;
    RolloutEvent event;
  };
  core::TimePoint now() const { return clock_ ? clock_->now() : core::TimePoint{}; }
  void addEvent(const std::string& rollout, const RolloutEvent& e) {
    std::lock_guard lock(mu_);
    events_.push_back({static_cast<std::int64_t>(events_.size()) + 1, rollout, now(), e});
  }
  // The active rollout (created counts) in which the pod has not finished, if any.
  std::string holder(const std::string& pod) const {
    for (const auto& [id, rows] : pods_) {
      if (finished(rollouts_.at(id).state)) continue;
      for (const auto& p : rows)
        if (p.pod == pod && !finished(p.phase)) return id;
    }
    return "";
  }

  core::testing::FakeFleet& fleet_;
  const core::Clock* clock_;
  int next_rollout_ = 0;
  std::map<std::string, std::map<std::string, std::map<std::string, int>>>
      versions_;           // pod -> kind -> version -> hosts
  mutable std::mutex mu_;  // events_ (hook answers may write from another thread)
  std::vector<StoredEvent> events_;
};

}  // namespace kiln::rollouts::testing
