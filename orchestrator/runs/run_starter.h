#pragma once
// Starting a workflow run, all that a service which starts runs as a consequence of something
// else needs of the runs room (the fleet service's quarantine validation after a repair).
// RunService implements it; tests give a fake that records what was started.

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/run_views.h"
#include "orchestrator/runs/start_request.h"

namespace kiln::runs {

class RunStarter {
 public:
  virtual ~RunStarter() = default;
  // The run started, or the one that `req.owner` already has (RunService::startRun).
  virtual Result<RunView> startRun(const StartRequest& req, const core::Actor& actor) = 0;
};

}  // namespace kiln::runs
