#pragma once
// What starts a workflow run (POST /api/v1/workflow-runs, the controllers). A plain value type:
// the REST codec (orchestrator/api/codecs.h) builds it without the run service's headers.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <optional>

#include "orchestrator/core/preconditions.h"

namespace kiln::runs {

struct StartRequest {
  std::string workflow;
  std::vector<std::string> hosts;
  std::vector<std::string> pods;
  nlohmann::json params = nlohmann::json::object();
  std::string purpose;  // burn_in | quarantine | pre_job | maintenance | manual | rollout; default from the workflow
  // A controller's idempotency key: starting a run with an owner that already has one returns
  // the existing run instead of a second one.
  std::string owner;
  // A REST client's Idempotency-Key, recorded with the run it creates (one transaction).
  std::optional<core::IdempotencyClaim> claim;
};

}  // namespace kiln::runs
