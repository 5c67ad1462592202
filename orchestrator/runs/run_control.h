#pragma once
// What the rollouts room needs of the runs room: start a pod's runs, follow them (many states in
// one query, a finished run's verdict per host), stop one at a safe point, and know a workflow's
// parameters. RunService implements it (run_service.h); the rollout controller and service hold
// only this.

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/engine.h"
#include "orchestrator/runs/run_starter.h"

namespace kiln::runs {

struct RunStatus {
  std::string state;  // running | passed | failed | cancelled
  std::map<std::string, HostStatus> hosts;
  std::map<std::string, std::string> reasons;  // first failure per host
};

class RunControl : public RunStarter {
 public:
  // Stops a run at a safe point (no step is killed); it finishes when running steps report.
  virtual Status stopRun(const std::string& id, const core::Actor& actor) = 0;
  // Every group's state of a run, summed up per host. kNotFound for an unknown run.
  virtual Result<RunStatus> runStatus(const std::string& id) = 0;
  // run id -> state (running | passed | failed | cancelled) of the runs of `ids` that exist, in
  // one query: for a controller that polls many runs and needs runStatus only for finished ones.
  virtual Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) = 0;
  // The parameters a workflow's current version takes; kNotFound for an unknown workflow.
  virtual Result<std::vector<std::string>> workflowParams(const std::string& name) = 0;
};

}  // namespace kiln::runs
