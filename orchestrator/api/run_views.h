#pragma once
// The REST representation of workflows, workflow runs and the quarantine queue (json_views.h's
// convention: one place for the shapes api/openapi.yaml describes). RunService answers values
// (orchestrator/runs/run_views.h); only these functions make JSON of them.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/core/store.h"
#include "orchestrator/runs/run_views.h"

namespace kiln::api {

// PUT /workflows/{name}: {name, hash, changed}.
nlohmann::json toJson(const runs::WorkflowPut& p);
// GET /workflows/{name}: the spec (workflow::toJson) with hash, yaml and source.
nlohmann::json workflowJson(const runs::WorkflowInfo& w);
// GET /workflows: {items: [name, hash, source, and version, description, scope and the number
// of steps where the version loads], next_cursor: null}.
nlohmann::json workflowListJson(const std::vector<runs::WorkflowInfo>& ws);

// GET /workflows/{name}/versions: {name, items: [{hash, source, created_at, created_by,
// current, file_loaded}], next_cursor: null}, in the order given (newest first).
nlohmann::json workflowVersionsJson(const std::string& name, const std::vector<runs::WorkflowVersionInfo>& versions);

// GET /workflow-runs/{id}, and the answer of starting or cancelling a run.
nlohmann::json toJson(const runs::RunView& v);
// A run's row without its hosts: an item of GET /workflow-runs, and GET /scheduler/checks/{id}?view=state.
nlohmann::json runStateJson(const runs::RunRow& r);
// GET /workflow-runs: one page of run summaries.
nlohmann::json runListJson(const core::Page<runs::RunRow>& page);
// GET /quarantine: {items, next_cursor: null}.
nlohmann::json quarantineJson(const std::vector<runs::QuarantineEntry>& entries);

}  // namespace kiln::api
