#include <algorithm>
#include <map>
#include <set>

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_internal.h"

namespace kiln::rollouts {

using nlohmann::json;

// Upgrading: once the upgrade run finished, the hosts that passed go to validation and the
// failed ones are marked; the validation run starts on those that passed.
int RolloutController::upgrade(PodStep& step) {
  const LoadedRollout& ro = step.ro;
  RolloutPodRow& pod = step.pod;
  const std::string& tag = step.tag;
  const bool aborting = step.aborting;
  auto status = step.finishedRun(pod.run_id);
  if (!status) return 0;
  std::vector<std::string> passed, failed;
  for (const auto& [host, st] : status->hosts) {
    if (st == runs::HostStatus::kPassed) passed.push_back(host);
    // Withdrawn by the abort before its agent took the step: nothing failed, the host
    // stays drained in maintenance with the others.
    else if (!(aborting && st == runs::HostStatus::kCancelled))
      failed.push_back(host);
  }
  for (const auto& h : failed) {
    auto it = status->reasons.find(h);
    step.move(h, core::HostAction::kValidationFail,
              "upgrade failed: " + (it == status->reasons.end() ? std::string("cancelled") : it->second));
  }
  if (!aborting)
    for (const auto& h : passed) step.move(h, core::HostAction::kMaintenanceDone, "upgrade done");
  // The pod ends here (aborted, or no host left to validate): its failed hosts go to repair
  // now, as the validation's end would have sent them.
  if (aborting || passed.empty())
    for (const auto& h : failed) step.move(h, core::HostAction::kRepair, "failed during the upgrade");
  std::map<std::string, core::HostState> states;
  if (!step.applyMoves(states)) return 0;
  if (aborting)
    return step.finish(PodPhase::kUpgrading, PodPhase::kAborted,
                       "aborted: the upgrade stopped at a safe point; hosts left in maintenance");
  if (passed.empty()) {
    std::string why = status->reasons.empty() ? "" : ": " + status->reasons.begin()->second;
    return step.finish(PodPhase::kUpgrading, PodPhase::kFailed, "the upgrade failed on every host" + why);
  }
  runs::StartRequest req;
  // The rollout's own validation, else the bundle's (a pod-scope one checks the upgraded hosts
  // together), else kilnd's.
  req.workflow = !ro.row.policy.validation_workflow.empty() ? ro.row.policy.validation_workflow
                 : !ro.bundle.validation_workflow.empty()   ? ro.bundle.validation_workflow
                                                            : options_.validation_workflow;
  req.hosts = passed;
  req.purpose = "rollout";
  req.owner = ro.row.id + "/" + pod.pod + "/validate/" + std::to_string(pod.attempt);
  auto run = runs_.startRun(req, kController);
  if (!run.ok())
    return step.finish(PodPhase::kUpgrading, PodPhase::kFailed, "cannot start validation: " + run.error().message);
  PodUpdate u{pod.pod, PodPhase::kUpgrading, PodPhase::kValidating};
  u.validation_run_id = run->row.id;
  noted(store_.updatePods(ro.row.id, {u},
                          {{pod.pod, podPhaseName(PodPhase::kValidating),
                            std::to_string(passed.size()) + " hosts upgraded, " + std::to_string(failed.size()) +
                                " failed; validation " + *u.validation_run_id + " started"}}),
        tag + pod.pod + " to validating");
  return 1;
}

}  // namespace kiln::rollouts
