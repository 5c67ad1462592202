#pragma once
// Loading workflow YAML into a validated WorkflowSpec (the only code in this target that sees
// yaml-cpp). Validation collects EVERY error, each as
//   <source>:<line>:<column>: <field path>: <what was expected, what was found>
// e.g. `workflows/pre-job-health.yaml:14:7: steps[2].timeout: expected a duration like 30s or
// 15m, got "fast"`. Thread-safe (no shared state).

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::workflow {

// Loads and validates YAML text; `source_name` names it in messages (a file path, or "request
// body"). On errors: ErrorCode::kInvalidContent, message = the first error line, fields = every
// error (path "steps[2].timeout", message "14:7: expected a duration ..."), and
// details["text"] = every error line, newline-separated; details["count"] = how many.
kiln::Result<WorkflowSpec> loadWorkflow(std::string_view yaml_text, std::string_view source_name);

// Reads and loads one file; the path is the source name. kNotFound if it cannot be read.
kiln::Result<WorkflowSpec> loadWorkflowFile(const std::string& path);

// Loads every *.yaml / *.yml file of `dir` (not recursive), sorted by file name. Errors of all
// files are collected into one kInvalidContent error (as above); two files declaring the same
// workflow name are an error too. kNotFound if the directory cannot be read.
kiln::Result<std::vector<WorkflowSpec>> loadWorkflowDir(const std::string& dir);

// A stable content hash: lowercase hex SHA-256 of the YAML text bytes.
std::string contentHash(std::string_view yaml_text);

}  // namespace kiln::workflow
