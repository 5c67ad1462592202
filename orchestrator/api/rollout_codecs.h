#pragma once
// REST request decoding for bundles and rollouts (codecs.h's convention: bad input is an Error,
// 422 with every bad field in details.fields, never an exception). Apart from codecs.h because
// they need the rollouts library and a look-up (the bundle a rollout names, the workflow a
// bundle names), so that one 422 names every bad field, the look-ups' included.

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/rollouts/rollout_service.h"

namespace kiln::api {

// POST /api/v1/bundles: a bundle document (rollout_documents.h: parseBundle) whose workflow must exist.
Result<rollouts::Bundle> decodeBundle(const nlohmann::json& doc,
                                      const std::function<bool(const std::string& workflow)>& workflow_exists);

// POST /api/v1/rollouts: {bundle, selector, policy, dry_run, start, allow_downgrade, reason}.
// `find_bundle` looks the bundle up by id or name@version; its kNotFound is a bad `bundle`
// field, any other error is returned as it is.
// `workflow_exists` (when given) checks the policy's validation_workflow with the rest.
Result<rollouts::CreateRequest> decodeCreateRollout(
    const nlohmann::json& body, const std::function<Result<rollouts::Bundle>(const std::string& ref)>& find_bundle,
    const std::function<bool(const std::string&)>& workflow_exists = nullptr);

}  // namespace kiln::api
