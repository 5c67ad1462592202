#pragma once
// Rollouts as the API sees them: bundles, compliance, plans (dry run), rollout verbs, rollback,
// views and the Prometheus lines. The passes that move pods are RolloutController
// (controller.h). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/artifact_trust.h"
#include "common/failure_log.h"
#include "common/logger.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_control.h"

namespace kiln::rollouts {

struct RolloutServiceOptions {
  // Where a write the service goes on without is said (null: nowhere); see common/failure_log.h.
  Logger* log = nullptr;
  // Checks a bundle's signature against the site's trusted keys (kilnd --trusted-keys; gpgv in
  // production, common/exec/gpgv.h). Empty: no trusted keys, signatures are not checked.
  SignatureCheck verify_signature;
};

// The values a rollout's `state` takes (the rollouts table's CHECK; GET /rollouts filters on it).
const std::vector<std::string>& rolloutStates();

// What the API's calls give and take: domain values; the REST shapes are api/rollout_views.h,
// the request decoding api/rollout_codecs.h.

// POST /bundles' outcome: the stored row and what the call did.
struct PutBundleResult {
  BundleRow row;
  BundleCatalog::PutOutcome outcome = BundleCatalog::PutOutcome::kUnchanged;
};

// GET /bundles/{id}/compliance: per pod, and counted.
struct PodComplianceView {
  std::string building, platform;
  PodCompliance compliance;  // compliance.pod: the pod's id
};
struct ComplianceReport {
  std::string bundle;                   // the bundle's id
  std::map<Compliance, int> pods;       // pods by state (every state, 0 for none)
  std::map<Compliance, int> hosts;      // hosts by state (every state)
  std::vector<PodComplianceView> items;
};

// POST /rollouts, decoded (api::decodeCreateRollout): the bundle already looked up.
struct CreateRequest {
  Bundle bundle;
  Selector selector;
  Policy policy;
  bool dry_run = false;
  bool start = false;
  bool allow_downgrade = false;
  std::string reason;  // allow_downgrade's (required with it)
};

// GET /rollouts/{id}: the rollout with its progress.
struct RolloutView {
  RolloutRow row;
  Bundle bundle;
  std::map<PodPhase, int> counts;  // every phase, 0 for none
  std::size_t total = 0;           // pods
  enum class WaveState { kDone, kCurrent, kPending };
  struct Wave {
    int index = 0;
    int pods = 0, finished = 0;
    WaveState state = WaveState::kPending;
  };
  std::vector<Wave> waves;
  std::optional<int> current_wave;
  std::map<std::string, int> waiting;  // pending pods by the first word of their waiting reason
  std::size_t durations_count = 0;     // finished pods' times (podSeconds)
  double p50_s = 0, p90_s = 0;
  std::optional<double> eta_s;
  std::vector<RolloutEventRow> events;  // the newest 20, newest first
};

// POST /rollouts: the rollout created, or (dry run) the plan.
struct CreateOutcome {
  bool dry_run = false;
  std::optional<RolloutView> rollout;  // not a dry run
  // A dry run's plan and what it was planned from.
  Bundle bundle;
  Selector selector;
  Policy policy;
  Plan plan;
  std::vector<std::string> warnings;  // a dry run's: the downgrade it would be
};

class RolloutService {
 public:
  // `audit`: where the pod verbs and rollback record who acted (the store records the rest).
  RolloutService(core::AuditLog& audit, RolloutServiceStore& store, runs::RunControl& runs, core::Clock& clock,
                 RolloutServiceOptions options);

  // POST /bundles (decoded by api::decodeBundle). With `if_match`, only over that version.
  // The bundle must pass checkArtifactTrust (common/artifact_trust.h) with every component's
  // sha256 and options.verify_signature first: kInvalidContent saying why, nothing stored.
  Result<PutBundleResult> putBundle(const Bundle& bundle, const core::Actor& actor,
                                    const std::optional<core::IfMatch>& if_match = std::nullopt);
  // Whether the bundle workflow `name` exists (decodeBundle's check).
  bool workflowExists(const std::string& name);
  Result<std::vector<BundleRow>> listBundles();
  Result<BundleRow> getBundle(const std::string& ref);
  // By id ("b-3") or name@version: kNotFound "no bundle '<ref>'".
  Result<Bundle> bundleFor(const std::string& ref);
  Result<ComplianceReport> compliance(const std::string& ref, const Selector& selector);

  // POST /rollouts. A dry run writes nothing.
  // `rollback_of`: the rollout this one rolls back (rollback()). `claim`: the request's
  // Idempotency-Key, recorded with the rollout in the transaction that creates it.
  Result<CreateOutcome> create(const CreateRequest& request, const core::Actor& actor, const std::string& rollback_of = "",
                               const std::optional<core::IdempotencyClaim>& claim = std::nullopt);
  Result<RolloutView> view(const std::string& id);
  // Plan order.
  Result<std::vector<RolloutPodRow>> pods(const std::string& id);
  Result<core::Page<RolloutRow>> list(const std::string& state, const core::PageRequest& page);
  // Every event, newest first.
  Result<std::vector<RolloutEventRow>> events(const std::string& id);
  // start | pause | resume | abort. `reason` (the operator's words, may be empty) goes into the
  // event and the audit record after who did it: "aborted by t-3: CX7 firmware bricks NICs".
  Result<RolloutView> verb(const std::string& id, const std::string& verb, const core::Actor& actor,
                           const std::string& reason = "");
  // retry | skip of one pod.
  Result<RolloutView> podVerb(const std::string& id, const std::string& pod, const std::string& verb,
                              const core::Actor& actor, const std::string& reason = "");
  // A new rollout of the previous bundle over the pods this rollout upgraded: its view.
  Result<RolloutView> rollback(const std::string& id, const core::Actor& actor, const std::string& reason = "");
  // Prometheus lines: rollouts by state, rollout pods by phase.
  std::string metrics();

 private:
  Result<Plan> plan(const Bundle& b, const Selector& s, const Policy& p, std::vector<PodFacts>* facts);
  template <typename R>
  bool noted(const R& r, const std::string& what) {
    return failures_.noted(r, what);
  }

  core::AuditLog& audit_;
  RolloutServiceStore& store_;
  runs::RunControl& runs_;
  core::Clock& clock_;
  RolloutServiceOptions options_;
  FailureLog failures_;
};

}  // namespace kiln::rollouts
