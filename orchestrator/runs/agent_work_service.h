#pragma once
// The agents' side of the runs room: steps handed out to the agents that poll, and their
// reports applied to the engine (AgentWork, agent_work.h: all the gateway sees of it). Over its
// own narrow store (AgentWorkStore, run_store.h). Owns no threads. Thread-safe.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/agent_protocol.h"
#include "common/histogram.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/runs/agent_work.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/workflow_catalog.h"

namespace kiln::runs {

struct AgentWorkOptions {
  std::int64_t lease_grace_ms = 30000;  // beyond a step's timeout before its assignment is lost
  // Called (from the thread that applied the reports) when agents' reports closed the last
  // open group of a run: its verdict is due at the timer pass. Lets the controller wake at
  // once instead of at its next periodic pass.
  std::function<void()> on_run_complete;
  // A run's purpose (runPriority's source; RunsRoom reads the run's row). None: every run is
  // maintenance.
  std::function<Result<std::string>(const std::string& run_id)> run_purpose;
};

class AgentWorkService final : public AgentWork {
 public:
  // `on_work(host)` is called after a commit that gave the host new work or cancelled its work
  // (agent_work.h: how kilnd wires it to the gateway).
  AgentWorkService(WorkflowCatalog& catalog, AgentWorkStore& store, core::Clock& clock, AgentWorkOptions options,
                   std::function<void(const std::string&)> on_work);

  // The assignment as the agents read it (the caller encodes it).
  Result<std::optional<protocol::Assignment>> claimWork(const std::string& host);
  // claimWork for many hosts in one transaction: the assignment of each host that got one.
  Result<std::map<std::string, HandedOut>> claimBatch(const std::vector<std::string>& hosts) override;
  using ReportRequest = AgentReport;
  // Agents' reports, applied in one transaction (AgentWorkStore::reportBatch); if that fails,
  // one by one, so one bad report costs only its own answer. A body with "ready": true says the
  // agent holds no other step: its next assignment is handed out with the acknowledgement (and
  // the host is not notified of it). One answer per report, in order.
  std::vector<Result<ReportAnswer>> reportBatch(const std::vector<ReportRequest>& reports) override;
  // From the run's purpose, read once per run (a run's purpose never changes) and kept for the
  // newest 100,000 runs. A run that cannot be read (the database away) is maintenance, not kept.
  Priority runPriority(const std::string& run_id) override;

  // kiln_step_duration_seconds: the steps whose reports this replica applied, by workflow, step
  // and outcome (succeeded: exit 0; failed: another exit or a signal; timed_out; cancelled;
  // not_started: the agent could not spawn it), their durations as the agents measured them.
  std::string stepMetrics() const;

 private:
  void recordStep(const std::string& workflow, const std::string& step, const StepResult& r);

  WorkflowCatalog& catalog_;
  AgentWorkStore& store_;
  core::Clock& clock_;
  AgentWorkOptions options_;
  std::function<void(const std::string&)> on_work_;
  std::mutex priority_mu_;
  std::map<std::string, Priority> priority_of_;
  mutable std::mutex step_mu_;
  std::map<std::tuple<std::string, std::string, std::string>, Histogram> step_seconds_;
};

}  // namespace kiln::runs
