#pragma once
// Workflow runs as a service: starts runs on hosts or pods, applies agents' reports and timers
// to the engine, derives host lifecycle transitions from run verdicts (burn-in, quarantine,
// pre-job checks). It answers values (run_views.h); the API renders them
// (orchestrator/api/run_views.h), the agents' edge encodes assignments (common/agent_protocol.h).
// Owns no threads; the controller calls tick(). Thread-safe.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/histogram.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/agent_work.h"
#include "orchestrator/runs/run_control.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/run_views.h"
#include "orchestrator/runs/start_request.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

struct RunServiceOptions {
  std::int64_t lease_grace_ms = 30000;  // beyond a step's timeout before its assignment is lost
  std::chrono::seconds unreachable_after{90};
  std::size_t max_targets = 20000;
  // Called (from the thread that applied the reports) when agents' reports closed the last
  // open group of a run: its verdict is due at the next tick(). Lets the controller wake at
  // once instead of at its next periodic pass.
  std::function<void()> on_run_complete;
};

// The values a run's `state` and `purpose` take (GET /workflow-runs filters on them).
const std::vector<std::string>& runStates();
const std::vector<std::string>& runPurposes();

// The agents' side (claimBatch, reportBatch) is its AgentWork face, all the gateway sees of it;
// it tells of new work only through on_work (agent_work.h: how kilnd wires the two).
class RunService final : public AgentWork, public RunControl {
 public:
  // `on_work(host)` is called after a commit that gave the host new work or cancelled its work.
  // `fleet` only resolves a run's targets: the host lifecycle moves a run causes go through
  // `store`, in the transaction of the run's change.
  RunService(core::FleetReads& fleet, RunStore& store, core::Clock& clock, RunServiceOptions options,
             std::function<void(const std::string&)> on_work);

  // Validates every workflow file of `dir` and stores new versions (kilnd start-up).
  Result<std::vector<std::string>> loadWorkflowDir(const std::string& dir, const core::Actor& actor);
  // Validates YAML for workflow `name` and makes it the current version (PUT /workflows/{name});
  // with `if_match`, only over the version that ETag names (412 if not).
  Result<WorkflowPut> putWorkflow(const std::string& name, const std::string& yaml, const core::Actor& actor,
                                  const std::optional<core::IfMatch>& if_match = std::nullopt);
  // Every workflow's current version, by name.
  Result<std::vector<WorkflowInfo>> listWorkflows();
  // kNotFound for a workflow that does not exist; the error of a version that does not load.
  Result<WorkflowInfo> getWorkflow(const std::string& name);

  // The run started, or the one that `req.owner` already has. Bad requests are kInvalidContent
  // with every bad field; a host in the wrong lifecycle state for the purpose is kConflict.
  Result<RunView> startRun(const StartRequest& req, const core::Actor& actor) override;
  Result<RunView> runView(const std::string& id);
  Result<core::Page<RunRow>> listRuns(const RunFilter& filter, const core::PageRequest& page);
  Result<RunView> cancelRun(const std::string& id, const core::Actor& actor);
  // RunControl (run_control.h): what the rollouts room uses.
  Status stopRun(const std::string& id, const core::Actor& actor) override;
  Result<RunStatus> runStatus(const std::string& id) override;
  Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) override;
  Result<std::vector<std::string>> workflowParams(const std::string& name) override;
  // The quarantine queue: each host with its repairs and newest validation run, timed by the clock.
  Result<std::vector<QuarantineEntry>> quarantineView();

  // Agent side: the assignments as the agents read them (the caller encodes them).
  Result<std::optional<protocol::Assignment>> claimWork(const std::string& host);
  // claimWork for many hosts in one transaction: the assignment of each host that got one.
  Result<std::map<std::string, HandedOut>> claimBatch(const std::vector<std::string>& hosts) override;
  using ReportAnswer = runs::ReportAnswer;  // agent_work.h
  using ReportRequest = AgentReport;
  // Agents' reports, applied in one transaction (RunStore::reportBatch); if that fails, one by
  // one, so one bad report costs only its own answer. A body with "ready": true says the agent
  // holds no other step: its next assignment is handed out with the acknowledgement (and the
  // host is not notified of it). One answer per report, in order.
  std::vector<Result<ReportAnswer>> reportBatch(const std::vector<ReportRequest>& reports) override;

  // One controller pass: due timers, expired leases, finished runs, unreachable agents.
  // Returns how many things it did (for tests and metrics).
  int tick();

  static std::string defaultPurpose(const std::string& workflow);

  // kiln_step_duration_seconds: the steps whose reports this replica applied, by workflow, step
  // and outcome (succeeded: exit 0; failed: another exit or a signal; timed_out; cancelled;
  // not_started: the agent could not spawn it), their durations as the agents measured them.
  std::string stepMetrics() const;

 private:
  struct LoadedSpec {
    workflow::WorkflowSpec spec;
  };
  Result<std::shared_ptr<const LoadedSpec>> spec(const std::string& name, const std::string& hash);
  static std::shared_ptr<const workflow::WorkflowSpec> specOf(const std::shared_ptr<const LoadedSpec>& loaded);
  GroupFn engineFn(std::function<Result<Effects>(const class Engine&, GroupState&)> event);
  std::vector<core::HostTransition> transitionsFor(const RunRow& run, const GroupState& g,
                                                   const std::vector<std::string>& finished) const;
  // Tells on_work about every host fx gave work or cancelled work, but the assignment
  // `delivered` (handed out in the same transaction).
  void notify(const Effects& fx, const std::string& delivered = "");
  void recordStep(const std::string& workflow, const std::string& step, const StepResult& r);

  core::FleetReads& fleet_;
  RunStore& store_;
  core::Clock& clock_;
  RunServiceOptions options_;
  std::function<void(const std::string&)> on_work_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const LoadedSpec>> specs_;  // by "name@hash"
  core::TimePoint last_unreachable_scan_;
  mutable std::mutex step_mu_;
  std::map<std::tuple<std::string, std::string, std::string>, Histogram> step_seconds_;
};

// A run's verdict from its groups: ("passed" | "failed" | "cancelled", summary JSON with
// per-host health, reasons and per-pod spare coverage). Pure.
std::pair<std::string, nlohmann::json> runVerdict(const RunRow& run, const std::vector<GroupState>& groups);

}  // namespace kiln::runs
