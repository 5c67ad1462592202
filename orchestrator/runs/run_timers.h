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

 private:
  WorkflowCatalog& catalog_;
  RunTimerStore& store_;
  core::Clock& clock_;
  std::chrono::seconds unreachable_after_;
  std::function<void(const std::string&)> on_work_;
  std::mutex mu_;
  core::TimePoint last_unreachable_scan_;
};

}  // namespace kiln::runs
