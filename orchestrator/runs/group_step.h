#pragma once
// What every part of the runs room applies to a group under its lock (run_store.h's GroupFn):
// the run's workflow version through the engine, an event (a report, a timer, a stop), and the
// host lifecycle moves the hosts' verdicts make. Shared by RunService (start, stop, cancel),
// AgentWorkService (reports) and RunTimers (timers, lost leases). Thread-safe.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/engine.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/workflow_catalog.h"

namespace kiln::runs {

using EngineEvent = std::function<Result<Effects>(const Engine&, GroupState&)>;

// The GroupFn that loads the run's workflow version from `catalog`, applies `event` and adds
// verdictTransitions for the hosts it finished.
GroupFn engineStep(WorkflowCatalog& catalog, EngineEvent event);

// The lifecycle moves of the hosts of `finished` that reached a verdict in the group, by the
// run's purpose: burn-in and quarantine validation pass or fail them, a failed pre-job check
// fails the host; others move nothing. Pure.
std::vector<core::HostTransition> verdictTransitions(const RunRow& run, const GroupState& g,
                                                     const std::vector<std::string>& finished);

// A run's free-form parameters as the engine takes them.
workflow::ParamValues runParams(const nlohmann::json& params);

// Calls `on_work(host)` for every host `fx` gave work or cancelled work, but the assignment
// `delivered` (handed out in the same transaction).
void notifyWork(const std::function<void(const std::string&)>& on_work, const Effects& fx,
                const std::string& delivered = "");

}  // namespace kiln::runs
