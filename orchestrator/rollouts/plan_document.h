#pragma once
// A rollout's plan as a document: the dry run's answer, which a created rollout keeps as it was
// shown (RolloutRow::plan) and GET /rollouts/{id} answers as it is. Pure, thread-safe.

#include <nlohmann/json.hpp>

#include "orchestrator/rollouts/policy.h"

namespace kiln::rollouts {

// {waves: [{index, name, pods}], excluded: [{pod, reason}], eligible, downgrades: [{pod, reasons}]}.
nlohmann::json planDocument(const Plan& plan);

}  // namespace kiln::rollouts
