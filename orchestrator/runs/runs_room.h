#pragma once
// The runs room as kilnd puts it together: one RunStore behind the four parts, each of which
// holds only its own face of it (run_store.h). Tests of one part build that part alone over
// its fake; tests that drive runs end to end (start, agents' reports, timers) take the room.

#include <functional>
#include <string>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/agent_work_service.h"
#include "orchestrator/runs/run_service.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/run_timers.h"
#include "orchestrator/runs/workflow_catalog.h"

namespace kiln::runs {

struct RunsRoom {
  // `on_work(host)`: every part's commits that give a host work or take it away.
  RunsRoom(core::FleetReads& fleet, RunStore& store, core::Clock& clock, const RunServiceOptions& options,
           const std::function<void(const std::string&)>& on_work)
      : workflows(store),
        runs(fleet, workflows, store, clock, options, on_work),
        agent_work(workflows, store, clock,
                   {options.lease_grace_ms, options.on_run_complete,
                    [&store](const std::string& run_id) -> Result<std::string> {
                      auto run = store.getRun(run_id);
                      if (!run.ok()) return run.error();
                      return run->purpose;
                    }},
                   on_work),
        timers(workflows, store, clock, options.unreachable_after, on_work) {}

  // The job scheduler's drain gate for runs that take hosts out of service (drain_gate.h):
  // kilnd sets it once its scheduler driver exists, before serving.
  void setDrainGate(const DrainGate& gate, core::FleetReads& fleet) {
    runs.setDrainGate(gate);
    timers.setDrainGate(gate, fleet);
  }

  WorkflowCatalog workflows;    // PUT/GET /workflows, the workflow directory
  RunService runs;              // /workflow-runs, the rollouts' RunControl, the fleet's RunStarter
  AgentWorkService agent_work;  // the agent gateway's AgentWork
  RunTimers timers;             // the controller's pass
};

}  // namespace kiln::runs
