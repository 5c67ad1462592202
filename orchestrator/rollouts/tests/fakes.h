#pragma once
// In-memory fakes for testing RolloutService and RolloutController without PostgreSQL: the
// fleet (pods, hosts and their lifecycle through core::nextState), the bundle catalog, the
// rollout store, and a run store that starts runs and lets the test finish them. Each counts
// the calls the controller's cost depends on. Not thread-safe unless said: the tests drive
// tick() from one thread.
//
// Complete (every method as the PostgreSQL store does it): FakeFleet for core::FleetHosts and
// core::AuditLog (what the rollouts use of the fleet), FakeBundleCatalog, and FakeRolloutStore
// for RolloutStore and so for both sides' interfaces. FakeFleet's other core::Store methods
// and FakeRunStore's methods the rollouts do not use answer kUnavailable (fakeUnsupported).

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/rollout_service.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_service.h"
#include "orchestrator/runs/run_store.h"

namespace kiln::rollouts::testing {

inline Error fakeUnsupported() { return unavailable("not in the fake"); }

// Pods "<building>-p<n>" of 18 catalina hosts "<pod>-h01".."-h18", all available; a pod's
// state follows its hosts' as the store keeps it.
class FakeFleet final : public core::Store {
 public:
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
  void setState(const std::string& id, core::HostState state) {
    host(id)->state = state;
    refreshPodState(host(id)->pod);
  }
  core::HostState state(const std::string& id) { return host(id)->state; }

  int get_pod_calls = 0, hosts_of_pods_calls = 0, transition_host_calls = 0, transition_batches = 0, transitions_applied = 0;

  Status ping() override { return Ok{}; }
  Result<std::optional<core::IdempotencyRecord>> findIdempotencyKey(const std::string&) override {
    return std::optional<core::IdempotencyRecord>();
  }
  Result<core::ImportSummary> importFleet(const core::FleetSpec&, const core::Actor&) override { return fakeUnsupported(); }
  Result<std::vector<core::SiteSummary>> listSites() override { return fakeUnsupported(); }
  Result<core::Page<core::PodSummary>> listPods(const core::PodFilter&, const core::PageRequest&) override {
    return fakeUnsupported();
  }
  Result<std::vector<core::PodSummary>> heatmapPods() override { return fakeUnsupported(); }
  Result<core::PodDetail> getPod(const std::string& id) override {
    ++get_pod_calls;
    auto it = pods_.find(id);
    if (it == pods_.end()) return notFound("no pod '" + id + "'");
    return it->second;
  }
  Result<std::map<std::string, std::vector<core::HostSummary>>> hostsOfPods(const std::vector<std::string>& ids) override {
    ++hosts_of_pods_calls;
    std::map<std::string, std::vector<core::HostSummary>> out;
    for (const auto& id : ids)
      if (auto it = pods_.find(id); it != pods_.end()) out[id] = it->second.hosts;
    return out;
  }
  // Every host, in one page (filters ignored).
  Result<core::Page<core::HostSummary>> listHosts(const core::HostFilter&, const core::PageRequest&) override {
    core::Page<core::HostSummary> page;
    for (const auto& [_, d] : pods_)
      for (const auto& h : d.hosts) page.items.push_back(h);
    return page;
  }
  Result<core::HostDetail> getHost(const std::string& id) override {
    auto* h = host(id);
    if (!h) return notFound("no host '" + id + "'");
    core::HostDetail d;
    d.host = *h;
    return d;
  }
  Result<core::Page<core::HostEvent>> hostEvents(const std::string&, const core::PageRequest&) override {
    return fakeUnsupported();
  }
  Result<core::HostSummary> transitionHost(const core::HostTransition& t, const core::Actor&) override {
    ++transition_host_calls;
    auto st = apply(t);
    if (!st.ok()) return st.error();
    return *host(t.host);
  }
  Result<std::vector<Result<core::HostState>>> transitionHosts(const std::vector<core::HostTransition>& ts,
                                                               const core::Actor&) override {
    ++transition_batches;
    std::vector<Result<core::HostState>> out;
    for (const auto& t : ts) out.push_back(apply(t));
    return out;
  }
  Result<std::int64_t> countHealthyPods(const std::string&) override { return fakeUnsupported(); }
  Result<core::FleetCounts> fleetCounts() override { return fakeUnsupported(); }
  Result<core::NewToken> createToken(core::Role, const std::string&, const std::string&, const core::Actor&) override {
    return fakeUnsupported();
  }
  Result<std::vector<core::TokenInfo>> listTokens() override { return fakeUnsupported(); }
  Status revokeToken(const std::string&, const core::Actor&) override { return fakeUnsupported(); }
  Result<std::optional<core::TokenRecord>> findToken(const std::string&) override { return fakeUnsupported(); }
  Result<Revocations> tokensRevokedSince(core::TimePoint) override { return fakeUnsupported(); }
  Result<bool> hasAdminToken() override { return fakeUnsupported(); }
  Status audit(const core::Actor& actor, const std::string& action, const std::string& target,
               const std::string& details_json) override {
    std::lock_guard lock(audit_mu_);
    core::AuditRecord r;
    r.id = static_cast<std::int64_t>(audits_.size()) + 1;
    r.actor = actor.token_id;
    r.actor_name = actor.name;
    r.action = action;
    r.target = target;
    r.details_json = details_json;
    audits_.push_back(std::move(r));
    return Ok{};
  }
  // What audit() recorded, oldest first.
  std::vector<core::AuditRecord> audits() const {
    std::lock_guard lock(audit_mu_);
    return audits_;
  }

  std::map<std::string, core::PodDetail> pods_;

 private:
  Result<core::HostState> apply(const core::HostTransition& t) {
    auto* h = host(t.host);
    if (!h) return notFound("no host '" + t.host + "'");
    auto next = core::nextState(h->state, t.action, t.override_to);
    if (!next.ok()) return next.error();
    h->state = *next;
    ++transitions_applied;
    refreshPodState(h->pod);
    return *next;
  }
  // As the store keeps it: the pod's state summarises its hosts' (core::podState).
  void refreshPodState(const std::string& pod) {
    auto& d = pods_.at(pod);
    std::map<core::HostState, int> by_state;
    for (const auto& h : d.hosts) ++by_state[h.state];
    d.pod.state = core::podState(by_state, core::geometry(*core::parsePlatform(d.pod.platform)));
  }

  mutable std::mutex audit_mu_;  // audit() may be called from the run service's threads
  std::vector<core::AuditRecord> audits_;
};

// Bundles in memory, as PgRolloutStore keeps them: one per name@version, ids "b-<n>"; a bundle
// a rollout used (markUsed) no longer changes. Creation times from `clock` when given, else the
// epoch.
class FakeBundleCatalog final : public BundleCatalog {
 public:
  explicit FakeBundleCatalog(const core::Clock* clock = nullptr) : clock_(clock) {}

  // Stores `b` as it is, under its own id (a test's fixture), replacing the one with that id.
  void add(const Bundle& b) {
    BundleRow row;
    row.bundle = b;
    row.created_at = now();
    row.created_by = "test";
    if (auto* r = byId(b.id)) {
      row.used = r->used;
      *r = row;
    } else {
      rows_.push_back(row);
    }
  }
  // A rollout references the bundle (PgRolloutStore reads that from the rollouts table).
  void markUsed(const std::string& id) {
    if (auto* r = byId(id)) r->used = true;
  }

  Result<std::pair<BundleRow, PutOutcome>> putBundle(const Bundle& b, const core::Actor& actor,
                                                     const std::optional<core::IfMatch>& if_match) override {
    const std::string what = "bundle " + b.name + "@" + b.version;
    BundleRow* existing = byRef(b.name + "@" + b.version);
    if (if_match && !existing) return core::preconditionFailed(what, std::nullopt);
    if (existing) {
      const std::string etag = bundleEtag(existing->bundle);
      if (if_match && !if_match->matches(etag)) return core::preconditionFailed(what, etag);
      Bundle same = b;
      same.id = existing->bundle.id;
      if (existing->bundle == same) return std::make_pair(*existing, PutOutcome::kUnchanged);
      if (existing->used)
        return conflict(what + " was used by a rollout and cannot change: publish a new version")
            .with("bundle", existing->bundle.id);
      existing->bundle = same;
      return std::make_pair(*existing, PutOutcome::kUpdated);
    }
    BundleRow row;
    row.bundle = b;
    do row.bundle.id = "b-" + std::to_string(++next_id_);
    while (byId(row.bundle.id));
    row.created_at = now();
    row.created_by = actor.token_id;
    rows_.push_back(row);
    return std::make_pair(row, PutOutcome::kCreated);
  }
  Result<std::optional<BundleRow>> getBundle(const std::string& ref) override {
    if (auto* r = byRef(ref)) return std::optional<BundleRow>(*r);
    return std::optional<BundleRow>();
  }
  // As the SQL: newest first, then by id.
  Result<std::vector<BundleRow>> listBundles() override {
    std::vector<BundleRow> out = rows_;
    std::stable_sort(out.begin(), out.end(), [](const BundleRow& a, const BundleRow& b) {
      return a.created_at != b.created_at ? a.created_at > b.created_at : a.bundle.id < b.bundle.id;
    });
    return out;
  }

 private:
  core::TimePoint now() const { return clock_ ? clock_->now() : core::TimePoint{}; }
  BundleRow* byId(const std::string& id) {
    for (auto& r : rows_)
      if (r.bundle.id == id) return &r;
    return nullptr;
  }
  // By id ("b-3") or name@version.
  BundleRow* byRef(const std::string& ref) {
    const auto at = ref.find('@');
    if (at == std::string::npos) return byId(ref);
    for (auto& r : rows_)
      if (r.bundle.name == ref.substr(0, at) && r.bundle.version == ref.substr(at + 1)) return &r;
    return nullptr;
  }

  const core::Clock* clock_;
  int next_id_ = 0;
  std::vector<BundleRow> rows_;  // in creation order
};

// Rollouts, their pods and events in memory, with a FakeBundleCatalog; pod facts (buildings,
// pod and host states) from a FakeFleet. Every method of both sides' interfaces does what
// PgRolloutStore's SQL does. Times the database stamps with now() (a rollout's creation, start
// and finish, a pod's start and finish, an event) come from `clock` when given, else they are
// the epoch.
class FakeRolloutStore final : public RolloutStore {
 public:
  explicit FakeRolloutStore(FakeFleet& fleet, const core::Clock* clock = nullptr)
      : bundles_(clock), fleet_(fleet), clock_(clock) {}

  // A running rollout of `bundle` over `pods` (plan order, one wave) under `policy`.
  void addRollout(const std::string& id, const Bundle& bundle, const std::vector<std::string>& pods,
                  const nlohmann::json& policy, const std::string& state = "running") {
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
    return bundles_.putBundle(b, actor, if_match);
  }
  Result<std::optional<BundleRow>> getBundle(const std::string& ref) override { return bundles_.getBundle(ref); }
  Result<std::vector<BundleRow>> listBundles() override { return bundles_.listBundles(); }
  // As the SQL: the pods the selector's sites, buildings, platforms, pods and labels match (all
  // pods when it names none), by id, with the active rollout holding each.
  Result<std::vector<PodSnapshot>> podSnapshots(const Selector& s) override {
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
      if (auto it = versions_.find(id); it != versions_.end()) snap.host_versions = it->second;
      else snap.host_versions["driver"]["570.1"] = snap.hosts;
      out.push_back(snap);
    }
    return out;
  }
  // "ro-<n>" from a sequence that skips the ids addRollout took.
  Result<std::string> nextRolloutId() override {
    std::string id;
    do id = "ro-" + std::to_string(++next_rollout_);
    while (rollouts_.count(id));
    return id;
  }
  // As the SQL: kConflict when a pod is in flight or pending in another active rollout; the
  // rollout starts in state created, its pods pending; its bundle counts as used from then on.
  Result<RolloutRow> createRollout(const RolloutRow& r, const std::vector<RolloutPodRow>& pods,
                                   const core::Actor& actor) override {
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
    addEvent(r.id, {"", "created", "rollout of bundle " + r.bundle_id + " over " + std::to_string(pods.size()) + " pods"});
    return row;
  }
  Result<RolloutRow> getRollout(const std::string& id) override {
    auto it = rollouts_.find(id);
    if (it == rollouts_.end()) return notFound("no rollout '" + id + "'");
    return it->second;
  }
  Result<std::vector<RolloutPodRow>> rolloutPods(const std::string& id) override {
    auto it = pods_.find(id);
    if (it == pods_.end()) return std::vector<RolloutPodRow>();
    auto rows = it->second;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.position < b.position; });
    return rows;
  }
  // As the SQL: newest first by the number in the id, pages keyed by that number.
  Result<core::Page<RolloutRow>> listRollouts(std::optional<RolloutState> state, const core::PageRequest& page) override {
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
  Result<nlohmann::json> rolloutEvents(const std::string& id, int limit) override {
    std::lock_guard lock(mu_);
    nlohmann::json items = nlohmann::json::array();
    for (auto it = events_.rbegin(); it != events_.rend() && static_cast<int>(items.size()) < limit; ++it) {
      if (it->rollout != id) continue;
      nlohmann::json e = {{"id", it->id}, {"pod", it->event.pod}, {"kind", it->event.kind}, {"message", it->event.message}};
      core::putTime(e, "at", it->at);
      items.push_back(std::move(e));
    }
    return items;
  }
  // Oldest first.
  Result<std::vector<std::string>> activeRollouts() override {
    std::vector<const RolloutRow*> rows;
    for (const auto& [id, r] : rollouts_)
      if (active(r.state)) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->created_at < b->created_at; });
    std::vector<std::string> out;
    for (const auto* r : rows) out.push_back(r->id);
    return out;
  }
  Result<RolloutRow> transition(const std::string& id, const std::vector<RolloutState>& from, RolloutState to_state,
                                const std::string& reason, const core::Actor&) override {
    const std::string to = rolloutStateName(to_state);
    auto it = rollouts_.find(id);
    if (it == rollouts_.end()) return notFound("no rollout '" + id + "'");
    auto& r = it->second;
    const std::string current = rolloutStateName(r.state);
    if (std::find(from.begin(), from.end(), r.state) == from.end())
      return conflict("rollout " + id + " is " + current + "; this needs it to be " + stateList(from)).with("state", current);
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
      if (u.set_finished) p.finished_at = now();
      else if (u.phase == PodPhase::kPending) p.finished_at.reset();
    }
    for (const auto& e : events) addEvent(id, e);
    return Ok{};
  }
  Status setWaiting(const std::string& id, const std::map<std::string, std::string>& reasons) override {
    ++set_waiting_calls;
    auto rows = pods_.find(id);
    if (rows == pods_.end()) return Ok{};
    for (auto& p : rows->second) {
      if (auto it = reasons.find(p.pod); it != reasons.end()) p.waiting_reason = it->second;
      else if (p.phase == PodPhase::kPending) p.waiting_reason.clear();
    }
    return Ok{};
  }
  // As the SQL: a pod is down when its state is not in service or it is in flight in any rollout.
  Result<std::map<std::string, BuildingLoad>> buildingLoads(const std::set<std::string>& buildings) override {
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
    std::vector<const RolloutRow*> rows;
    for (const auto& [id, r] : rollouts_)
      if (!finished(r.state) || (r.finished_at && *r.finished_at >= finished_since)) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->created_at < b->created_at; });
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

  FakeFleet& fleet_;
  const core::Clock* clock_;
  int next_rollout_ = 0;
  std::map<std::string, std::map<std::string, std::map<std::string, int>>> versions_;  // pod -> kind -> version -> hosts
  mutable std::mutex mu_;  // events_ (hook answers may write from another thread)
  std::vector<StoredEvent> events_;
};

// Runs in memory: startRun creates them (one host group each), the test finishes them.
class FakeRunStore final : public runs::RunStore {
 public:
  // A one-step host workflow under every name asked for.
  static constexpr const char* kWorkflow =
      "name: NAME\nversion: \"1\"\ndescription: fake\nscope: host\ntimeout: 10m\n"
      "steps:\n  - id: work\n    run: [true]\n    timeout: 1m\n";

  // Ends the run: `failed` hosts fail (with a reason), the others pass, but a host a stop
  // already ended (withdrawn: cancelled) stays so; the run's state is the real verdict's.
  void finishRun(const std::string& id, const std::set<std::string>& failed = {}) {
    auto& run = runs_.at(id);
    for (auto& g : groups_[id])
      for (auto& h : g.hosts) {
        if (runs::isTerminal(h.status)) continue;
        h.status = failed.count(h.host) ? runs::HostStatus::kFailed : runs::HostStatus::kPassed;
        if (failed.count(h.host)) h.failures = {"flash failed"};
      }
    run.state = runs::runVerdict(run, groups_[id]).first;
  }
  const std::vector<runs::GroupState>& groupsOf(const std::string& run) { return groups_[run]; }

  // Hosts whose step no agent has taken yet (pending assignments): a stop withdraws them.
  // Others' steps are running on their agents.
  std::set<std::string> untaken;
  std::vector<std::string> runsOf(const std::string& workflow) const {
    std::vector<std::string> out;
    for (const auto& [id, r] : runs_)
      if (r.workflow == workflow) out.push_back(id);
    return out;
  }

  int get_run_calls = 0, run_groups_calls = 0, run_states_calls = 0;

  Status putWorkflow(const runs::WorkflowRow&, const core::Actor&, const std::optional<core::IfMatch>&) override {
    return fakeUnsupported();
  }
  Result<std::optional<runs::WorkflowRow>> currentWorkflow(const std::string& name) override { return workflow(name); }
  Result<std::optional<runs::WorkflowRow>> workflowVersion(const std::string& name, const std::string&) override {
    return workflow(name);
  }
  Result<std::vector<runs::WorkflowRow>> listWorkflows() override { return fakeUnsupported(); }
  Result<std::string> nextRunId() override { return "r-" + std::to_string(++next_run_); }
  Result<runs::RunRow> createRun(const runs::NewRun& nr, const core::Actor&) override {
    runs::RunRow run = nr.run;
    run.state = "running";
    for (const auto& g : nr.groups) {
      groups_[run.id].push_back(g.update.state);
      run.hosts.insert(run.hosts.end(), g.hosts.begin(), g.hosts.end());
    }
    runs_[run.id] = run;
    return run;
  }
  Result<runs::RunRow> getRun(const std::string& id) override {
    ++get_run_calls;
    auto it = runs_.find(id);
    if (it == runs_.end()) return notFound("no workflow run '" + id + "'");
    return it->second;
  }
  Result<std::optional<std::string>> runByOwner(const std::string& owner) override {
    for (const auto& [id, r] : runs_)
      if (r.owner == owner) return std::optional<std::string>(id);
    return std::optional<std::string>();
  }
  Result<std::vector<runs::GroupState>> runGroups(const std::string& id) override {
    ++run_groups_calls;
    return groups_[id];
  }
  Result<std::vector<runs::AssignmentRow>> runAssignments(const std::string&) override {
    return std::vector<runs::AssignmentRow>();
  }
  Result<core::Page<runs::RunRow>> listRuns(const runs::RunFilter&, const core::PageRequest&) override {
    return fakeUnsupported();
  }
  Status updateGroup(const std::string&, const std::string&, const runs::GroupFn&, const core::Actor&) override {
    return fakeUnsupported();
  }
  // As the SQL: fn on the group with its untaken assignments; the host transitions an update
  // carries are not applied (a rollout run's carry none).
  Status stopGroup(const std::string& run_id, const std::string& group, const runs::StopFn& fn,
                   const core::Actor&) override {
    auto run = runs_.find(run_id);
    if (run == runs_.end()) return notFound("no workflow run '" + run_id + "'");
    for (auto& g : groups_[run_id]) {
      if (g.group != group) continue;
      std::set<std::string> undispatched;
      for (const auto& h : g.hosts)
        if (!h.assignment_id.empty() && untaken.count(h.host)) undispatched.insert(h.assignment_id);
      auto update = fn(run->second, g, undispatched);
      if (!update.ok()) return update.error();
      g = std::move(update->state);
      return Ok{};
    }
    return notFound("no group '" + group + "' in run '" + run_id + "'");
  }
  Result<std::vector<std::pair<std::string, std::string>>> dueGroups(core::TimePoint, int) override {
    return fakeUnsupported();
  }
  Result<std::vector<std::string>> finalizeRuns(const VerdictFn&) override { return fakeUnsupported(); }
  Status cancelRun(const std::string&, const runs::GroupFn&, const core::Actor&) override { return fakeUnsupported(); }
  Result<std::optional<runs::AssignmentRow>> claimWork(const std::string&, std::int64_t) override {
    return fakeUnsupported();
  }
  Result<std::map<std::string, runs::AssignmentRow>> claimBatch(const std::vector<std::string>&,
                                                                std::int64_t) override {
    return fakeUnsupported();
  }
  Result<std::vector<Result<runs::ReportReply>>> reportBatch(const std::vector<runs::ReportItem>&,
                                                             std::int64_t) override {
    return fakeUnsupported();
  }
  Result<std::vector<runs::AssignmentRow>> expiredLeases(core::TimePoint, int) override { return fakeUnsupported(); }
  Result<bool> expireLease(const std::string&, int, const runs::GroupFn&) override { return fakeUnsupported(); }
  Result<std::vector<std::string>> hostsWithOpenWork() override { return fakeUnsupported(); }
  Result<std::optional<runs::AssignmentRow>> assignment(const std::string&) override { return fakeUnsupported(); }
  Result<core::NewToken> enrollAgent(const std::string&, const std::string&, const std::string&, const nlohmann::json&,
                                     const core::Actor&) override {
    return fakeUnsupported();
  }
  Status recordHeartbeats(const std::vector<runs::Heartbeat>&) override { return fakeUnsupported(); }
  Result<std::vector<std::string>> markUnreachable(core::TimePoint) override { return fakeUnsupported(); }
  Result<std::vector<runs::QuarantineRow>> quarantine() override { return fakeUnsupported(); }
  Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) override {
    ++run_states_calls;
    std::map<std::string, std::string> out;
    for (const auto& id : ids)
      if (auto it = runs_.find(id); it != runs_.end()) out[id] = it->second.state;
    return out;
  }

  std::map<std::string, runs::RunRow> runs_;

 private:
  static std::optional<runs::WorkflowRow> workflow(const std::string& name) {
    std::string yaml = kWorkflow;
    yaml.replace(yaml.find("NAME"), 4, name);
    return runs::WorkflowRow{name, "h1", "fake", yaml, {}};
  }
  int next_run_ = 0;
  std::map<std::string, std::vector<runs::GroupState>> groups_;
};

// The service (the API's side) and the controller (the passes) over the same fakes, as kilnd
// runs them: tick() is the controller's, the rest the service's.
class RolloutsUnderTest {
 public:
  RolloutsUnderTest(core::Store& fleet, RolloutStore& store, runs::RunService& runs, core::Clock& clock,
                    ControllerOptions options)
      : service_(fleet, store, runs, clock, {options.log}), controller_(fleet, store, runs, clock, std::move(options)) {}
  int tick() { return controller_.tick(); }
  Result<RolloutView> view(const std::string& id) { return service_.view(id); }
  Result<std::vector<RolloutPodRow>> pods(const std::string& id) { return service_.pods(id); }
  Result<RolloutView> verb(const std::string& id, const std::string& verb, const core::Actor& actor,
                           const std::string& reason = "") {
    return service_.verb(id, verb, actor, reason);
  }
  Result<RolloutView> podVerb(const std::string& id, const std::string& pod, const std::string& verb,
                              const core::Actor& actor, const std::string& reason = "") {
    return service_.podVerb(id, pod, verb, actor, reason);
  }
  Result<RolloutView> rollback(const std::string& id, const core::Actor& actor, const std::string& reason = "") {
    return service_.rollback(id, actor, reason);
  }
  Result<CreateOutcome> create(const CreateRequest& request, const core::Actor& actor) {
    return service_.create(request, actor);
  }

 private:
  RolloutService service_;
  RolloutController controller_;
};

}  // namespace kiln::rollouts::testing
