#pragma once
// The workflow catalogue: the YAML workflows Kiln runs, validated and versioned by content hash
// (PUT /workflows/{name}, the workflow directory at kilnd's start), and each version's loaded
// spec, cached, for the parts of the runs room that run them. Over its own narrow store
// (WorkflowStore, run_store.h; fake: runs/testing/fake_run_store.h). Thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/executable_allowlist.h"
#include "common/logger.h"
#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/run_views.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

// What kilnd's start does with a workflow's file, by the rule (README, "Workflows"): the file's
// version becomes current only when the workflow is new or the file differs from the version
// last loaded from it (a deliberate deploy wins); an unchanged file never replaces a version
// put through the API.
enum class FileLoad {
  kNew,               // no such workflow: the file's version becomes current
  kCurrent,           // the file's version is current and was the last loaded: nothing to do
  kMarkLoaded,        // the file's content is current already (put through the API, or loaded
                      // before the file hash was kept): recorded as the last loaded, nothing else
  kApiStays,          // the file is as last loaded; the current version (the API's) stays
  kFileUpdate,        // the file changed and the current version was its last one: replaced
  kFileOverridesApi,  // the file changed and replaces a version put through the API (warned)
};
// Pure: the decision for a file whose content hashes to `file_hash`, given the workflow's
// current version (with its file_hash), if any.
FileLoad decideFileLoad(const std::optional<WorkflowRow>& current, const std::string& file_hash);

class WorkflowCatalog {
 public:
  explicit WorkflowCatalog(WorkflowStore& store) : store_(store) {}

  // Restricts the executables workflow steps may run (kilnd's --workflow-executables): a
  // workflow naming another is refused when loaded from the directory, put (both
  // kInvalidContent naming each step) and started (RunService asks allowed()). Set once, before
  // the catalogue is used.
  void restrictExecutables(ExecutableAllowList list) { allow_ = std::move(list); }
  // Ok, or kInvalidContent with one field per step whose executable the list refuses.
  Status allowed(const workflow::WorkflowSpec& spec) const;

  // Validates every workflow file of `dir` and stores their versions by decideFileLoad's rule
  // (kilnd start-up); `log` gets a line for each file whose version does not become current,
  // and a warning for each that replaces a version put through the API. The names loaded.
  Result<std::vector<std::string>> loadWorkflowDir(const std::string& dir, const core::Actor& actor, Logger& log);
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
  // Every stored version, newest first; kNotFound for a workflow that does not exist.
  Result<std::vector<WorkflowVersionInfo>> versions(const std::string& name);
  // The parameters the current version takes; kNotFound for an unknown workflow.
  Result<std::vector<std::string>> workflowParams(const std::string& name);
  // One version's spec, loaded once and then shared.
  Result<std::shared_ptr<const workflow::WorkflowSpec>> spec(const std::string& name, const std::string& hash);

 private:
  // One file's version by decideFileLoad (a concurrent change of the current version, e.g.
  // another replica starting, is decided again).
  Status loadWorkflowFile(const WorkflowRow& file, const core::Actor& actor, Logger& log);

  WorkflowStore& store_;
  std::optional<ExecutableAllowList> allow_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const workflow::WorkflowSpec>> specs_;  // by "name@hash"
};

}  // namespace kiln::runs
