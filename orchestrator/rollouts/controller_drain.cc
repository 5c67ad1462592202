#include <algorithm>
#include <map>
#include <set>

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_internal.h"

namespace kiln::rollouts {

using nlohmann::json;

// Draining: first the pod's artifacts are staged on its hosts (controller_stage.cc); then every
// available host drains; a drained host goes to maintenance once the job
// scheduler's gate opens; allocated hosts wait for the scheduler to release them. With every
// host in maintenance, the bundle's workflow starts on them.
int RolloutController::drain(PodStep& step) {
  const LoadedRollout& ro = step.ro;
  RolloutPodRow& pod = step.pod;
  const std::string& tag = step.tag;
  const bool aborting = step.aborting;
  auto detail = fleet_.getPod(pod.pod);
  if (!noted(detail, tag + "pod " + pod.pod)) return 0;
  if (aborting) {
    // Say what the operator finds: a pod aborted right after admission has nothing drained.
    const auto out = std::count_if(detail->hosts.begin(), detail->hosts.end(), [](const core::HostSummary& h) {
      return h.state == core::HostState::kDraining || h.state == core::HostState::kMaintenance;
    });
    return step.finish(PodPhase::kDraining, PodPhase::kAborted,
                       out == 0 ? std::string("aborted while draining, before any host was drained")
                                : "aborted while draining: " + std::to_string(out) + " of " +
                                      std::to_string(detail->hosts.size()) + " hosts left draining or in maintenance");
  }
  if (auto waiting = stage(step, detail->hosts)) return *waiting;
  std::map<std::string, core::HostState> states;
  std::vector<std::string> allocated;
  // The job scheduler's gate: a drained host goes to maintenance only once no job can run
  // on it (Slurm: its node is drained and empty). Held hosts stay draining.
  const std::string why = schedulerReason(ro.row.id, ro.bundle);
  std::vector<std::string> held;
  auto drained = [&](const core::HostSummary& h) {
    if (options_.scheduler != nullptr) {
      if (auto wait = options_.scheduler->heldBack(h, why)) {
        held.push_back(*wait);
        return;
      }
    }
    step.move(h.id, core::HostAction::kDrained, "no job on the host");
  };
  for (const auto& h : detail->hosts) {
    states[h.id] = h.state;
    if (h.state == core::HostState::kAvailable) {
      step.move(h.id, core::HostAction::kDrain, "drain for upgrade");
      drained(h);
    } else if (h.state == core::HostState::kDraining) {
      drained(h);
    } else if (h.state == core::HostState::kAllocated) {
      allocated.push_back(h.id);
    }
  }
  if (!step.applyMoves(states)) return 0;
  if (allocated.empty() && !held.empty()) {
    PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kDraining};
    u.waiting_reason =
        held.front() + (held.size() > 1 ? " (and " + std::to_string(held.size() - 1) + " more hosts)" : "");
    if (u.waiting_reason != pod.waiting_reason)
      noted(store_.updatePods(ro.row.id, {u}, {}), tag + pod.pod + " waiting reason");
    return 0;
  }
  if (!allocated.empty()) {
    askRelease(
        ro.row.id, pod.pod, [&] { return allocated; }, why);
    PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kDraining};
    u.waiting_reason =
        "allocated: waiting for the job scheduler to release " + std::to_string(allocated.size()) + " hosts";
    noted(store_.updatePods(ro.row.id, {u}, {}), tag + pod.pod + " waiting reason");
    return 0;
  }
  std::vector<std::string> ready;
  for (const auto& h : detail->hosts)  // tray order
    if (states[h.id] == core::HostState::kMaintenance) ready.push_back(h.id);
  if (ready.empty()) return step.finish(PodPhase::kDraining, PodPhase::kFailed, "no host of the pod could be drained");
  auto declared = runs_.workflowParams(ro.bundle.workflow);
  if (!declared.ok()) return step.finish(PodPhase::kDraining, PodPhase::kFailed, declared.error().message);
  runs::StartRequest req;
  req.workflow = ro.bundle.workflow;
  req.hosts = ready;
  req.params = installParams(ro.bundle, *declared);
  req.purpose = "rollout";
  req.owner = ro.row.id + "/" + pod.pod + "/upgrade/" + std::to_string(pod.attempt);
  auto run = runs_.startRun(req, kController);
  if (!run.ok())
    return step.finish(PodPhase::kDraining, PodPhase::kFailed,
                       "cannot start " + req.workflow + ": " + run.error().message);
  PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kUpgrading};
  u.run_id = run->row.id;
  u.waiting_reason = "";
  noted(store_.updatePods(
            ro.row.id, {u},
            {{pod.pod, "upgrading",
              std::to_string(ready.size()) + " hosts drained; " + req.workflow + " " + *u.run_id + " started"}}),
        tag + pod.pod + " to upgrading");
  return 1;
}

}  // namespace kiln::rollouts
