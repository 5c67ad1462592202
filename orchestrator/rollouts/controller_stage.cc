#include <algorithm>

#include "common/artifact_ref.h"

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_internal.h"

namespace kiln::rollouts {

// Staging (issue 31): before the first host of a pod is drained, the stage workflow fetches and
// checks the bundle's artifacts on every host that will be upgraded, while jobs still run, so no
// download sits inside the maintenance window. The run is found again by its owner key in each
// pass (startRun returns the one the owner has), so a pass cut short and repeated does not stage
// twice. Once any host of the pod drains, staging is over: it is not asked again.
std::optional<int> RolloutController::stage(PodStep& step, const std::vector<core::HostSummary>& hosts) {
  if (options_.stage_workflow.empty()) return std::nullopt;
  const LoadedRollout& ro = step.ro;
  RolloutPodRow& pod = step.pod;
  std::vector<std::string> targets;
  for (const auto& h : hosts) {
    if (h.state == core::HostState::kDraining || h.state == core::HostState::kMaintenance) return std::nullopt;
    if (h.state == core::HostState::kAvailable || h.state == core::HostState::kAllocated) targets.push_back(h.id);
  }
  if (targets.empty()) return std::nullopt;
  auto declared = runs_.workflowParams(options_.stage_workflow);
  if (!declared.ok()) {
    // No stage workflow (a site removed it): artifacts are fetched inside the upgrade instead,
    // and checked there all the same.
    noted(Result<int>(declared.error()), step.tag + pod.pod + ": staging skipped");
    return std::nullopt;
  }
  runs::StartRequest req;
  req.workflow = options_.stage_workflow;
  req.hosts = targets;
  req.params = installParams(ro.bundle, *declared);
  // Only files the stage workflow takes (a bundle that changes only the driver has none).
  const auto fetches = std::any_of(req.params.begin(), req.params.end(), [](const nlohmann::json& v) {
    return v.is_string() && parseArtifactValue(v.get<std::string>()).ok();
  });
  if (!fetches) return std::nullopt;
  req.purpose = "rollout";
  req.owner = ro.row.id + "/" + pod.pod + "/stage/" + std::to_string(pod.attempt);
  auto run = runs_.startRun(req, kController);
  if (!run.ok())
    return step.finish(PodPhase::kDraining, PodPhase::kFailed,
                       "cannot start staging (" + req.workflow + "): " + run.error().message);
  const std::string run_id = run->row.id;
  std::optional<runs::RunStatus> status;
  if (run->row.state != "running") status = step.finishedRun(run_id);
  if (!status) {
    PodUpdate u{pod.pod, PodPhase::kDraining, PodPhase::kDraining};
    u.waiting_reason = "staging artifacts on " + std::to_string(req.hosts.size()) + " hosts before the drain (" +
                       req.workflow + " " + run_id + ")";
    if (u.waiting_reason == pod.waiting_reason) return 0;
    noted(store_.updatePods(ro.row.id, {u}, {}), step.tag + pod.pod + " waiting reason");
    return 1;
  }
  for (const auto& [host, st] : status->hosts) {
    if (st == runs::HostStatus::kPassed) continue;
    auto why = status->reasons.find(host);
    return step.finish(PodPhase::kDraining, PodPhase::kFailed,
                       "staging failed on " + host + ": " +
                           (why == status->reasons.end() ? std::string("cancelled") : why->second) + " (" + run_id +
                           "); no host was drained");
  }
  return std::nullopt;
}

}  // namespace kiln::rollouts
