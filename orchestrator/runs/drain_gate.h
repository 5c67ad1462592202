#pragma once
// The job scheduler's drain gate for runs that take hosts out of service (issue 35): a
// burn-in, quarantine validation, maintenance or manual run starts a host's first step only
// once the scheduler says no job can run there (Slurm: its node drained and empty), as a
// rollout moves a host to maintenance only then (controller_drain.cc). Until then the host
// waits: `waiting_for` says why, `not_before` is the next look (kDrainGateRecheck later).
//
// The rule is applied in two places, both through holdAtDrainGate(): when the run is created
// (RunService::startRun, every host not yet started) and on each timer tick of a group with a
// host held (RunTimers::tick, only the held hosts). A host once let through is never held
// again: a run's later steps are not stopped by a job the scheduler places later.
//
// Pre-job checks are not gated (they run before the job, on its hosts, by its own prolog), nor
// are rollouts' runs (the controller gates their hosts before starting them). With no scheduler
// driver there is no gate. Pure.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orchestrator/core/store.h"
#include "orchestrator/runs/engine.h"

namespace kiln::runs {

inline constexpr std::chrono::seconds kDrainGateRecheck{5};

// The run purposes that wait for the gate.
inline bool waitsForDrainGate(std::string_view purpose) {
  return purpose == "burn_in" || purpose == "quarantine" || purpose == "maintenance" || purpose == "manual";
}

// The gate as the runs room asks it: nullopt when `host`'s first step in run `run_id` may start,
// else why it waits. kilnd builds it over the scheduler driver (scheduler/run_gate.h).
using DrainGate = std::function<std::optional<std::string>(const core::HostSummary& host, const std::string& run_id)>;
// The same question for one run's group, by host id.
using HostGate = std::function<std::optional<std::string>(const std::string& host)>;

// True for a host of the group that has not started: no step handed out yet, first pass.
inline bool notStarted(const HostRun& h) {
  return (h.status == HostStatus::kPending || h.status == HostStatus::kRunning) && h.assignment_id.empty() &&
         h.dispatched_at == TimePoint{} && h.step_index == 0 && h.pass == 1 && h.attempt == 1;
}

// Asks the gate for the group's hosts: every host not started when `at_start`, else only the
// hosts it holds now. A held host gets `waiting_for` and `not_before = now + kDrainGateRecheck`
// (the engine starts no step before not_before; its timer brings the group back then). A host
// let through loses both, and the engine may start it now. Returns the hosts held.
inline std::vector<std::string> holdAtDrainGate(GroupState& g, TimePoint now, bool at_start, const HostGate& gate) {
  std::vector<std::string> held;
  if (!gate) return held;
  for (auto& h : g.hosts) {
    if (!notStarted(h) || (!at_start && h.waiting_for.empty())) continue;
    if (auto why = gate(h.host)) {
      h.waiting_for = *why;
      h.not_before = now + kDrainGateRecheck;
      held.push_back(h.host);
    } else if (!h.waiting_for.empty()) {
      h.waiting_for.clear();
      h.not_before.reset();
    }
  }
  return held;
}

// The hosts of the group the gate holds now (not started, waiting_for set).
inline std::vector<std::string> heldAtDrainGate(const GroupState& g) {
  std::vector<std::string> out;
  for (const auto& h : g.hosts)
    if (notStarted(h) && !h.waiting_for.empty()) out.push_back(h.host);
  return out;
}

}  // namespace kiln::runs
