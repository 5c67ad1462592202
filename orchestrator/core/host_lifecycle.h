#pragma once
// The host lifecycle of docs/DESIGN.md as one table of allowed transitions. This is the only place
// that decides whether a host may move from one state to another; the store applies a
// transition only after asking here, and records every one as a host event.
//
// Pure: no I/O, no clock. Thread-safe (immutable tables).

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kiln::core {

enum class HostState {
  kIncoming,
  kBurnIn,
  kAvailable,
  kAllocated,
  kDraining,
  kMaintenance,
  kValidating,
  kFailed,
  kRepair,
  kQuarantine,
  kRetired,
};

// What moves a host. Operator actions come from the REST API; system actions only from Kiln's
// own controllers (burn-in runs, rollouts, quarantine validation).
enum class HostAction {
  // operator (or job scheduler) actions
  kAllocate,        // available -> allocated (the scheduler takes it)
  kRelease,         // allocated -> available
  kDrain,           // available | allocated -> draining
  kUndrain,         // draining -> available
  kFail,            // any in service -> failed
  kRepair,          // failed -> repair (sent to repair)
  kRepairComplete,  // repair -> quarantine
  kQuarantine,      // a lemon host (or any in service / failed) straight to quarantine validation
  kRetire,          // any -> retired (terminal)
  kOverride,        // admin: any non-retired -> any, reason required
  // system actions
  kStartBurnIn,       // incoming -> burn_in
  kBurnInPass,        // burn_in -> available
  kBurnInFail,        // burn_in -> failed
  kDrained,           // draining -> maintenance (no job left)
  kMaintenanceDone,   // maintenance -> validating
  kValidationPass,    // validating -> available
  kValidationFail,    // maintenance | validating -> failed
  kQuarantinePass,    // quarantine -> available
  kQuarantineFail,    // quarantine -> repair
};

enum class ActionKind { kOperator, kAdmin, kSystem };

std::string_view hostStateName(HostState s);
// Writes hostStateName (test failures print the name).
std::ostream& operator<<(std::ostream& os, HostState s);
std::optional<HostState> parseHostState(std::string_view name);
const std::vector<HostState>& allHostStates();

std::string_view hostActionName(HostAction a);
std::optional<HostAction> parseHostAction(std::string_view name);
ActionKind actionKind(HostAction a);

// True for states in which a host counts as in service (can fail by operator or health check).
bool inService(HostState s);
// True for states in which the host's GPUs can serve jobs (available or allocated).
bool servesJobs(HostState s);
// True for states in which a host has left the job pool and not yet come back: on its way
// through maintenance (draining, maintenance, validating) or out for a fault (failed, repair,
// quarantine). New hardware (incoming, burn_in) and retired hosts are not counted: they are not
// missing from the pool, they were never in it or are gone for good.
bool outOfService(HostState s);
// True for states from which no drain, upgrade or validation brings a host back to serve jobs: a
// fault (failed, repair, quarantine), new hardware (incoming, burn_in) or retired. Rollout
// admission counts these against the hosts a pod needs after its upgrade.
bool unservableAfterMaintenance(HostState s);

// The sets above as lists, in allHostStates() order (the stores write their SQL from them).
const std::vector<HostState>& servingHostStates();       // servesJobs
const std::vector<HostState>& outOfServiceHostStates();  // outOfService
// "('available', 'allocated')": a set of host states as an SQL list of text literals.
std::string hostStateSqlList(const std::vector<HostState>& states);

// The state an action leads to from `from`, or kConflict naming the current state and the
// actions allowed from it. `override_to` is required for kOverride and ignored otherwise.
Result<HostState> nextState(HostState from, HostAction action,
                            std::optional<HostState> override_to = std::nullopt);

// Actions of the given kinds allowed from a state, in table order.
std::vector<HostAction> allowedActions(HostState from, bool include_system = false);

// ---- What follows a transition (fleet::FleetService applies these; the stores the first) ----

// A job was running on the host when it failed: the transition records an interruption
// candidate for triage, in its own transaction.
bool interruptionCandidate(HostState from, HostState to);

// What must happen after a transition `action` that led to `to` committed.
struct FollowUps {
  // Every repair goes through quarantine validation before the pool (docs/FACTS.md): a host that
  // entered quarantine (repair_complete, quarantine, or an admin's override to it) gets a
  // quarantine-validation run.
  bool quarantine_validation = false;
  // The host entered or left the job pool by Kiln's hand: the job scheduler's driver hears of
  // it (scheduler::Driver::hostsMoved) so it drains or resumes the node now, not at its next
  // reading. Not for the scheduler's own moves (allocate, release). Judged from the action and
  // the state reached: a return to the pool (servesJobs(to)) or an action that takes a serving
  // host out of it (drain, fail, quarantine, retire, override).
  bool scheduler = false;
};
FollowUps followUps(HostAction action, HostState to);

}  // namespace kiln::core
