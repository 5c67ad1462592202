#include <algorithm>
#include <map>
#include <set>

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_internal.h"

// The phases of a pod in flight: draining -> upgrading -> validating -> succeeded (or failed,
// or aborted at a safe point), one file each (controller_drain.cc, controller_upgrade.cc,
// controller_validate.cc). Each reads what it needs, moves hosts in one batch, starts the next
// run by its owner key (idempotent: a pass cut short and repeated finds the run it started) and
// moves the pod with a conditional update. Here: what they share (PodStep).

namespace kiln::rollouts {

using nlohmann::json;

RolloutController::PodStep::PodStep(RolloutController& c, const LoadedRollout& r, RolloutPodRow& p,
                                    const std::map<std::string, std::string>& states)
    : controller(c),
      ro(r),
      pod(p),
      run_states(states),
      tag("rollout " + r.row.id + ": "),
      aborting(r.row.state == RolloutState::kAborting) {}

int RolloutController::PodStep::finish(PodPhase from, PodPhase to, const std::string& message) {
  PodUpdate u{pod.pod, from, to};
  u.message = message;
  u.set_finished = true;
  controller.noted(controller.store_.updatePods(ro.row.id, {u}, {{pod.pod, podPhaseName(to), message}}),
                   tag + pod.pod + " to " + podPhaseName(to));
  return 1;
}

void RolloutController::PodStep::move(const std::string& host, core::HostAction a, const std::string& reason) {
  moves.push_back({host, a, std::nullopt, tag + reason});
}

bool RolloutController::PodStep::applyMoves(std::map<std::string, core::HostState>& states) {
  if (moves.empty()) return true;
  auto outcomes = controller.fleet_.transitionHosts(moves, kController);
  if (!controller.noted(outcomes, tag + pod.pod + ": moving " + std::to_string(moves.size()) + " hosts")) return false;
  for (std::size_t i = 0; i < moves.size() && i < outcomes->size(); ++i)
    if ((*outcomes)[i].ok()) states[moves[i].host] = *(*outcomes)[i];
  moves.clear();
  return true;
}

std::optional<runs::RunStatus> RolloutController::PodStep::finishedRun(const std::string& run_id) {
  auto& runs = controller.runs_;
  auto known = run_states.find(run_id);
  if (known != run_states.end() && known->second == "running") {
    if (aborting) controller.noted(runs.stopRun(run_id, kController), tag + "stopping " + run_id);
    return std::nullopt;
  }
  auto status = runs.runStatus(run_id);
  if (!controller.noted(status, tag + "run " + run_id)) return std::nullopt;
  if (status->state == "running") {
    if (aborting) controller.noted(runs.stopRun(run_id, kController), tag + "stopping " + run_id);
    return std::nullopt;
  }
  return *status;
}

int RolloutController::reconcile(const LoadedRollout& ro, RolloutPodRow& pod,
                                 const std::map<std::string, std::string>& run_states) {
  PodStep step(*this, ro, pod, run_states);
  switch (pod.phase) {
    case PodPhase::kDraining:
      return drain(step);
    case PodPhase::kUpgrading:
      return upgrade(step);
    case PodPhase::kValidating:
      return validate(step);
    default:
      return 0;
  }
}

}  // namespace kiln::rollouts
