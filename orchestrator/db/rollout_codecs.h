#pragma once
// The documents the rollout store keeps: the rollouts table's selector and policy columns and the
// bundles table's spec. They are kept in the form the REST edge reads and answers
// (api/rollout_documents.h), written and read here so that the store does not depend on the API.
// Reading trusts what the edge checked, but not blindly: absent fields take their defaults (rows
// written before a field existed) and unknown ones are ignored; a field of the wrong type or
// outside what the core relies on fails the read (kInvalidContent naming the field). Pure,
// thread-safe.

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/rollouts/bundle.h"
#include "orchestrator/rollouts/policy.h"

namespace kiln::db {

nlohmann::json storedSelector(const rollouts::Selector& s);
Result<rollouts::Selector> selectorFromStored(const nlohmann::json& doc);

nlohmann::json storedPolicy(const rollouts::Policy& p);
Result<rollouts::Policy> policyFromStored(const nlohmann::json& doc);

// The spec is rollouts::toJson(bundle) less the id (the row's own column).
nlohmann::json storedBundle(const rollouts::Bundle& b);
Result<rollouts::Bundle> bundleFromStored(const nlohmann::json& doc);

}  // namespace kiln::db
