#pragma once
// Rollouts as the API sees them: bundles, compliance, plans (dry run), rollout verbs, rollback,
// views and the Prometheus lines. The passes that move pods are RolloutController
// (controller.h). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/failure_log.h"
#include "common/logger.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::rollouts {

struct RolloutServiceOptions {
  // Where a write the service goes on without is said (null: nowhere); see common/failure_log.h.
  Logger* log = nullptr;
};

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
  // Prometheus lines: rollouts by state, rollout pods by phase.
  std::string metrics();

 private:
  Result<Bundle> bundleFor(const std::string& ref);
  Result<Plan> plan(const Bundle& b, const Selector& s, const Policy& p, std::vector<PodFacts>* facts);
  template <typename R>
  bool noted(const R& r, const std::string& what) {
    return failures_.noted(r, what);
  }

  core::Store& fleet_;
  RolloutStore& store_;
  runs::RunService& runs_;
  core::Clock& clock_;
  RolloutServiceOptions options_;
  FailureLog failures_;
};

}  // namespace kiln::rollouts
