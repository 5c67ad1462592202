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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::rollouts {

struct ReleaseRequest {
  std::string rollout, pod;
  std::vector<std::string> hosts;  // the pod's allocated hosts
  // What the scheduler should say about the drain: "kiln: ro-3 firmware-upgrade gb200-fw 2026.12".
  std::string reason;
};

// The drain gate (--scheduler slurm): nullopt when a draining host may go to maintenance (its
// job scheduler will start no job on it and none runs), else why it must wait. Called from the
// controller pass; must not block. `reason` as in ReleaseRequest.
using DrainGate = std::function<std::optional<std::string>(const core::HostSummary& host, const std::string& reason)>;

// The job-scheduler hook: starts asking the scheduler to release a pod's allocated hosts and
// returns at once (the controller pass calls it); calls `done` once, later and from any
// thread, with told = the scheduler took the request (false: it could not be told).
using ReleaseHook = std::function<void(const ReleaseRequest& request, std::function<void(bool told)> done)>;

struct RolloutServiceOptions {
  std::string validation_workflow = "pre-job-health";
  // May be empty. Asked for a pod the limits would admit now (and for a draining pod with
  // allocated hosts); asked again hook_retry after an ask that was not told, and hook_repeat
  // after one that was, while the pod stays allocated. An ask whose answer is pending is not
  // repeated. The outcome of each ask is a rollout event, written by the pass that learns it.
  ReleaseHook release_hook;
  std::chrono::seconds hook_retry{15};
  // May be empty (no gate: a drained host goes to maintenance in the same pass).
  DrainGate drain_gate;
  std::chrono::seconds hook_repeat{300};
};

// What Kiln tells the job scheduler about a rollout's drain: "kiln: ro-3 firmware-upgrade
// gb200-fw 2026.12" (the rollout, the bundle's workflow, name and version).
std::string schedulerReason(const std::string& rollout, const Bundle& bundle);

// The values a rollout's `state` takes (the rollouts table's CHECK; GET /rollouts filters on it).
const std::vector<std::string>& rolloutStates();

class RolloutService {
 public:
  RolloutService(core::Store& fleet, RolloutStore& store, runs::RunService& runs, core::Clock& clock,
                 RolloutServiceOptions options);

  // POST /bundles. The answer and GET's carry `etag`; with `if_match`, only over that version.
  Result<nlohmann::json> putBundle(const nlohmann::json& doc, const core::Actor& actor, bool* created,
                                   const std::optional<core::IfMatch>& if_match = std::nullopt);
  Result<nlohmann::json> listBundles();
  Result<nlohmann::json> getBundle(const std::string& ref);
  Result<nlohmann::json> compliance(const std::string& ref, const Selector& selector);

  // POST /rollouts: {bundle, selector, policy, dry_run, start}. A dry run writes nothing.
  // `rollback_of`: the rollout this one rolls back (rollback()). `claim`: the request's
  // Idempotency-Key, recorded with the rollout in the transaction that creates it.
  Result<nlohmann::json> create(const nlohmann::json& body, const core::Actor& actor, bool* dry_run,
                                const std::string& rollback_of = "",
                                const std::optional<core::IdempotencyClaim>& claim = std::nullopt);
  Result<nlohmann::json> view(const std::string& id);
  Result<nlohmann::json> pods(const std::string& id);
  Result<nlohmann::json> list(const std::string& state, const core::PageRequest& page);
  Result<nlohmann::json> events(const std::string& id);
  // start | pause | resume | abort. `reason` (the operator's words, may be empty) goes into the
  // event and the audit record after who did it: "aborted by t-3: CX7 firmware bricks NICs".
  Result<nlohmann::json> verb(const std::string& id, const std::string& verb, const core::Actor& actor,
                              const std::string& reason = "");
  // retry | skip of one pod.
  Result<nlohmann::json> podVerb(const std::string& id, const std::string& pod, const std::string& verb,
                                 const core::Actor& actor, const std::string& reason = "");
  // A new rollout of the previous bundle over the pods this rollout upgraded.
  Result<nlohmann::json> rollback(const std::string& id, const core::Actor& actor, const std::string& reason = "");

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
  // Asks the job scheduler to release the pod's allocated hosts unless it was asked recently
  // or an ask is pending; `allocated_hosts` is called only when an ask is due.
  void askRelease(const std::string& rollout, const std::string& pod,
                  const std::function<std::vector<std::string>()>& allocated_hosts, const std::string& reason);
  // Writes the event of every ask whose answer came back since the last pass.
  void learnReleaseAnswers();

  core::Store& fleet_;
  RolloutStore& store_;
  runs::RunService& runs_;
  core::Clock& clock_;
  RolloutServiceOptions options_;
  // Asks to the job scheduler by "rollout/pod". Shared with the hook's `done` callbacks, which
  // may run on another thread and after this service is gone.
  struct ReleaseAsk {
    std::string rollout, pod;
    std::size_t hosts = 0;
    core::TimePoint asked_at, next;  // next: when the pod may be asked again
    bool pending = false;            // asked, answer not yet learned by a pass
    std::optional<bool> told;        // the answer, set by `done`
  };
  struct ReleaseAsks {
    std::mutex mu;
    std::map<std::string, ReleaseAsk> by_pod;
  };
  std::shared_ptr<ReleaseAsks> asks_ = std::make_shared<ReleaseAsks>();
};

}  // namespace kiln::rollouts
