#include <algorithm>
#include <map>
#include <set>

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/rollouts/consistency.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_internal.h"

namespace kiln::rollouts {

using nlohmann::json;

// Validating: once validation finished, the hosts that passed return to service and the
// failed ones go to repair; the pod succeeds when enough GPUs serve for a slice. Unless the
// pod's devices report mixed versions of a component the bundle names (consistency.h): then
// the pod is held, no validated host returns to service, and the pod fails naming them.
int RolloutController::validate(PodStep& step) {
  RolloutPodRow& pod = step.pod;
  const std::string& tag = step.tag;
  const bool aborting = step.aborting;
  auto status = step.finishedRun(pod.validation_run_id);
  if (!status) return 0;
  auto detail = fleet_.getPod(pod.pod);
  if (!noted(detail, tag + "pod " + pod.pod)) return 0;
  std::map<std::string, core::HostState> states;
  for (const auto& h : detail->hosts) states[h.id] = h.state;
  std::set<std::string> to_repair;
  int withdrawn = 0;
  // The NVLink domain after this pod's return: its passed hosts, the hosts serving already, and
  // its switch trays, on one version of every component the bundle names.
  std::set<std::string> domain;
  for (const auto& [host, st] : status->hosts)
    if (st == runs::HostStatus::kPassed) domain.insert(host);
  for (const auto& h : detail->hosts)
    if (core::servesJobs(h.state)) domain.insert(h.id);
  for (const auto& t : detail->switch_trays) domain.insert(t.id);
  const auto mixed = mixedVersions(step.ro.bundle, detail->components, domain);
  for (const auto& [host, st] : status->hosts) {
    if (st == runs::HostStatus::kPassed && !mixed.empty()) {
      continue;  // held in validating: out of service until the versions agree
    } else if (st == runs::HostStatus::kPassed) {
      step.move(host, core::HostAction::kValidationPass, "pod validation passed");
    } else if (aborting && st == runs::HostStatus::kCancelled) {
      // The abort withdrew its check before it ran: not validated, so it stays out of
      // service (validating), and nothing says it is broken.
      ++withdrawn;
    } else {
      auto it = status->reasons.find(host);
      step.move(host, core::HostAction::kValidationFail,
                "pod validation failed: " + (it == status->reasons.end() ? std::string("cancelled") : it->second));
      to_repair.insert(host);
    }
  }
  // Hosts that failed the upgrade or the validation go to repair; the spares cover them
  // while 64 GPUs of the pod serve.
  for (const auto& h : detail->hosts)
    if (h.state == core::HostState::kFailed) to_repair.insert(h.id);
  for (const auto& h : to_repair) step.move(h, core::HostAction::kRepair, "failed during the upgrade");
  if (!step.applyMoves(states)) return 0;
  if (!mixed.empty())
    return step.finish(
        PodPhase::kValidating, PodPhase::kFailed,
        "held: mixed versions after the upgrade, so no host returns to service: " + describeMismatches(mixed) +
            (to_repair.empty() ? "" : "; " + std::to_string(to_repair.size()) + " hosts sent to repair"));
  int serving = 0;
  for (const auto& [_, state] : states)
    if (core::servesJobs(state)) ++serving;
  const auto& g = core::geometry(*core::parsePlatform(detail->pod.platform));
  const int gpus = serving * g.gpus_per_tray;
  if (withdrawn > 0)
    return step.finish(PodPhase::kValidating, PodPhase::kAborted,
                       "aborted: validation stopped at a safe point; " + std::to_string(serving) +
                           " hosts back in service, " + std::to_string(withdrawn) +
                           " left in validating (not validated)" +
                           (to_repair.empty() ? "" : ", " + std::to_string(to_repair.size()) + " sent to repair"));
  if (gpus >= g.active_gpus_per_pod())
    return step.finish(
        PodPhase::kValidating, PodPhase::kSucceeded,
        std::to_string(serving) + " hosts back in service (" + std::to_string(gpus) + " GPUs)" +
            (to_repair.empty() ? "" : "; spares cover " + std::to_string(to_repair.size()) + " hosts sent to repair"));
  return step.finish(PodPhase::kValidating, PodPhase::kFailed,
                     "only " + std::to_string(gpus) + " healthy GPUs after the upgrade (a slice needs " +
                         std::to_string(g.active_gpus_per_pod()) + ")");
}

}  // namespace kiln::rollouts
