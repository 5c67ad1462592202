#pragma once
// The drain gate for runs that take hosts out of service (runs/drain_gate.h: burn-in,
// quarantine validation, maintenance and manual runs), over the job scheduler's driver. One
// rule, here:
//
//   - a host Kiln counts in the job pool (available, allocated) waits until someone drains it:
//     a run does not take a serving host out of the pool on its own, nor run under its job;
//   - any other host waits for the driver's gate (Slurm: its node drained and no job left on it),
//     as a rollout's host does before it goes to maintenance;
//   - with no driver there is no gate (kilnd does not set one).
//
// The answer is why the host waits, nullopt when its first step may start.

#include <optional>
#include <string>

#include "orchestrator/core/host_lifecycle.h"
#include "orchestrator/scheduler/driver.h"

namespace kiln::scheduler {

inline std::optional<std::string> runHeldBack(Driver& driver, const core::HostSummary& host,
                                              const std::string& run_id) {
  const std::string state(core::hostStateName(host.state));
  if (core::servesJobs(host.state))
    return "host " + host.id + " is " + state + " (in the job pool): drain it first (POST /api/v1/hosts/" + host.id +
           "/actions {\"action\": \"drain\"}); its first step starts once the job scheduler has drained it";
  return driver.heldBack(host, "kiln: " + state + ", run " + run_id);
}

}  // namespace kiln::scheduler
