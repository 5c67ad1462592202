#pragma once
// Rollouts as a service: bundles, compliance, plans (dry run), rollout verbs, and the
// controller's reconciliation pass (tick) that moves each pod through
//   drain -> the bundle's workflow on every host in parallel -> pod validation -> undrain
// and admits new pods only through rollouts::admit(). Every step is idempotent, so a kilnd
// killed at any point and restarted (or another replica taking over) carries on without
// upgrading a pod twice. Thread-safe; the controller calls tick() from one thread.

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::rollouts {

struct RolloutServiceOptions {
  std::string validation_workflow = "pre-job-health";
  // Called once per pod with allocated hosts (the job-scheduler hook); may be empty.
  std::function<void(const std::string& rollout, const std::string& pod, const std::vector<std::string>& hosts)> release_hook;
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
  int reconcile(const Loaded& ro, RolloutPodRow& pod);
  int admitPods(const Loaded& ro, const std::vector<RolloutPodRow>& pods);

  core::Store& fleet_;
  RolloutStore& store_;
  runs::RunService& runs_;
  core::Clock& clock_;
  RolloutServiceOptions options_;
  std::mutex hook_mu_;
  std::set<std::string> hooked_;  // "rollout/pod" release hooks already sent
};

}  // namespace kiln::rollouts
