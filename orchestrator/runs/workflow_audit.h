#pragma once
// What the audit log keeps of a workflow change (`workflow.put`), so that who changed what can
// be read back: both versions' hashes and a diff of the YAML. The stores write it in the
// transaction that makes the version current (run_store.h). Pure.

#include <cstddef>
#include <optional>

#include <nlohmann/json.hpp>

#include "orchestrator/runs/run_store.h"

namespace kiln::runs {

// The diff's cap: a workflow is a few KiB; a rewritten megabyte document keeps its first 64 KiB.
inline constexpr std::size_t kWorkflowDiffMaxBytes = 64 * 1024;

// {hash, source, previous_hash, previous_source (both null for a new workflow), diff (unified,
// of the YAML, old -> new: common/line_diff.h; all lines added for a new workflow),
// diff_truncated, lines_added, lines_removed}.
nlohmann::json workflowChangeAudit(const WorkflowRow& next, const std::optional<WorkflowRow>& before);

}  // namespace kiln::runs
