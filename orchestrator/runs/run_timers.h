#pragma once
// The runs room's timer pass: groups whose timer is due (retries, soaks, step timeouts), leases
// that ran out (the step is lost), runs whose groups are all done (their verdict), agents that
// stopped polling (unreachable). Over its own narrow store (RunTimerStore, run_store.h). Owns no
// threads: the controller calls tick(). Thread-safe.

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/drain_gate.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/workflow_catalog.h"

namespace kiln::runs {

class RunTimers {
 public:
  // `on_work(host)`: as AgentWorkService's, for the work a timer gave or took.
  RunTimers(WorkflowCatalog& catalog, RunTimerStore& store, core::Clock& clock, std::chrono::seconds unreachable_after,
            std::function<void(const std::string&)> on_work);

  // One pass. Returns how many things it did (for tests and metrics).
  int tick();

  // The job scheduler's drain gate (drain_gate.h): a group with a host held there is asked
  // again when its timer is due. `fleet` reads the held hosts. Set once, before the first tick.
  void setDrainGate(DrainGate gate, core::FleetReads& fleet) {
    drain_gate_ = std::move(gate);
    fleet_ = &fleet;
  }

 private:
  WorkflowCatalog& catalog_;
  RunTimerStore& store_;
  core::Clock& clock_;
  std::chrono::seconds unreachable_after_;
  std::function<void(const std::string&)> on_work_;
  std::mutex mu_;
  core::TimePoint last_unreachable_scan_;
  DrainGate drain_gate_;
  core::FleetReads* fleet_ = nullptr;
};

}  // namespace kiln::runs
