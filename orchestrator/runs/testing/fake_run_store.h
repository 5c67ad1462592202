#pragma once
// An in-memory fake of runs::RunStore for tests without PostgreSQL: it starts runs and lets the
// test finish them, and counts the calls the rollout controller's cost depends on. Its
// interface methods take the fakes' one lock (core/testing/fakes_lock.h); the rest is for a
// test's own thread. orchestrator/db/tests/run_store_contract_test.cc holds it and PgRunStore
// to the same cases.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/runner_key.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/core/store.h"
#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/core/testing/fakes_lock.h"
#include "orchestrator/runs/report_decision.h"
#include "orchestrator/runs/run_service.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/workflow_audit.h"

namespace kiln::runs::testing {

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
//   enrolment writes no component versions; read-back steps' versions are, in deviceVersions()),
//   no host events are written, and enrollAgent
//   and issueEnrolment answer kUnavailable: tokens are the wide fleet store's, not a part the fake
//   fleet keeps (the enrolment rule is core::decideEnrolment, tested alone).
// Times the database stamps with now() come from `clock` when given, else they are the epoch.
class FakeRunStore final : public runs::RunStore {
 public:
  explicit FakeRunStore(core::testing::FakeFleet* fleet = nullptr, const core::Clock* clock = nullptr)
      : fleet_(fleet), clock_(clock) {}

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

  int get_run_calls = 0, run_groups_calls = 0, run_states_calls = 0, hosts_with_open_work_calls = 0;
  std::optional<Error> fail_agent_work;  // set: claimWork, claimBatch and reportBatch answer it
  std::optional<Error> fail_heartbeats;  // set: recordHeartbeats answers it, writing nothing
  // The beats of every recordHeartbeats call, in call order, written or not.
  // The versions read-back steps recorded (runs/read_back.h): (device, kind) -> version.
  const std::map<std::pair<std::string, std::string>, std::string>& deviceVersions() const { return device_versions_; }
  std::vector<std::vector<runs::Heartbeat>> heartbeatBatches() const {
    core::testing::FakesLock fakes_lock;
    return heartbeat_batches_;
  }

  // As the SQL: a version is kept once by hash; the current one changes (and is audited with
  // runs::workflowChangeAudit, when there is a fleet) only when the hash does.
  Status putWorkflow(const runs::WorkflowRow& w, const core::Actor& actor,
                     const std::optional<core::IfMatch>& if_match) override {
    return putVersion(w, actor, if_match, false);
  }
  Status putWorkflowFile(const runs::WorkflowRow& w, const core::Actor& actor,
                         const std::optional<core::IfMatch>& if_match) override {
    return putVersion(w, actor, if_match, true);
  }
  Result<std::optional<runs::WorkflowRow>> currentWorkflow(const std::string& name) override {
    core::testing::FakesLock fakes_lock;
    auto it = current_.find(name);
    if (it == current_.end()) return builtIn(name);
    runs::WorkflowRow w = versions_.at(name).at(it->second.first);
    w.updated_at = it->second.second;
    if (auto f = file_hash_.find(name); f != file_hash_.end()) w.file_hash = f->second;
    return std::optional<runs::WorkflowRow>(w);
  }
  // Newest first; of equal times (no clock), the one put later first.
  Result<std::vector<runs::WorkflowVersionInfo>> workflowVersions(const std::string& name) override {
    core::testing::FakesLock fakes_lock;
    std::vector<runs::WorkflowVersionInfo> out;
    auto log = version_log_.find(name);
    if (log == version_log_.end() || !current_.count(name)) return out;
    for (auto v = log->second.rbegin(); v != log->second.rend(); ++v) {
      const auto& [hash, created_by] = *v;
      auto f = file_hash_.find(name);
      out.push_back({hash, versions_.at(name).at(hash).source, created_by, versions_.at(name).at(hash).updated_at,
                     current_.at(name).first == hash, f != file_hash_.end() && f->second == hash});
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.created_at > b.created_at; });
    return out;
  }
  Result<std::optional<runs::WorkflowRow>> workflowVersion(const std::string& name, const std::string& hash) override {
    core::testing::FakesLock fakes_lock;
    if (auto it = versions_.find(name); it != versions_.end())
      if (auto v = it->second.find(hash); v != it->second.end()) return std::optional<runs::WorkflowRow>(v->second);
    if (!current_.count(name) && hash == kBuiltInHash) return builtIn(name);
    return std::optional<runs::WorkflowRow>();
  }
  // The workflows put, by name.
  Result<std::vector<runs::WorkflowRow>> listWorkflows() override {
    core::testing::FakesLock fakes_lock;
    std::vector<runs::WorkflowRow> out;
    for (const auto& [name, _] : current_) out.push_back(**currentWorkflow(name));
    return out;
  }
  Result<std::string> nextRunId() override {
    core::testing::FakesLock fakes_lock;
    return "r-" + std::to_string(++next_run_);
  }
  // As the SQL, in one go: an owner or Idempotency-Key already taken is kConflict, a start
  // transition the host's state refuses fails the run, and nothing is written then.
  Result<runs::RunRow> createRun(const runs::NewRun& nr, const core::Actor& actor) override {
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
    ++get_run_calls;
    auto it = runs_.find(id);
    if (it == runs_.end()) return notFound("no workflow run '" + id + "'");
    runs::RunRow run = it->second;
    std::sort(run.hosts.begin(), run.hosts.end());
    return run;
  }
  Result<std::optional<std::string>> runByOwner(const std::string& owner) override {
    core::testing::FakesLock fakes_lock;
    for (const auto& [id, r] : runs_)
      if (r.owner == owner) return std::optional<std::string>(id);
    return std::optional<std::string>();
  }
  // By group key.
  Result<std::vector<runs::GroupState>> runGroups(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    ++run_groups_calls;
    auto it = groups_.find(id);
    if (it == groups_.end()) return std::vector<runs::GroupState>();
    auto out = it->second;
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.group < b.group; });
    return out;
  }
  // In the order they were dispatched.
  Result<std::vector<runs::AssignmentRow>> runAssignments(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    std::vector<runs::AssignmentRow> out;
    for (const auto& a : assignments_)
      if (a.run_id == id) out.push_back(a);
    return out;
  }
  // As the SQL: newest first by the number in the id, every filter; a run's pods are the first
  // 4 of its hosts' (from the pod.id the service gave each host), sorted.
  Result<core::Page<runs::RunRow>> listRuns(const runs::RunFilter& f, const core::PageRequest& page) override {
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
    if (fail_agent_work) return *fail_agent_work;
    auto claimed = claim({host}, grace_ms);
    if (claimed.empty()) return std::optional<runs::AssignmentRow>();
    return std::optional<runs::AssignmentRow>(claimed.begin()->second);
  }
  Result<std::map<std::string, runs::AssignmentRow>> claimBatch(const std::vector<std::string>& hosts,
                                                                std::int64_t grace_ms) override {
    core::testing::FakesLock fakes_lock;
    if (fail_agent_work) return *fail_agent_work;
    return claim(hosts, grace_ms);
  }
  // As the SQL: a report on its assignment's live lease is accepted (first in the batch; a
  // repeat is then a duplicate), one on a cancelled assignment kept, the rest stale; each
  // group's accepted reports through their fns in batch order; the hosts that asked get their
  // next step. A failing fn fails the batch and writes nothing.
  Result<std::vector<Result<runs::ReportReply>>> reportBatch(const std::vector<runs::ReportItem>& items,
                                                             std::int64_t grace_ms) override {
    core::testing::FakesLock fakes_lock;
    if (fail_agent_work) return *fail_agent_work;
    const auto saved_runs = runs_;
    const auto saved_groups = groups_;
    const auto saved_wake = wake_;
    const auto saved_assignments = assignments_;
    std::vector<Result<runs::ReportReply>> replies(items.size(), Result<runs::ReportReply>(runs::ReportReply{}));
    // The rules are runs::decideReports and runs::mergeReports, as in PgRunStore.
    std::map<std::string, runs::LockedAssignment> rows;
    for (const auto& it : items)
      if (const auto* a = findAssignment(it.assignment_id))
        rows[a->id] = {kiln::workerKey(a->host, a->runner), a->run_id, a->group_key, a->state, a->lease};
    const runs::ReportDecision decision = runs::decideReports(items, rows);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto v = decision.verdicts[i];
      if (v == runs::ReportVerdict::kNotFound || v == runs::ReportVerdict::kOtherHost) {
        replies[i] = runs::refusal(v, items[i].assignment_id);
        continue;
      }
      replies[i]->outcome = runs::outcomeOf(v);
      auto* a = findAssignment(items[i].assignment_id);
      if (v == runs::ReportVerdict::kCancelled && a->result.is_null()) a->result = *items[i].result;
      if (v == runs::ReportVerdict::kAccepted) {
        a->state = "done";
        a->finished_at = now();
        a->result = *items[i].result;
      }
    }
    std::vector<std::pair<core::HostTransition, core::Actor>> transitions;
    std::set<std::string> touched_runs;
    for (const auto& [key, accepted] : decision.groups) {
      const auto& [run_id, group] = key;
      auto merged = runs::mergeReports(runs_.at(run_id), *findGroup(run_id, group), items, accepted);
      if (!merged.ok()) {
        runs_ = saved_runs;
        groups_ = saved_groups;
        wake_ = saved_wake;
        assignments_ = saved_assignments;
        return merged.error();
      }
      for (auto& t : merged->transitions) transitions.push_back(std::move(t));
      persist(runs_.at(run_id), group, merged->update, {});
      if (runs::Engine::done(*findGroup(run_id, group))) touched_runs.insert(run_id);
    }
    for (const auto& run_id : touched_runs) {
      const auto& groups = groups_[run_id];
      if (!std::all_of(groups.begin(), groups.end(), [](const auto& g) { return runs::Engine::done(g); })) continue;
      for (std::size_t i = 0; i < items.size(); ++i)
        if (auto* a = findAssignment(items[i].assignment_id); replies[i].ok() && a && a->run_id == run_id)
          replies[i]->run_complete = true;
    }
    runs::orderTransitions(transitions);
    for (const auto& [t, actor] : transitions) applyTransitions({t}, actor);
    const auto& claim_for = decision.claim_for;  // a host with several reports gets it with its last
    std::vector<std::string> hosts;
    for (const auto& [h, _] : claim_for) hosts.push_back(h);
    for (auto& [h, row] : claim(hosts, grace_ms)) replies[claim_for.at(h)]->next = std::move(row);
    return replies;
  }
  // Dispatched assignments whose lease ran out, the earliest first.
  Result<std::vector<runs::AssignmentRow>> expiredLeases(core::TimePoint at, int limit) override {
    core::testing::FakesLock fakes_lock;
    std::vector<runs::AssignmentRow> out;
    for (const auto& a : assignments_)
      if (a.state == "dispatched" && a.lease_expires_at && *a.lease_expires_at < at) out.push_back(a);
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return *a.lease_expires_at < *b.lease_expires_at; });
    if (static_cast<int>(out.size()) > limit) out.resize(static_cast<std::size_t>(std::max(limit, 0)));
    return out;
  }
  // Marks the assignment lost and applies fn, if it is still dispatched on that lease.
  Result<bool> expireLease(const std::string& id, int lease, const runs::GroupFn& fn) override {
    core::testing::FakesLock fakes_lock;
    auto* a = findAssignment(id);
    if (!a || a->state != "dispatched" || a->lease != lease) return false;
    auto* g = findGroup(a->run_id, a->group_key);
    if (!g) return notFound("no group '" + a->group_key + "' in run '" + a->run_id + "'");
    auto update = fn(runs_.at(a->run_id), *g);
    if (!update.ok()) return update.error();
    a->state = "lost";
    a->finished_at = now();
    // Kept dispatched on the same lease (a reboot under recovery), as the store does.
    for (const auto& [kept, until] : update->effects.extend_leases)
      if (kept == id) {
        a->state = "dispatched";
        a->finished_at.reset();
        a->lease_expires_at = until;
      }
    const std::string run_id = a->run_id, group = a->group_key;
    persist(runs_.at(run_id), group, *update, {"system", "kilnd"});
    return true;
  }
  Result<std::vector<std::string>> hostsWithOpenWork() override {
    core::testing::FakesLock fakes_lock;
    ++hosts_with_open_work_calls;
    std::set<std::string> hosts;
    for (const auto& a : assignments_)
      if (a.state == "pending" || a.state == "dispatched") hosts.insert(kiln::workerKey(a.host, a.runner));
    return std::vector<std::string>(hosts.begin(), hosts.end());
  }
  Result<std::optional<runs::AssignmentRow>> assignment(const std::string& id) override {
    core::testing::FakesLock fakes_lock;
    if (auto* a = findAssignment(id)) return std::optional<runs::AssignmentRow>(*a);
    return std::optional<runs::AssignmentRow>();
  }
  Result<runs::AgentEnrolled> enrollAgent(const std::string&, const std::string&, const std::string&,
                                          const nlohmann::json&, const core::Actor&, std::chrono::seconds) override {
    core::testing::FakesLock fakes_lock;
    return unavailable("FakeRunStore issues no agent tokens");
  }
  Result<runs::AgentEnrolled> renewAgentToken(const std::string&, const core::Actor&, std::chrono::seconds,
                                              std::chrono::seconds) override {
    core::testing::FakesLock fakes_lock;
    return unavailable("FakeRunStore issues no agent tokens");
  }
  Result<runs::HostEnrolment> issueEnrolment(const std::string&, std::chrono::seconds, bool,
                                             const core::Actor&) override {
    core::testing::FakesLock fakes_lock;
    return unavailable("FakeRunStore issues no enrolment tokens");
  }
  // Each host's last poll, kept on the fake fleet's hosts when there is one (unknown hosts
  // ignored there); an unreachable host is reachable again.
  Status recordHeartbeats(const std::vector<runs::Heartbeat>& beats) override {
    core::testing::FakesLock fakes_lock;
    heartbeat_batches_.push_back(beats);
    if (fail_heartbeats) return *fail_heartbeats;
    for (const auto& b : beats) {
      unreachable_.erase(b.host);
      if (!fleet_)
        last_seen_[b.host] = b.at;
      else if (auto* h = fleet_->host(b.host))
        h->last_seen = b.at;
    }
    return Ok{};
  }
  // Hosts whose last poll is older than `cutoff` (retired ones left out), once until they poll again.
  Result<std::vector<std::string>> markUnreachable(core::TimePoint cutoff) override {
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
    core::testing::FakesLock fakes_lock;
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
  Status putVersion(const runs::WorkflowRow& w, const core::Actor& actor,
                    const std::optional<core::IfMatch>& if_match, bool from_file) {
    core::testing::FakesLock fakes_lock;
    auto current = *currentWorkflow(w.name);  // the built-in one too: its ETag matches
    if (if_match) {
      std::optional<std::string> etag;
      if (current) etag = runs::workflowEtag(current->hash);
      if (!if_match->matches(etag)) return core::preconditionFailed("workflow '" + w.name + "'", etag);
    }
    std::optional<runs::WorkflowRow> before;  // a version put, as the SQL's
    if (current_.count(w.name)) before = current;
    auto& versions = versions_[w.name];
    if (!versions.count(w.hash)) {
      versions[w.hash] = w;
      versions[w.hash].updated_at = now();
      version_log_[w.name].emplace_back(w.hash, actor.token_id);
    }
    if (from_file) file_hash_[w.name] = w.hash;
    if (before && before->hash == w.hash) return Ok{};
    current_[w.name] = {w.hash, now()};
    if (fleet_) (void)fleet_->audit(actor, "workflow.put", w.name, runs::workflowChangeAudit(w, before).dump());
    return Ok{};
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
  void persist(const runs::RunRow& run, const std::string& group, const runs::GroupUpdate& u,
               const core::Actor& actor) {
    *findGroup(run.id, group) = u.state;
    const bool done = runs::Engine::done(u.state);
    if (u.effects.next_wakeup && !done)
      wake_[{run.id, group}] = *u.effects.next_wakeup;
    else
      wake_.erase({run.id, group});
    for (const auto& d : u.effects.dispatches) {
      runs::AssignmentRow a;
      a.id = d.assignment_id;
      a.run_id = run.id;
      a.group_key = group;
      a.host = d.host;
      a.runner = d.runner;
      a.step_id = d.step_id;
      a.attempt = d.attempt;
      a.type = d.type;
      a.argv = d.argv;
      a.timeout_ms = d.timeout_ms;
      a.parse = d.parse;
      a.inventory_after = d.inventory_after;
      a.parsed_output_cap = d.parsed_output_cap;
      a.artifacts = d.artifacts;
      a.state = "pending";
      assignments_.push_back(std::move(a));
    }
    for (const auto& id : u.effects.cancel_assignments)
      if (auto* a = findAssignment(id); a && (a->state == "pending" || a->state == "dispatched")) {
        a->state = "cancelled";
        a->finished_at = now();
      }
    applyTransitions(u.transitions, actor);
    // What the engine decided (runs/read_back.h holds the rule of which device an answer may
    // speak for); the PostgreSQL statement's join on the pod's trays is a second fence only.
    for (const auto& v : u.effects.device_versions) device_versions_[{v.device, v.kind}] = v.version;
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
        if (kiln::workerKey(a.host, a.runner) != host) continue;
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

  core::testing::FakeFleet* fleet_;
  const core::Clock* clock_;
  int next_run_ = 0;
  std::map<std::string, std::vector<runs::GroupState>> groups_;
  std::map<std::pair<std::string, std::string>, core::TimePoint> wake_;       // (run, group) -> timer, groups not done
  std::vector<runs::AssignmentRow> assignments_;                              // in creation order
  std::map<std::string, std::map<std::string, runs::WorkflowRow>> versions_;  // name -> hash -> version
  std::map<std::string, std::pair<std::string, core::TimePoint>> current_;    // name -> hash, updated_at
  std::map<std::string, std::string> file_hash_;                              // name -> last loaded from its file
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> version_log_;  // name -> (hash, by), put order
  std::set<std::string> idempotency_keys_;
  std::map<std::string, core::TimePoint> last_seen_;  // without a fleet
  std::set<std::string> unreachable_;
  std::vector<std::vector<runs::Heartbeat>> heartbeat_batches_;
  std::map<std::pair<std::string, std::string>, std::string> device_versions_;
};

}  // namespace kiln::runs::testing
