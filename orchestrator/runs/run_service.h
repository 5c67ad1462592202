#pragma once
// Workflow runs as a service: starts runs on hosts or pods, stops and cancels them, and reads
// them back. It answers values (run_views.h); the API renders them (orchestrator/api/run_views.h).
// Thread-safe.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/drain_gate.h"
#include "orchestrator/runs/run_control.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/run_views.h"
#include "orchestrator/runs/start_request.h"
#include "orchestrator/runs/workflow_catalog.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

struct RunServiceOptions {
  std::int64_t lease_grace_ms = 30000;  // beyond a step's timeout before its assignment is lost
  std::chrono::seconds unreachable_after{90};
  std::size_t max_targets = 20000;
  // Called (from the thread that applied the reports) when agents' reports closed the last
  // open group of a run: its verdict is due at the next timer pass. Lets the controller wake at
  // once instead of at its next periodic pass.
  std::function<void()> on_run_complete;
};

// The values a run's `state` and `purpose` take (GET /workflow-runs filters on them).
const std::vector<std::string>& runStates();
const std::vector<std::string>& runPurposes();

// Runs: started on hosts or pods (with the lifecycle moves their purpose needs), read, stopped
// and cancelled; the quarantine queue. RunControl (run_control.h) is what the rollouts room
// sees of it, RunStarter what the fleet service does. Over its own narrow store
// (RunRecordStore, run_store.h) and the workflow catalogue; the agents' side and the timer pass
// are AgentWorkService and RunTimers (runs_room.h puts the four together).
class RunService final : public RunControl {
 public:
  // `on_work(host)` is called after a commit that gave the host new work or cancelled its work.
  // `fleet` only resolves a run's targets: the host lifecycle moves a run causes go through
  // `store`, in the transaction of the run's change.
  RunService(core::FleetReads& fleet, WorkflowCatalog& catalog, RunRecordStore& store, core::Clock& clock,
             RunServiceOptions options, std::function<void(const std::string&)> on_work);

  // The run started, or the one that `req.owner` already has. Bad requests are kInvalidContent
  // with every bad field; a host in the wrong lifecycle state for the purpose is kConflict.
  Result<RunView> startRun(const StartRequest& req, const core::Actor& actor) override;
  Result<RunView> runView(const std::string& id);
  // The run's own row (state, verdict summary, times), without its hosts' records: what a
  // waiting prolog polls (GET /scheduler/checks/{id}?view=state) instead of the whole view.
  Result<RunRow> runRow(const std::string& id) { return store_.getRun(id); }
  Result<core::Page<RunRow>> listRuns(const RunFilter& filter, const core::PageRequest& page);
  Result<RunView> cancelRun(const std::string& id, const core::Actor& actor);
  // RunControl (run_control.h): what the rollouts room uses.
  Status stopRun(const std::string& id, const core::Actor& actor) override;
  Result<RunStatus> runStatus(const std::string& id) override;
  Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) override;
  Result<std::vector<std::string>> workflowParams(const std::string& name) override;
  // The quarantine queue: each host with its repairs and newest validation run, timed by the clock.
  Result<std::vector<QuarantineEntry>> quarantineView();

  static std::string defaultPurpose(const std::string& workflow);

  // The job scheduler's drain gate (drain_gate.h) for runs that take hosts out of service; none
  // by default (no scheduler driver). Set once, before serving.
  void setDrainGate(DrainGate gate) { drain_gate_ = std::move(gate); }

 private:
  core::FleetReads& fleet_;
  WorkflowCatalog& catalog_;
  RunRecordStore& store_;
  core::Clock& clock_;
  RunServiceOptions options_;
  std::function<void(const std::string&)> on_work_;
  DrainGate drain_gate_;
};

// A run's verdict from its groups: ("passed" | "failed" | "cancelled", summary JSON with
// per-host health, reasons and per-pod spare coverage). Pure.
std::pair<std::string, nlohmann::json> runVerdict(const RunRow& run, const std::vector<GroupState>& groups);

}  // namespace kiln::runs
