#include "orchestrator/rollouts/controller.h"

// Asking the job scheduler to release a pod's allocated hosts: the driver returns at once, its
// answer is learned (and written as a rollout event) by a later pass.

namespace kiln::rollouts {

void RolloutController::askRelease(const std::string& rollout, const std::string& pod,
                                   const std::function<std::vector<std::string>()>& allocated_hosts,
                                   const std::string& reason) {
  if (options_.scheduler == nullptr) return;
  const std::string key = rollout + "/" + pod;
  const auto now = clock_.now();
  {
    std::lock_guard lock(asks_->mu);
    auto it = asks_->by_pod.find(key);
    if (it != asks_->by_pod.end() && (it->second.pending || now < it->second.next)) return;
  }
  // Only when an ask is due: the controller comes here for a waiting pod on every pass.
  std::vector<std::string> hosts = allocated_hosts();
  if (hosts.empty()) return;
  {
    std::lock_guard lock(asks_->mu);
    asks_->by_pod[key] = ReleaseAsk{rollout, pod, hosts.size(), now, now + options_.hook_repeat, true, std::nullopt};
  }
  // The driver returns at once; its answer is learned by a later pass (learnReleaseAnswers).
  options_.scheduler->requestDrain({rollout, pod, std::move(hosts), reason}, [asks = asks_, key](bool told) {
    std::lock_guard lock(asks->mu);
    if (auto it = asks->by_pod.find(key); it != asks->by_pod.end() && it->second.pending) it->second.told = told;
  });
}

void RolloutController::learnReleaseAnswers() {
  std::vector<ReleaseAsk> answered;
  {
    std::lock_guard lock(asks_->mu);
    for (auto& [_, a] : asks_->by_pod)
      if (a.pending && a.told) {
        a.pending = false;
        a.next = a.asked_at + (*a.told ? options_.hook_repeat : options_.hook_retry);
        answered.push_back(a);
      }
  }
  for (const auto& a : answered)
    noted(store_.updatePods(
              a.rollout, {},
              {{a.pod, "release",
                *a.told ? "asked the job scheduler to release " + std::to_string(a.hosts) + " allocated hosts"
                        : "the job scheduler could not be reached; asking again in " +
                              std::to_string(options_.hook_retry.count()) + " s"}}),
          "rollout " + a.rollout + ": the release event of " + a.pod);
}

}  // namespace kiln::rollouts
