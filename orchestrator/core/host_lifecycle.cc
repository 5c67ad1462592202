#include "orchestrator/core/host_lifecycle.h"

#include <array>
#include <initializer_list>
#include <ostream>

namespace kiln::core {
namespace {

using S = HostState;
using A = HostAction;

struct StateName {
  S state;
  std::string_view name;
};
constexpr std::array kStateNames = {
    StateName{S::kIncoming, "incoming"},       StateName{S::kBurnIn, "burn_in"},
    StateName{S::kAvailable, "available"},     StateName{S::kAllocated, "allocated"},
    StateName{S::kDraining, "draining"},       StateName{S::kMaintenance, "maintenance"},
    StateName{S::kValidating, "validating"},   StateName{S::kFailed, "failed"},
    StateName{S::kRepair, "repair"},           StateName{S::kQuarantine, "quarantine"},
    StateName{S::kRetired, "retired"},
};

struct Rule {
  A action;
  std::string_view name;
  ActionKind kind;
  std::initializer_list<S> from;  // empty = any state but retired (retire, override)
  S to;
};

// The whole lifecycle (docs/DESIGN.md "Host lifecycle"). Order is the order shown to operators.
const std::array kRules = {
    Rule{A::kAllocate, "allocate", ActionKind::kOperator, {S::kAvailable}, S::kAllocated},
    Rule{A::kRelease, "release", ActionKind::kOperator, {S::kAllocated}, S::kAvailable},
    Rule{A::kDrain, "drain", ActionKind::kOperator, {S::kAvailable, S::kAllocated}, S::kDraining},
    Rule{A::kUndrain, "undrain", ActionKind::kOperator, {S::kDraining}, S::kAvailable},
    Rule{A::kFail, "fail", ActionKind::kOperator,
         {S::kBurnIn, S::kAvailable, S::kAllocated, S::kDraining, S::kMaintenance, S::kValidating},
         S::kFailed},
    Rule{A::kRepair, "repair", ActionKind::kOperator, {S::kFailed}, S::kRepair},
    Rule{A::kRepairComplete, "repair_complete", ActionKind::kOperator, {S::kRepair},
         S::kQuarantine},
    // Not in docs/DESIGN.md's table: pulling a lemon host (reliability ledger) before it hurts the
    // next job, without a fake repair. It leaves the pool only through quarantine validation.
    Rule{A::kQuarantine, "quarantine", ActionKind::kOperator,
         {S::kAvailable, S::kAllocated, S::kDraining, S::kMaintenance, S::kValidating, S::kFailed}, S::kQuarantine},
    Rule{A::kRetire, "retire", ActionKind::kOperator, {}, S::kRetired},
    Rule{A::kOverride, "override", ActionKind::kAdmin, {}, S::kRetired /* override_to */},
    Rule{A::kStartBurnIn, "start_burn_in", ActionKind::kSystem, {S::kIncoming}, S::kBurnIn},
    Rule{A::kBurnInPass, "burn_in_pass", ActionKind::kSystem, {S::kBurnIn}, S::kAvailable},
    Rule{A::kBurnInFail, "burn_in_fail", ActionKind::kSystem, {S::kBurnIn}, S::kFailed},
    Rule{A::kDrained, "drained", ActionKind::kSystem, {S::kDraining}, S::kMaintenance},
    Rule{A::kMaintenanceDone, "maintenance_done", ActionKind::kSystem, {S::kMaintenance},
         S::kValidating},
    Rule{A::kValidationPass, "validation_pass", ActionKind::kSystem, {S::kValidating},
         S::kAvailable},
    Rule{A::kValidationFail, "validation_fail", ActionKind::kSystem,
         {S::kMaintenance, S::kValidating}, S::kFailed},
    Rule{A::kQuarantinePass, "quarantine_pass", ActionKind::kSystem, {S::kQuarantine},
         S::kAvailable},
    Rule{A::kQuarantineFail, "quarantine_fail", ActionKind::kSystem, {S::kQuarantine},
         S::kRepair},
};

const Rule& ruleFor(A action) {
  for (const auto& r : kRules)
    if (r.action == action) return r;
  KILN_CHECK(false && "every action has a rule");
}

bool ruleAllows(const Rule& r, S from) {
  if (from == S::kRetired) return false;  // terminal, even for override
  if (r.from.size() == 0) return true;
  for (S s : r.from)
    if (s == from) return true;
  return false;
}

}  // namespace

std::string_view hostStateName(HostState s) {
  for (const auto& n : kStateNames)
    if (n.state == s) return n.name;
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, HostState s) { return os << hostStateName(s); }

std::optional<HostState> parseHostState(std::string_view name) {
  for (const auto& n : kStateNames)
    if (n.name == name) return n.state;
  return std::nullopt;
}

const std::vector<HostState>& allHostStates() {
  static const std::vector<HostState> all = [] {
    std::vector<HostState> v;
    for (const auto& n : kStateNames) v.push_back(n.state);
    return v;
  }();
  return all;
}

std::string_view hostActionName(HostAction a) { return ruleFor(a).name; }

std::optional<HostAction> parseHostAction(std::string_view name) {
  for (const auto& r : kRules)
    if (r.name == name) return r.action;
  return std::nullopt;
}

ActionKind actionKind(HostAction a) { return ruleFor(a).kind; }

bool inService(HostState s) {
  switch (s) {
    case S::kBurnIn: case S::kAvailable: case S::kAllocated: case S::kDraining:
    case S::kMaintenance: case S::kValidating:
      return true;
    default:
      return false;
  }
}

bool servesJobs(HostState s) { return s == S::kAvailable || s == S::kAllocated; }

bool outOfService(HostState s) {
  switch (s) {
    case S::kDraining: case S::kMaintenance: case S::kValidating:
    case S::kFailed: case S::kRepair: case S::kQuarantine:
      return true;
    default:
      return false;
  }
}

bool unservableAfterMaintenance(HostState s) {
  switch (s) {
    case S::kFailed: case S::kRepair: case S::kQuarantine:
    case S::kIncoming: case S::kBurnIn: case S::kRetired:
      return true;
    default:
      return false;
  }
}

namespace {
std::vector<HostState> statesWhere(bool (*in)(HostState)) {
  std::vector<HostState> out;
  for (S s : allHostStates())
    if (in(s)) out.push_back(s);
  return out;
}
}  // namespace

const std::vector<HostState>& servingHostStates() {
  static const std::vector<HostState> states = statesWhere(servesJobs);
  return states;
}

const std::vector<HostState>& outOfServiceHostStates() {
  static const std::vector<HostState> states = statesWhere(outOfService);
  return states;
}

std::string hostStateSqlList(const std::vector<HostState>& states) {
  // Host state names are lowercase words: nothing to escape.
  std::string out = "(";
  for (S s : states) out += (out.size() == 1 ? "'" : ", '") + std::string(hostStateName(s)) + "'";
  return out + ")";
}

Result<HostState> nextState(HostState from, HostAction action,
                            std::optional<HostState> override_to) {
  const Rule& rule = ruleFor(action);
  if (!ruleAllows(rule, from)) {
    Error e = conflict("action '" + std::string(rule.name) + "' is not allowed in state '" +
                       std::string(hostStateName(from)) + "'");
    e.with("state", std::string(hostStateName(from)));
    for (A a : allowedActions(from)) e.allowed.emplace_back(hostActionName(a));
    return e;
  }
  if (action == A::kOverride) {
    if (!override_to) return invalidContent("override needs a target state ('to')");
    return *override_to;
  }
  return rule.to;
}

std::vector<HostAction> allowedActions(HostState from, bool include_system) {
  std::vector<HostAction> out;
  for (const auto& r : kRules) {
    if (r.kind == ActionKind::kSystem && !include_system) continue;
    if (ruleAllows(r, from)) out.push_back(r.action);
  }
  return out;
}

bool interruptionCandidate(HostState from, HostState to) {
  return from == S::kAllocated && to == S::kFailed;
}

FollowUps followUps(HostAction action, HostState to) {
  FollowUps f;
  f.quarantine_validation =
      to == S::kQuarantine && (action == A::kRepairComplete || action == A::kQuarantine || action == A::kOverride);
  if (action != A::kAllocate && action != A::kRelease)
    f.scheduler = servesJobs(to) || action == A::kDrain || action == A::kFail || action == A::kQuarantine ||
                  action == A::kRetire || action == A::kOverride;
  return f;
}

}  // namespace kiln::core
