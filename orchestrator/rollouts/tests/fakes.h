#pragma once
// In-memory fakes for testing RolloutService and RolloutController without PostgreSQL: the
// fleet (pods, hosts and their lifecycle through core::nextState), the bundle catalog, the
// rollout store, and a run store that starts runs and lets the test finish them. Each counts
// the calls the controller's cost depends on. Not thread-safe unless said: the tests drive
// tick() from one thread.
//
// Complete (every method as the PostgreSQL store does it): FakeFleet for the fleet store's
// narrow parts (core::FleetHosts, FleetReads, HostListing, AuditLog: what the rollouts, the run
// service and the Slurm driver hold), FakeBundleCatalog, and FakeRolloutStore for RolloutStore
// and so for both sides' interfaces. FakeRunStore: see there.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
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

// The fakes' one lock, taken by each of their interface methods: a controller with reconcile
// threads calls them from several threads at once, as PgStore's pool serves it (and the fakes
// call each other: recursive).
inline std::recursive_mutex& fakesMutex() {
  static std::recursive_mutex mu;
  return mu;
}
struct FakesLock {
  std::lock_guard<std::recursive_mutex> guard{fakesMutex()};
};

// Pods "<building>-p<n>" of 18 catalina hosts "<pod>-h01".."-h18", all available; a pod's
// state follows its hosts' as the store keeps it. The parts of the fleet store its consumers
// hold (the rollout controller and service, the run service, the Slurm driver), each as PgStore
// does it; no GPUs or components are kept (getHost answers none). A transition stamps
// state_since with `clock`'s time when given, else the epoch.
class FakeFleet final : public core::FleetHosts, public core::FleetReads, public core::HostListing, public core::AuditLog {
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
  // Sets the state as a fixture does (no event, no audit record, state_since unchanged).
  void setState(const std::string& id, core::HostState state) {
    host(id)->state = state;
    refreshPodState(host(id)->pod);
  }
  core::HostState state(const std::string& id) { return host(id)->state; }

  int get_pod_calls = 0, hosts_of_pods_calls = 0, transition_batches = 0, transitions_applied = 0;

  // As the SQL: the pod's summary counts its hosts by state and the GPUs of those serving jobs.
  Result<core::PodDetail> getPod(const std::string& id) override {
    FakesLock fakes_lock;
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
  Result<std::map<std::string, std::vector<core::HostSummary>>> hostsOfPods(const std::vector<std::string>& ids) override {
    FakesLock fakes_lock;
    ++hosts_of_pods_calls;
    std::map<std::string, std::vector<core::HostSummary>> out;
    for (const auto& id : ids)
      if (auto it = pods_.find(id); it != pods_.end()) out[id] = it->second.hosts;
    return out;
  }
  Result<core::HostDetail> getHost(const std::string& id) override {
    FakesLock fakes_lock;
    auto* h = host(id);
    if (!h) return notFound("no host '" + id + "'");
    core::HostDetail d;
    d.host = *h;
    for (auto a : core::allowedActions(h->state)) d.allowed_actions.emplace_back(core::hostActionName(a));
    return d;
  }
  // As the SQL: every filter, the sort with id as the tie-break, keyset pages. The cursor is the
  // last id for the id order, else [the sort column as text, id] (state_since as microseconds
  // since the epoch here, a timestamp there: opaque either way).
  Result<core::Page<core::HostSummary>> listHosts(const core::HostFilter& f, const core::PageRequest& page) override {
    FakesLock fakes_lock;
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
        case core::HostSortKey::kId: return h.id;
        case core::HostSortKey::kPod: return h.pod;
        case core::HostSortKey::kState: return std::string(core::hostStateName(h.state));
        case core::HostSortKey::kReason: return h.state_reason;
        case core::HostSortKey::kStateSince: {
          const auto us = std::chrono::duration_cast<std::chrono::microseconds>(h.state_since.time_since_epoch()).count();
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
    std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
      return f.sort.descending ? a.first > b.first : a.first < b.first;
    });
    const std::size_t limit = static_cast<std::size_t>(std::clamp(page.limit, 1, 1000));
    core::Page<core::HostSummary> out;
    for (std::size_t i = 0; i < rows.size() && i < limit; ++i) out.items.push_back(*rows[i].second);
    if (rows.size() > limit) {
      const auto& last = rows[limit - 1].first;
      out.next_cursor = f.sort.key == core::HostSortKey::kId ? last.second : nlohmann::json::array({last.first, last.second}).dump();
    }
    return out;
  }
  Result<std::vector<Result<core::HostState>>> transitionHosts(const std::vector<core::HostTransition>& ts,
                                                               const core::Actor& actor) override {
                                                                 FakesLock fakes_lock;
    ++transition_batches;
    std::vector<Result<core::HostState>> out;
    for (const auto& t : ts) out.push_back(apply(t, actor));
    return out;
  }
  Status audit(const core::Actor& actor, const std::string& action, const std::string& target,
               const std::string& details_json) override {
                 FakesLock fakes_lock;
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
    record(actor, "host." + action, t.host,
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
                                                       FakesLock fakes_lock;
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
    FakesLock fakes_lock;
    if (auto* r = byRef(ref)) return std::optional<BundleRow>(*r);
    return std::optional<BundleRow>();
  }
  // As the SQL: newest first, then by id.
  Result<std::vector<BundleRow>> listBundles() override {
    FakesLock fakes_lock;
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
                                                       FakesLock fakes_lock;
    return bundles_.putBundle(b, actor, if_match);
  }
  Result<std::optional<BundleRow>> getBundle(const std::string& ref) override {
    FakesLock fakes_lock;
    return bundles_.getBundle(ref);
  }
  Result<std::vector<BundleRow>> listBundles() override {
    FakesLock fakes_lock;
    return bundles_.listBundles();
  }
  // As the SQL: the pods the selector's sites, buildings, platforms, pods and labels match (all
  // pods when it names none), by id, with the active rollout holding each.
  Result<std::vector<PodSnapshot>> podSnapshots(const Selector& s) override {
    FakesLock fakes_lock;
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
    FakesLock fakes_lock;
    std::string id;
    do id = "ro-" + std::to_string(++next_rollout_);
    while (rollouts_.count(id));
    return id;
  }
  // As the SQL: kConflict when a pod is in flight or pending in another active rollout; the
  // rollout starts in state created, its pods pending; its bundle counts as used from then on.
  Result<RolloutRow> createRollout(const RolloutRow& r, const std::vector<RolloutPodRow>& pods,
                                   const core::Actor& actor) override {
                                     FakesLock fakes_lock;
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
    FakesLock fakes_lock;
    auto it = rollouts_.find(id);
    if (it == rollouts_.end()) return notFound("no rollout '" + id + "'");
    return it->second;
  }
  Result<std::vector<RolloutPodRow>> rolloutPods(const std::string& id) override {
    FakesLock fakes_lock;
    auto it = pods_.find(id);
    if (it == pods_.end()) return std::vector<RolloutPodRow>();
    auto rows = it->second;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.position < b.position; });
    return rows;
  }
  // As the SQL: newest first by the number in the id, pages keyed by that number.
  Result<core::Page<RolloutRow>> listRollouts(std::optional<RolloutState> state, const core::PageRequest& page) override {
    FakesLock fakes_lock;
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
    FakesLock fakes_lock;
    std::lock_guard lock(mu_);
    std::vector<RolloutEventRow> out;
    for (auto it = events_.rbegin(); it != events_.rend() && static_cast<int>(out.size()) < limit; ++it)
      if (it->rollout == id) out.push_back({it->id, it->at, it->event});
    return out;
  }
  // Oldest first.
  Result<std::vector<std::string>> activeRollouts() override {
    FakesLock fakes_lock;
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
                                  FakesLock fakes_lock;
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
                      FakesLock fakes_lock;
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
    FakesLock fakes_lock;
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
    FakesLock fakes_lock;
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
    FakesLock fakes_lock;
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
    FakesLock fakes_lock;
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
    FakesLock fakes_lock;
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
                                                               FakesLock fakes_lock;
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
                                                            FakesLock fakes_lock;
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

// Runs, their groups and assignments in memory: startRun creates them, the engine moves them
// through updateGroup, stopGroup, cancelRun, reportBatch and expireLease (each the GroupFn the
// service gives, as the store applies it), and a test may also end a run at once (finishRun).
// Every method does what PgRunStore's SQL does, but:
// - workflows: a name never put answers a one-step host workflow (kWorkflow, hash "h1"), so
//   that tests need not store the ones they start; listWorkflows lists only those put;
// - which steps agents have taken: those claimed (claimWork, claimBatch, reportBatch's next),
//   and, for a stop, every one whose host is not in `untaken` (the tests' agents poll between
//   their steps);
// - the fleet: with a FakeFleet, run transitions move its hosts (refused ones skipped, start
//   transitions all or nothing), heartbeats set their last_seen, quarantine() reads them and
//   the fleet's audit records (repairs, the last failure); without one, transitions are not
//   applied and quarantine() answers kUnavailable. No inventory is kept (an agent's report or
//   enrolment writes no component versions), no host events are written, and enrollAgent
//   answers kUnavailable: tokens are the wide fleet store's, not a part the fake fleet keeps.
// Times the database stamps with now() come from `clock` when given, else they are the epoch.
class FakeRunStore final : public runs::RunStore {
 public:
  explicit FakeRunStore(FakeFleet* fleet = nullptr, const core::Clock* clock = nullptr) : fleet_(fleet), clock_(clock) {}

  // A one-step host workflow under every name never put.
  static constexpr const char* kWorkflow =
      "name: NAME\nversion: \"1\"\ndescription: fake\nscope: host\ntimeout: 10m\n"
      "steps:\n  - id: work\n    run: [true]\n    timeout: 1m\n";

  // Ends the run: `failed` hosts fail (with a reason), the others pass, but a host a stop
  // already ended (withdrawn: cancelled) stays so; its open steps are done (as if reported);
  // the run's state is the real verdict's.
  void finishRun(const std::string& id, const std::set<std::string>& failed = {}) {
    auto& run = runs_.at(id);
    for (auto& g : groups_[id])
      for (auto& h : g.hosts) {
        if (runs::isTerminal(h.status)) continue;
        h.status = failed.count(h.host) ? runs::HostStatus::kFailed : runs::HostStatus::kPassed;
        if (failed.count(h.host)) h.failures = {"flash failed"};
      }
    for (auto& a : assignments_)
      if (a.run_id == id && (a.state == "pending" || a.state == "dispatched")) {
        a.state = "done";
        a.finished_at = now();
      }
    for (const auto& g : groups_[id]) wake_.erase({id, g.group});
    run.state = runs::runVerdict(run, groups_[id]).first;
  }
  const std::vector<runs::GroupState>& groupsOf(const std::string& run) { return groups_[run]; }

  // Hosts whose agents have not taken their pending steps when a stop comes: it withdraws them.
  std::set<std::string> untaken;
  std::vector<std::string> runsOf(const std::string& workflow) const {
    std::vector<std::string> out;
    for (const auto& [id, r] : runs_)
      if (r.workflow == workflow) out.push_back(id);
    return out;
  }

  int get_run_calls = 0, run_groups_calls = 0, run_states_calls = 0;
  std::optional<Error> fail_agent_work;  // set: claimWork, claimBatch and reportBatch answer it

  // As the SQL: a version is kept once by hash; the current one changes (and is audited, when
  // there is a fleet) only when the hash does.
  Status putWorkflow(const runs::WorkflowRow& w, const core::Actor& actor,
                     const std::optional<core::IfMatch>& if_match) override {
                       FakesLock fakes_lock;
    auto current = currentWorkflow(w.name);
    if (if_match) {
      std::optional<std::string> etag;
      if (*current) etag = runs::workflowEtag((*current)->hash);
      if (!if_match->matches(etag)) return core::preconditionFailed("workflow '" + w.name + "'", etag);
    }
    auto& versions = versions_[w.name];
    if (!versions.count(w.hash)) {
      versions[w.hash] = w;
      versions[w.hash].updated_at = now();
    }
    if (auto it = current_.find(w.name); it != current_.end() && it->second.first == w.hash) return Ok{};
    current_[w.name] = {w.hash, now()};
    if (fleet_) (void)fleet_->audit(actor, "workflow.put", w.name, nlohmann::json{{"hash", w.hash}, {"source", w.source}}.dump());
    return Ok{};
  }
  Result<std::optional<runs::WorkflowRow>> currentWorkflow(const std::string& name) override {
    FakesLock fakes_lock;
    auto it = current_.find(name);
    if (it == current_.end()) return builtIn(name);
    runs::WorkflowRow w = versions_.at(name).at(it->second.first);
    w.updated_at = it->second.second;
    return std::optional<runs::WorkflowRow>(w);
  }
  Result<std::optional<runs::WorkflowRow>> workflowVersion(const std::string& name, const std::string& hash) override {
    FakesLock fakes_lock;
    if (auto it = versions_.find(name); it != versions_.end())
      if (auto v = it->second.find(hash); v != it->second.end()) return std::optional<runs::WorkflowRow>(v->second);
    if (!current_.count(name) && hash == kBuiltInHash) return builtIn(name);
    return std::optional<runs::WorkflowRow>();
  }
  // The workflows put, by name.
  Result<std::vector<runs::WorkflowRow>> listWorkflows() override {
    FakesLock fakes_lock;
    std::vector<runs::WorkflowRow> out;
    for (const auto& [name, _] : current_) out.push_back(**currentWorkflow(name));
    return out;
  }
  Result<std::string> nextRunId() override {
    FakesLock fakes_lock;
    return "r-" + std::to_string(++next_run_);
  }
  // As the SQL, in one go: an owner or Idempotency-Key already taken is kConflict, a start
  // transition the host's state refuses fails the run, and nothing is written then.
  Result<runs::RunRow> createRun(const runs::NewRun& nr, const core::Actor& actor) override {
    FakesLock fakes_lock;
    runs::RunRow run = nr.run;
    if (!run.owner.empty())
      for (const auto& [_, r] : runs_)
        if (r.owner == run.owner) return conflict("a run of owner '" + run.owner + "' exists");
    if (nr.claim && idempotency_keys_.count(nr.claim->key))
      return Error(conflict("Idempotency-Key '" + nr.claim->key + "' was taken by another request"))
          .with("idempotency_key", nr.claim->key)
          .with("reason", std::string(core::kIdempotencyKeyTaken));
    if (fleet_ && !nr.start_transitions.empty()) {
      std::map<std::string, core::HostState> states;
      for (const auto& t : nr.start_transitions) {
        auto* h = fleet_->host(t.host);
        if (!h) return notFound("no host '" + t.host + "'");
        auto from = states.try_emplace(t.host, h->state).first;
        auto next = core::nextState(from->second, t.action, t.override_to);
        if (!next.ok()) {
          next.error().with("host", t.host);
          return next.error();
        }
        from->second = *next;
      }
      applyTransitions(nr.start_transitions, actor);
    }
    if (nr.claim) idempotency_keys_.insert(nr.claim->key);
    run.state = "running";
    run.created_by = actor.token_id;
    run.created_at = now();
    run.hosts.clear();
    run.pods.clear();
    runs_[run.id] = run;
    for (const auto& g : nr.groups) {
      groups_[run.id].push_back(g.update.state);
      runs_[run.id].hosts.insert(runs_[run.id].hosts.end(), g.hosts.begin(), g.hosts.end());
      persist(run, g.key, g.update, actor);
    }
    return run;
  }
  Result<runs::RunRow> getRun(const std::string& id) override {
    FakesLock fakes_lock;
    ++get_run_calls;
    auto it = runs_.find(id);
    if (it == runs_.end()) return notFound("no workflow run '" + id + "'");
    runs::RunRow run = it->second;
    std::sort(run.hosts.begin(), run.hosts.end());
    return run;
  }
  Result<std::optional<std::string>> runByOwner(const std::string& owner) override {
    FakesLock fakes_lock;
    for (const auto& [id, r] : runs_)
      if (r.owner == owner) return std::optional<std::string>(id);
    return std::optional<std::string>();
  }
  // By group key.
  Result<std::vector<runs::GroupState>> runGroups(const std::string& id) override {
    FakesLock fakes_lock;
    ++run_groups_calls;
    auto it = groups_.find(id);
    if (it == groups_.end()) return std::vector<runs::GroupState>();
    auto out = it->second;
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.group < b.group; });
    return out;
  }
  // In the order they were dispatched.
  Result<std::vector<runs::AssignmentRow>> runAssignments(const std::string& id) override {
    FakesLock fakes_lock;
    std::vector<runs::AssignmentRow> out;
    for (const auto& a : assignments_)
      if (a.run_id == id) out.push_back(a);
    return out;
  }
  // As the SQL: newest first by the number in the id, every filter; a run's pods are the first
  // 4 of its hosts' (from the pod.id the service gave each host), sorted.
  Result<core::Page<runs::RunRow>> listRuns(const runs::RunFilter& f, const core::PageRequest& page) override {
    FakesLock fakes_lock;
    std::int64_t before = std::numeric_limits<std::int64_t>::max();
    if (!page.cursor.empty()) {
      auto n = number(page.cursor);
      if (!n) return invalidArgument("cursor is not valid");
      before = *n;
    }
    std::vector<std::pair<std::int64_t, const runs::RunRow*>> rows;
    for (const auto& [id, r] : runs_) {
      auto n = number(id.substr(std::min<std::size_t>(2, id.size())));
      if (!n || *n >= before) continue;
      if ((!f.workflow.empty() && r.workflow != f.workflow) || (!f.state.empty() && r.state != f.state) ||
          (!f.purpose.empty() && r.purpose != f.purpose))
        continue;
      if (!f.host.empty() && std::find(r.hosts.begin(), r.hosts.end(), f.host) == r.hosts.end()) continue;
      rows.emplace_back(*n, &r);
    }
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const auto limit = static_cast<std::size_t>(std::clamp(page.limit, 1, 1000));
    core::Page<runs::RunRow> out;
    for (std::size_t i = 0; i < rows.size() && i < limit; ++i) {
      runs::RunRow run = *rows[i].second;
      run.hosts.clear();
      std::set<std::string> pods;
      for (const auto& g : groups_[run.id])
        for (const auto& h : g.hosts)
          if (auto p = h.fields.find("pod.id"); p != h.fields.end()) pods.insert(p->second);
      for (const auto& p : pods)
        if (run.pods.size() < 4) run.pods.push_back(p);
      out.items.push_back(std::move(run));
    }
    if (rows.size() > limit) out.next_cursor = std::to_string(rows[limit - 1].first);
    return out;
  }
  Status updateGroup(const std::string& run_id, const std::string& group, const runs::GroupFn& fn,
                     const core::Actor& actor) override {
                       FakesLock fakes_lock;
    auto* g = findGroup(run_id, group);
    if (!g) return notFound("no group '" + group + "' in run '" + run_id + "'");
    auto update = fn(runs_.at(run_id), *g);
    if (!update.ok()) return update.error();
    persist(runs_.at(run_id), group, *update, actor);
    return Ok{};
  }
  // As the SQL: fn on the group with its pending assignments that no agent has taken (see the
  // class comment).
  Status stopGroup(const std::string& run_id, const std::string& group, const runs::StopFn& fn,
                   const core::Actor& actor) override {
                     FakesLock fakes_lock;
    auto* g = findGroup(run_id, group);
    if (!g) return notFound("no group '" + group + "' in run '" + run_id + "'");
    std::set<std::string> undispatched;
    for (const auto& a : assignments_)
      if (a.run_id == run_id && a.group_key == group && a.state == "pending" && untaken.count(a.host))
        undispatched.insert(a.id);
    auto update = fn(runs_.at(run_id), *g, undispatched);
    if (!update.ok()) return update.error();
    persist(runs_.at(run_id), group, *update, actor);
    return Ok{};
  }
  // Groups not done whose timer is due, the earliest first.
  Result<std::vector<std::pair<std::string, std::string>>> dueGroups(core::TimePoint at, int limit) override {
    FakesLock fakes_lock;
    std::vector<std::pair<core::TimePoint, std::pair<std::string, std::string>>> due;
    for (const auto& [key, wake] : wake_)
      if (wake <= at) due.emplace_back(wake, key);
    std::stable_sort(due.begin(), due.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [_, key] : due)
      if (static_cast<int>(out.size()) < limit) out.push_back(key);
    return out;
  }
  // Running runs whose groups are all done get `verdict`'s state and summary.
  Result<std::vector<std::string>> finalizeRuns(const VerdictFn& verdict) override {
    FakesLock fakes_lock;
    std::vector<std::string> out;
    for (auto& [id, run] : runs_) {
      if (run.state != "running") continue;
      const auto& groups = groups_[id];
      if (!std::all_of(groups.begin(), groups.end(), [](const auto& g) { return runs::Engine::done(g); })) continue;
      auto [state, summary] = verdict(run, groups);
      run.state = state;
      run.summary = summary;
      run.finished_at = now();
      if (fleet_) (void)fleet_->audit({"system", "kilnd"}, "run.finish", id, nlohmann::json{{"state", state}}.dump());
      out.push_back(id);
    }
    return out;
  }
  Status cancelRun(const std::string& id, const runs::GroupFn& fn, const core::Actor& actor) override {
    FakesLock fakes_lock;
    auto run = runs_.find(id);
    if (run == runs_.end()) return notFound("no workflow run '" + id + "'");
    if (run->second.state != "running")
      return conflict("run '" + id + "' is already " + run->second.state).with("state", run->second.state);
    // All groups or none, as one transaction.
    std::vector<std::pair<std::string, runs::GroupUpdate>> updates;
    for (const auto& g : groups_[id]) {
      if (runs::Engine::done(g)) continue;
      auto update = fn(run->second, g);
      if (!update.ok()) return update.error();
      updates.emplace_back(g.group, std::move(*update));
    }
    for (const auto& [group, update] : updates) persist(run->second, group, update, actor);
    run->second.state = "cancelled";
    run->second.finished_at = now();
    run->second.summary["cancelled"] = true;
    if (fleet_) (void)fleet_->audit(actor, "run.cancel", id, "{}");
    return Ok{};
  }
  Result<std::optional<runs::AssignmentRow>> claimWork(const std::string& host, std::int64_t grace_ms) override {
    FakesLock fakes_lock;
    if (fail_agent_work) return *fail_agent_work;
    auto claimed = claim({host}, grace_ms);
    if (claimed.empty()) return std::optional<runs::AssignmentRow>();
    return std::optional<runs::AssignmentRow>(claimed.begin()->second);
  }
  Result<std::map<std::string, runs::AssignmentRow>> claimBatch(const std::vector<std::string>& hosts,
                                                                std::int64_t grace_ms) override {
                                                                  FakesLock fakes_lock;
    if (fail_agent_work) return *fail_agent_work;
    return claim(hosts, grace_ms);
  }
  // As the SQL: a report on its assignment's live lease is accepted (first in the batch; a
  // repeat is then a duplicate), one on a cancelled assignment kept, the rest stale; each
  // group's accepted reports through their fns in batch order; the hosts that asked get their
  // next step. A failing fn fails the batch and writes nothing.
  Result<std::vector<Result<runs::ReportReply>>> reportBatch(const std::vector<runs::ReportItem>& items,
                                                             std::int64_t grace_ms) override {
                                                               FakesLock fakes_lock;
    if (fail_agent_work) return *fail_agent_work;
    const auto saved_runs = runs_;
    const auto saved_groups = groups_;
    const auto saved_wake = wake_;
    const auto saved_assignments = assignments_;
    std::vector<Result<runs::ReportReply>> replies(items.size(), Result<runs::ReportReply>(runs::ReportReply{}));
    std::vector<std::pair<core::HostTransition, core::Actor>> transitions;
    std::set<std::string> touched_runs;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& it = items[i];
      auto* a = findAssignment(it.assignment_id);
      if (!a) {
        replies[i] = notFound("no assignment '" + it.assignment_id + "'");
        continue;
      }
      if (a->host != it.host) {
        replies[i] = Error(ErrorCode::kPermissionDenied, "assignment '" + it.assignment_id + "' belongs to another host");
        continue;
      }
      if (a->state == "dispatched" && a->lease == it.lease) {
        a->state = "done";
        a->finished_at = now();
        a->result = *it.result;
        replies[i]->outcome = runs::ReportOutcome::kAccepted;
        auto* g = findGroup(a->run_id, a->group_key);
        auto u = it.fn(runs_.at(a->run_id), *g);
        if (!u.ok()) {
          runs_ = saved_runs;
          groups_ = saved_groups;
          wake_ = saved_wake;
          assignments_ = saved_assignments;
          return u.error();
        }
        const std::string run_id = a->run_id, group = a->group_key;  // persist may move assignments_
        for (auto& t : u->transitions) transitions.emplace_back(std::move(t), core::Actor{"agent:" + it.host, it.host});
        u->transitions.clear();
        persist(runs_.at(run_id), group, *u, {});
        if (runs::Engine::done(*findGroup(run_id, group))) touched_runs.insert(run_id);
      } else if (a->state == "done" && a->lease == it.lease) {
        replies[i]->outcome = runs::ReportOutcome::kDuplicate;
      } else if (a->state == "cancelled") {
        if (a->result.is_null()) a->result = *it.result;
        replies[i]->outcome = runs::ReportOutcome::kCancelled;
      } else {
        replies[i]->outcome = runs::ReportOutcome::kStale;
      }
    }
    for (const auto& run_id : touched_runs) {
      const auto& groups = groups_[run_id];
      if (!std::all_of(groups.begin(), groups.end(), [](const auto& g) { return runs::Engine::done(g); })) continue;
      for (std::size_t i = 0; i < items.size(); ++i)
        if (auto* a = findAssignment(items[i].assignment_id); replies[i].ok() && a && a->run_id == run_id)
          replies[i]->run_complete = true;
    }
    std::stable_sort(transitions.begin(), transitions.end(),
                     [](const auto& a, const auto& b) { return a.first.host < b.first.host; });
    for (const auto& [t, actor] : transitions) applyTransitions({t}, actor);
    std::map<std::string, std::size_t> claim_for;  // a host with several reports gets it with its last
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i].claim_next && replies[i].ok() && replies[i]->outcome != runs::ReportOutcome::kStale)
        claim_for[items[i].host] = i;
    std::vector<std::string> hosts;
    for (const auto& [h, _] : claim_for) hosts.push_back(h);
    for (auto& [h, row] : claim(hosts, grace_ms)) replies[claim_for.at(h)]->next = std::move(row);
    return replies;
  }
  // Dispatched assignments whose lease ran out, the earliest first.
  Result<std::vector<runs::AssignmentRow>> expiredLeases(core::TimePoint at, int limit) override {
    FakesLock fakes_lock;
    std::vector<runs::AssignmentRow> out;
    for (const auto& a : assignments_)
      if (a.state == "dispatched" && a.lease_expires_at && *a.lease_expires_at < at) out.push_back(a);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return *a.lease_expires_at < *b.lease_expires_at; });
    if (static_cast<int>(out.size()) > limit) out.resize(static_cast<std::size_t>(std::max(limit, 0)));
    return out;
  }
  // Marks the assignment lost and applies fn, if it is still dispatched on that lease.
  Result<bool> expireLease(const std::string& id, int lease, const runs::GroupFn& fn) override {
    FakesLock fakes_lock;
    auto* a = findAssignment(id);
    if (!a || a->state != "dispatched" || a->lease != lease) return false;
    auto* g = findGroup(a->run_id, a->group_key);
    if (!g) return notFound("no group '" + a->group_key + "' in run '" + a->run_id + "'");
    auto update = fn(runs_.at(a->run_id), *g);
    if (!update.ok()) return update.error();
    a->state = "lost";
    a->finished_at = now();
    const std::string run_id = a->run_id, group = a->group_key;
    persist(runs_.at(run_id), group, *update, {"system", "kilnd"});
    return true;
  }
  Result<std::vector<std::string>> hostsWithOpenWork() override {
    FakesLock fakes_lock;
    std::set<std::string> hosts;
    for (const auto& a : assignments_)
      if (a.state == "pending" || a.state == "dispatched") hosts.insert(a.host);
    return std::vector<std::string>(hosts.begin(), hosts.end());
  }
  Result<std::optional<runs::AssignmentRow>> assignment(const std::string& id) override {
    FakesLock fakes_lock;
    if (auto* a = findAssignment(id)) return std::optional<runs::AssignmentRow>(*a);
    return std::optional<runs::AssignmentRow>();
  }
  Result<core::NewToken> enrollAgent(const std::string&, const std::string&, const std::string&, const nlohmann::json&,
                                     const core::Actor&) override {
                                       FakesLock fakes_lock;
    return unavailable("FakeRunStore issues no agent tokens");
  }
  // Each host's last poll, kept on the fake fleet's hosts when there is one (unknown hosts
  // ignored there); an unreachable host is reachable again.
  Status recordHeartbeats(const std::vector<runs::Heartbeat>& beats) override {
    FakesLock fakes_lock;
    for (const auto& b : beats) {
      unreachable_.erase(b.host);
      if (!fleet_) last_seen_[b.host] = b.at;
      else if (auto* h = fleet_->host(b.host)) h->last_seen = b.at;
    }
    return Ok{};
  }
  // Hosts whose last poll is older than `cutoff` (retired ones left out), once until they poll again.
  Result<std::vector<std::string>> markUnreachable(core::TimePoint cutoff) override {
    FakesLock fakes_lock;
    std::map<std::string, core::TimePoint> seen = last_seen_;
    if (fleet_)
      for (const auto& [_, d] : fleet_->pods_)
        for (const auto& h : d.hosts)
          if (h.last_seen && h.state != core::HostState::kRetired) seen[h.id] = *h.last_seen;
    std::vector<std::string> out;
    for (const auto& [host, at] : seen) {
      if (at >= cutoff || unreachable_.count(host)) continue;
      unreachable_.insert(host);
      out.push_back(host);
    }
    return out;
  }
  // As the SQL, from the fake fleet: its quarantined hosts (oldest first), their repairs and
  // last failure from its audit records, and the newest quarantine-validation run of each.
  Result<std::vector<runs::QuarantineRow>> quarantine() override {
    FakesLock fakes_lock;
    if (!fleet_) return unavailable("FakeRunStore::quarantine reads a FakeFleet: construct the store with one");
    std::vector<runs::QuarantineRow> out;
    for (const auto& [_, d] : fleet_->pods_)
      for (const auto& h : d.hosts)
        if (h.state == core::HostState::kQuarantine) out.push_back({h, 0, "", "", "", nullptr});
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return std::tie(a.host.state_since, a.host.id) < std::tie(b.host.state_since, b.host.id);
    });
    const auto audits = fleet_->audits();
    for (auto& q : out) {
      for (const auto& r : audits) {
        if (r.target != q.host.id) continue;
        if (r.action == "host.repair_complete") ++q.repairs;
        if (r.action == "host.quarantine_fail" || r.action == "host.fail" || r.action == "host.validation_fail" ||
            r.action == "host.burn_in_fail")
          if (auto d = nlohmann::json::parse(r.details_json, nullptr, false); d.is_object())
            q.last_failure = d.value("reason", "");
      }
      std::int64_t newest = 0;
      for (const auto& [id, run] : runs_) {
        const auto n = number(id.substr(std::min<std::size_t>(2, id.size()))).value_or(0);
        if (run.purpose != "quarantine" || n <= newest ||
            std::find(run.hosts.begin(), run.hosts.end(), q.host.id) == run.hosts.end())
          continue;
        newest = n;
        q.run_id = id;
        q.run_state = run.state;
      }
      if (q.run_id.empty()) continue;
      if (auto* g = findGroup(q.run_id, q.host.id); g && !g->hosts.empty()) {
        const auto& h = g->hosts[0];
        q.progress = {{"pass", h.pass}, {"step_index", h.step_index}, {"status", runs::hostStatusName(h.status)}};
        core::putTime(q.progress, "waiting_until", h.not_before);
      }
    }
    return out;
  }
  Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) override {
    FakesLock fakes_lock;
    ++run_states_calls;
    std::map<std::string, std::string> out;
    for (const auto& id : ids)
      if (auto it = runs_.find(id); it != runs_.end()) out[id] = it->second.state;
    return out;
  }

  std::map<std::string, runs::RunRow> runs_;

 private:
  static constexpr const char* kBuiltInHash = "h1";
  static std::optional<runs::WorkflowRow> builtIn(const std::string& name) {
    std::string yaml = kWorkflow;
    yaml.replace(yaml.find("NAME"), 4, name);
    return runs::WorkflowRow{name, kBuiltInHash, "fake", yaml, {}};
  }
  static std::optional<std::int64_t> number(const std::string& text) {
    std::int64_t n = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, n);
    if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
    return n;
  }
  core::TimePoint now() const { return clock_ ? clock_->now() : core::TimePoint{}; }
  runs::GroupState* findGroup(const std::string& run_id, const std::string& group) {
    auto it = groups_.find(run_id);
    if (it == groups_.end() || !runs_.count(run_id)) return nullptr;
    for (auto& g : it->second)
      if (g.group == group) return &g;
    return nullptr;
  }
  runs::AssignmentRow* findAssignment(const std::string& id) {
    for (auto& a : assignments_)
      if (a.id == id) return &a;
    return nullptr;
  }
  // As persistUpdates: the group's new state and timer, the assignments it dispatched
  // (pending) or cancelled, its host transitions.
  void persist(const runs::RunRow& run, const std::string& group, const runs::GroupUpdate& u, const core::Actor& actor) {
    *findGroup(run.id, group) = u.state;
    const bool done = runs::Engine::done(u.state);
    if (u.effects.next_wakeup && !done) wake_[{run.id, group}] = *u.effects.next_wakeup;
    else wake_.erase({run.id, group});
    for (const auto& d : u.effects.dispatches) {
      runs::AssignmentRow a;
      a.id = d.assignment_id;
      a.run_id = run.id;
      a.group_key = group;
      a.host = d.host;
      a.step_id = d.step_id;
      a.attempt = d.attempt;
      a.type = d.type;
      a.argv = d.argv;
      a.timeout_ms = d.timeout_ms;
      a.parse = d.parse;
      a.inventory_after = d.inventory_after;
      a.state = "pending";
      assignments_.push_back(std::move(a));
    }
    for (const auto& id : u.effects.cancel_assignments)
      if (auto* a = findAssignment(id); a && (a->state == "pending" || a->state == "dispatched")) {
        a->state = "cancelled";
        a->finished_at = now();
      }
    applyTransitions(u.transitions, actor);
  }
  // A transition the host's state refuses is skipped (the run's verdict stands), as the store does.
  void applyTransitions(const std::vector<core::HostTransition>& ts, const core::Actor& actor) {
    if (!fleet_ || ts.empty()) return;
    (void)fleet_->transitionHosts(ts, actor);
  }
  // As the claim SQL, per host: a dispatched step whose lease is live again (same lease, from
  // now), else its oldest pending one with a new lease.
  std::map<std::string, runs::AssignmentRow> claim(const std::vector<std::string>& hosts, std::int64_t grace_ms) {
    std::map<std::string, runs::AssignmentRow> out;
    const auto at = now();
    for (const auto& host : hosts) {
      runs::AssignmentRow* pick = nullptr;
      for (auto& a : assignments_) {
        if (a.host != host) continue;
        if (a.state == "dispatched" && a.lease_expires_at && *a.lease_expires_at > at) {
          if (!pick || pick->state == "pending" || *a.dispatched_at < *pick->dispatched_at) pick = &a;
        } else if (a.state == "pending" && !pick) {
          pick = &a;  // assignments_ is in creation order
        }
      }
      if (!pick) continue;
      if (pick->state == "pending") {
        pick->state = "dispatched";
        ++pick->lease;
        pick->dispatched_at = at;
      }
      pick->lease_expires_at = at + std::chrono::milliseconds(pick->timeout_ms + grace_ms);
      out.emplace(host, *pick);
    }
    return out;
  }

  FakeFleet* fleet_;
  const core::Clock* clock_;
  int next_run_ = 0;
  std::map<std::string, std::vector<runs::GroupState>> groups_;
  std::map<std::pair<std::string, std::string>, core::TimePoint> wake_;  // (run, group) -> timer, groups not done
  std::vector<runs::AssignmentRow> assignments_;                         // in creation order
  std::map<std::string, std::map<std::string, runs::WorkflowRow>> versions_;         // name -> hash -> version
  std::map<std::string, std::pair<std::string, core::TimePoint>> current_;            // name -> hash, updated_at
  std::set<std::string> idempotency_keys_;
  std::map<std::string, core::TimePoint> last_seen_;  // without a fleet
  std::set<std::string> unreachable_;
};

// The service (the API's side) and the controller (the passes) over the same fakes, as kilnd
// runs them: tick() is the controller's, the rest the service's.
class RolloutsUnderTest {
 public:
  RolloutsUnderTest(FakeFleet& fleet, RolloutStore& store, runs::RunService& runs, core::Clock& clock,
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
