#pragma once
// The workflow catalogue: the YAML workflows Kiln runs, validated and versioned by content hash
// (PUT /workflows/{name}, the workflow directory at kilnd's start), and each version's loaded
// spec, cached, for the parts of the runs room that run them. Over its own narrow store
// (WorkflowStore, run_store.h; fake: runs/testing/fake_workflow_store.h). Thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/run_views.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

class WorkflowCatalog {
 public:
  explicit WorkflowCatalog(WorkflowStore& store) : store_(store) {}

  // Validates every workflow file of `dir` and stores new versions (kilnd start-up).
  Result<std::vector<std::string>> loadWorkflowDir(const std::string& dir, const core::Actor& actor);
  // Validates YAML for workflow `name` and makes it the current version (PUT /workflows/{name});
  // with `if_match`, only over the version that ETag names (412 if not).
  Result<WorkflowPut> putWorkflow(const std::string& name, const std::string& yaml, const core::Actor& actor,
                                  const std::optional<core::IfMatch>& if_match = std::nullopt);
  // Every workflow's current version, by name.
  Result<std::vector<WorkflowInfo>> listWorkflows();
  // The current version: kNotFound for a workflow that does not exist; the error of a version
  // that does not load.
  Result<WorkflowInfo> getWorkflow(const std::string& name);
  // As getWorkflow, none for a workflow that does not exist.
  Result<std::optional<WorkflowInfo>> current(const std::string& name);
  // The parameters the current version takes; kNotFound for an unknown workflow.
  Result<std::vector<std::string>> workflowParams(const std::string& name);
  // One version's spec, loaded once and then shared.
  Result<std::shared_ptr<const workflow::WorkflowSpec>> spec(const std::string& name, const std::string& hash);

 private:
  WorkflowStore& store_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const workflow::WorkflowSpec>> specs_;  // by "name@hash"
};

}  // namespace kiln::runs
