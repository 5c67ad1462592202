#include "orchestrator/runs/workflow_audit.h"

#include "common/line_diff.h"

namespace kiln::runs {

nlohmann::json workflowChangeAudit(const WorkflowRow& next, const std::optional<WorkflowRow>& before) {
  LineDiffOptions o;
  o.old_label = before ? next.name + "@" + before->hash : "/dev/null";
  o.new_label = next.name + "@" + next.hash;
  o.max_bytes = kWorkflowDiffMaxBytes;
  const LineDiff diff = unifiedLineDiff(before ? before->yaml : "", next.yaml, o);
  return {{"hash", next.hash},
          {"source", next.source},
          {"previous_hash", before ? nlohmann::json(before->hash) : nlohmann::json()},
          {"previous_source", before ? nlohmann::json(before->source) : nlohmann::json()},
          {"diff", diff.text},
          {"diff_truncated", diff.truncated},
          {"lines_added", diff.added},
          {"lines_removed", diff.removed}};
}

}  // namespace kiln::runs
