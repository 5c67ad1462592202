#pragma once
// Rollouts as a service: bundles, compliance, plans (dry run), rollout verbs, and the
// controller's reconciliation pass (tick) that moves each pod through
//   drain -> the bundle's workflow on every host in parallel -> pod validation -> undrain
// and admits new pods only through rollouts::admit(). Every step is idempotent, so a kilnd
// killed at any point and restarted (or another replica taking over) carries on without
// upgrading a pod twice. Thread-safe; the controller calls tick() from one thread.

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::rollouts {

struct RolloutServiceOptions {
  std::string validation_workflow = "pre-job-health";
  // The job-scheduler hook: asks the scheduler to release a pod's allocated hosts; false when
  // the scheduler could not be told (asked again after hook_retry). May be empty. Called for a
  // pod the limits would admit now, and again every hook_repeat while it stays allocated.
  std::function<bool(const std::string& rollout, const std::string& pod, const std::vector<std::string>& hosts)> release_hook;
  std::chrono::seconds hook_retry{15};
  std::chrono::seconds hook_repeat{300};
};

class RolloutService {
 public:
  RolloutService(core::Store& fleet, RolloutStore& store, runs::RunService& runs, core::Clock& clock,
                 RolloutServiceOptions options);

  Result<nlohmann::json> putBundle(const nlohmann::json& doc, const core::Actor& actor, bool* created);
  Result<nlohmann::json> listBundles();
  Result<nlohmann::json> getBundle(const std::string& ref);
  Result<nlohmann::json> compliance(const std::string& ref, const Selector& selector);

  // POST /rollouts: {bundle, selector, policy, dry_run, start}. A dry run writes nothing.
  Result<nlohmann::json> create(const nlohmann::json& body, const core::Actor& actor, bool* dry_run);
  Result<nlohmann::json> view(const std::string& id);
  Result<nlohmann::json> pods(const std::string& id);
  Result<nlohmann::json> list(const std::string& state, const core::PageRequest& page);
  Result<nlohmann::json> events(const std::string& id);
  // start | pause | resume | abort
  Result<nlohmann::json> verb(const std::string& id, const std::string& verb, const core::Actor& actor);
  Result<nlohmann::json> podVerb(const std::string& id, const std::string& pod, const std::string& verb,
                                 const core::Actor& actor);
  // A new rollout of the previous bundle over the pods this rollout upgraded.
  Result<nlohmann::json> rollback(const std::string& id, const core::Actor& actor);

  // One controller pass over every active rollout. Returns how many changes it made.
  int tick();
  // Prometheus lines: rollouts by state, rollout pods by phase.
  std::string metrics();

 private:
  struct Loaded {
    RolloutRow row;
    Bundle bundle;
    Policy policy;
  };
  Result<Loaded> load(const std::string& id);
  Result<Bundle> bundleFor(const std::string& ref);
  Result<Plan> plan(const Bundle& b, const Selector& s, const Policy& p, std::vector<PodFacts>* facts);
  // One in-flight pod's next step. `run_states`: run id -> state of the pods' runs, read once
  // per pass (runStatus is read only for a run that finished).
  int reconcile(const Loaded& ro, RolloutPodRow& pod, const std::map<std::string, std::string>& run_states);
  int admitPods(const Loaded& ro, const std::vector<RolloutPodRow>& pods);
  // Asks the job scheduler to release the pod's allocated hosts unless it was asked recently;
  // `allocated_hosts` is called only when an ask is due.
  void askRelease(const std::string& rollout, const std::string& pod,
                  const std::function<std::vector<std::string>()>& allocated_hosts);

  core::Store& fleet_;
  RolloutStore& store_;
  runs::RunService& runs_;
  core::Clock& clock_;
  RolloutServiceOptions options_;
  std::mutex hook_mu_;
  std::map<std::string, core::TimePoint> hooked_;  // "rollout/pod" -> when to ask the scheduler again
};

}  // namespace kiln::rollouts
