#include "orchestrator/rollouts/controller.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "common/histogram.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/rollouts/rollout_internal.h"

namespace kiln::rollouts {

using nlohmann::json;

RolloutController::RolloutController(core::FleetHosts& fleet, RolloutControllerStore& store, runs::RunControl& runs,
                                     core::Clock& clock, ControllerOptions options)
    : fleet_(fleet),
      store_(store),
      runs_(runs),
      clock_(clock),
      options_(std::move(options)),
      failures_(options_.log ? *options_.log : nullLogger(), clock_) {
  if (options_.reconcile_threads > 1) workers_ = std::make_unique<Executor>(options_.reconcile_threads);
}

int RolloutController::reconcileAll(const LoadedRollout& ro, const std::vector<RolloutPodRow*>& pods,
                                    const std::map<std::string, std::string>& run_states) {
  if (!workers_ || pods.size() < 2) {
    int changes = 0;
    for (auto* p : pods) changes += reconcile(ro, *p, run_states);
    return changes;
  }
  struct Join {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t left = 0;
    int changes = 0;
    std::exception_ptr error;
  } join;
  join.left = pods.size();
  for (auto* p : pods)
    workers_->post([this, &ro, &run_states, &join, p] {
      int n = 0;
      std::exception_ptr error;
      try {
        n = reconcile(ro, *p, run_states);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(join.mu);
      join.changes += n;
      if (error && !join.error) join.error = error;
      if (--join.left == 0) join.cv.notify_one();  // under the lock: `join` outlives the call
    });
  std::unique_lock lock(join.mu);
  join.cv.wait(lock, [&] { return join.left == 0; });
  if (join.error) std::rethrow_exception(join.error);
  return join.changes;
}

int RolloutController::admitPods(const LoadedRollout& ro, const std::vector<RolloutPodRow>& rows) {
  AdmissionInput in;
  in.policy = ro.row.policy;
  in.paused = ro.row.state == RolloutState::kPaused;
  in.halted = ro.row.state == RolloutState::kHalted;
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
  if (const auto durations = ro.row.policy.windows.empty() ? std::vector<double>() : podSeconds(rows); !durations.empty())
    in.pod_time_p90 = std::chrono::seconds(static_cast<long>(std::ceil(percentile(durations, 90))));
  if (!pending.empty()) {
    auto states = store_.podHostStates(pending);
    if (!noted(states, "rollout " + ro.row.id + ": admission: the pods' hosts")) return 0;
    for (auto& p : in.pods) {
      auto it = states->find(p.id);
      if (it == states->end()) continue;
      for (const auto& [state, n] : it->second.hosts) {
        if (state == core::HostState::kAllocated)
          p.allocated = true;
        else
          p.hosts.out[state] = n;
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
    if (!noted(loads, "rollout " + ro.row.id + ": admission: the buildings' loads")) return 0;
    in.buildings = *loads;
  }
  // When did the wave before the current one finish?
  int current = std::numeric_limits<int>::max();
  for (const auto& p : rows)
    if (!finished(p.phase)) current = std::min(current, p.wave);
  for (const auto& p : rows)
    if (p.wave == current - 1 && p.finished_at &&
        (!in.previous_wave_finished || *p.finished_at > *in.previous_wave_finished))
      in.previous_wave_finished = p.finished_at;

  AdmissionResult res = admit(in);
  int changes = 0;
  for (const auto& id : res.release)
    askRelease(
        ro.row.id, id,
        [&] {
          std::vector<std::string> allocated;
          if (auto detail = fleet_.getPod(id); detail.ok())
            for (const auto& h : detail->hosts)
              if (h.state == core::HostState::kAllocated) allocated.push_back(h.id);
          return allocated;
        },
        schedulerReason(ro.row.id, ro.bundle));
  if (res.halt && ro.row.state == RolloutState::kRunning) {
    noted(store_.transition(ro.row.id, {RolloutState::kRunning}, RolloutState::kHalted, res.halt_reason, kController),
          "rollout " + ro.row.id + ": halting");
    return 1;  // admit nothing in the pass that halts
  }
  if (res.complete) {
    if (ro.row.state == RolloutState::kRunning)
      noted(store_.transition(ro.row.id, {RolloutState::kRunning}, RolloutState::kCompleted, "every pod finished",
                              kController),
            "rollout " + ro.row.id + ": completing");
    return 1;
  }
  if (!res.admit.empty()) {
    // The versions each admitted pod has now (kind -> version -> targets), from one query.
    std::map<std::string, json> before;
    Selector admitted;
    admitted.pods = res.admit;
    // Without them the pod would start with no record of what it ran before (its rollout
    // event and a later rollback read it): admit nothing this pass.
    auto snaps = store_.podSnapshots(admitted);
    if (!noted(snaps, "rollout " + ro.row.id + ": admission: the admitted pods' versions")) return changes;
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
    if (noted(store_.updatePods(ro.row.id, updates, events),
              "rollout " + ro.row.id + ": admitting " + std::to_string(updates.size()) + " pods"))
      changes += static_cast<int>(updates.size());
  }
  noted(store_.setWaiting(ro.row.id, res.waiting), "rollout " + ro.row.id + ": waiting reasons");
  return changes;
}

int RolloutController::tick() {
  learnReleaseAnswers();
  auto ids = store_.activeRollouts();
  if (!noted(ids, "the controller pass: active rollouts")) return 0;
  int changes = 0;
  for (const auto& id : *ids) {
    auto ro = loadRollout(store_, store_, id);
    if (!noted(ro, "rollout " + id)) continue;
    auto rows = store_.rolloutPods(id);
    if (!noted(rows, "rollout " + id + ": its pods")) continue;
    // The states of every run of the pods in flight, in one query.
    std::vector<std::string> run_ids;
    for (const auto& p : *rows) {
      if (p.phase == PodPhase::kUpgrading && !p.run_id.empty()) run_ids.push_back(p.run_id);
      if (p.phase == PodPhase::kValidating && !p.validation_run_id.empty()) run_ids.push_back(p.validation_run_id);
    }
    std::map<std::string, std::string> run_states;
    if (auto st = runs_.runStates(run_ids); noted(st, "rollout " + id + ": the states of its runs"))
      run_states = std::move(*st);
    std::vector<RolloutPodRow*> flying;
    for (auto& p : *rows)
      if (inFlight(p.phase)) flying.push_back(&p);
    const int reconciled = reconcileAll(*ro, flying, run_states);
    changes += reconciled;
    if (reconciled > 0) rows = store_.rolloutPods(id);  // a pod changed phase
    if (!noted(rows, "rollout " + id + ": its pods")) continue;
    if (ro->row.state == RolloutState::kAborting) {
      const bool busy =
          std::any_of(rows->begin(), rows->end(), [](const RolloutPodRow& p) { return inFlight(p.phase); });
      if (!busy) {
        noted(store_.transition(id, {RolloutState::kAborting}, RolloutState::kAborted,
                                "every pod in flight stopped at a safe point", kController),
              "rollout " + id + ": ending the abort");
        ++changes;
      }
      continue;
    }
    changes += admitPods(*ro, *rows);
  }
  return changes;
}

}  // namespace kiln::rollouts
