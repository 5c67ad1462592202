#pragma once
// What the rollout service (the API's verbs and views) and the rollout controller (the passes)
// share inside the library. Not for other folders.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/bundle.h"
#include "orchestrator/rollouts/policy.h"
#include "orchestrator/rollouts/rollout_store.h"

namespace kiln::rollouts {

// The actor of the controller's own changes (host moves, runs, rollout transitions).
extern const core::Actor kController;

// A rollout with its bundle and parsed policy.
struct LoadedRollout {
  RolloutRow row;  // row.policy: the rollout's policy
  Bundle bundle;
};
Result<LoadedRollout> loadRollout(BundleCatalog& bundles, RolloutRecords& rollouts, const std::string& id);

// The install workflow's parameters from the bundle: firmware-upgrade's names for its
// components (tray package, NIC image, target versions), plus generic <kind>_version /
// _artifact / _sha256; only names the workflow declares are passed.
nlohmann::json installParams(const Bundle& b, const std::vector<std::string>& declared);

// How long each finished pod took, start to finish (succeeded or failed: skipped and aborted
// pods say nothing of the pod time): the view's P50/P90 and admission's window check.
std::vector<double> podSeconds(const std::vector<RolloutPodRow>& rows);

}  // namespace kiln::rollouts
