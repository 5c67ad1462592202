#pragma once
// The fleet service: the one way kilnd moves a host through its lifecycle, and what follows
// each move (core::followUps: quarantine validation after a repair, the job scheduler's drain
// or resume). REST host actions, the Slurm driver and the rollout controller all move hosts
// through it, so a new path to a state (the coming power-recovery path, a second scheduler)
// cannot skip a rule. Whether a move is allowed is core::nextState's, checked by the store
// under the host's row lock; an interruption candidate (core::interruptionCandidate) is written
// by the store in the move's own transaction. The follow-ups run after the commit: a failed
// one is said (the returned Moved, the log) and never undoes the move.
//
// The one path that does not come through here: the host moves a run's verdict makes
// (burn-in, quarantine, validation), which the run store commits with the reports that decided
// them (runs/run_store.h). None of them needs a follow-up but the scheduler's resume of a
// quarantine pass, which the Slurm driver makes at its next reading.
//
// Thread-safe (its collaborators are).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/logger.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/run_starter.h"
#include "orchestrator/scheduler/driver.h"

namespace kiln::fleet {

// One host moved, as POST /hosts/{id}/actions answers it.
struct Moved {
  core::HostSummary host;                           // as the move left it
  std::optional<std::string> quarantine_run;        // the quarantine-validation run started
  std::optional<std::string> quarantine_run_error;  // why it could not be started
};

// It is the core::FleetHosts the rollout controller holds and the core::HostMoves the Slurm
// driver holds: reads pass through to the store, moves get their follow-ups.
class FleetService final : public core::FleetHosts {
 public:
  // `runs` starts quarantine validation (null: none is started, e.g. tools without runs);
  // `scheduler` is set later with setScheduler (kilnd builds the driver after this service,
  // whose moves the Slurm driver makes).
  FleetService(core::HostLifecycle& hosts, runs::RunStarter* runs, Logger& log);

  // The job scheduler's driver, or null. Call before the service is shared between threads.
  void setScheduler(scheduler::Driver* driver) { scheduler_ = driver; }

  // One move (an operator's action), answered with the host as the move's transaction left it:
  // kNotFound, kConflict as the store says; then its follow-ups.
  Result<Moved> move(const core::HostTransition& t, const core::Actor& actor);

  // core::HostMoves: many moves in one transaction (core::HostMoves), then the follow-ups of
  // those that applied.
  Result<std::vector<Result<core::HostState>>> transitionHosts(const std::vector<core::HostTransition>& transitions,
                                                               const core::Actor& actor) override;
  Result<core::PodDetail> getPod(const std::string& id) override { return hosts_.getPod(id); }

 private:
  struct FollowUpOutcome {
    std::map<std::string, std::string> quarantine_runs, quarantine_errors;  // by host
  };
  // The follow-ups of the moves that applied (`to[i]` set for those).
  FollowUpOutcome followUp(const std::vector<core::HostTransition>& moves,
                           const std::vector<std::optional<core::HostState>>& to, const core::Actor& actor);

  core::HostLifecycle& hosts_;
  runs::RunStarter* runs_;
  Logger& log_;
  scheduler::Driver* scheduler_ = nullptr;
};

}  // namespace kiln::fleet
