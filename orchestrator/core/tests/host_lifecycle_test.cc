#include "orchestrator/core/host_lifecycle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace kiln::core {
namespace {

using S = HostState;
using A = HostAction;

TEST(HostLifecycleTest, FollowsTheDesignTable) {
  struct Row { S from; A action; S to; };
  const Row rows[] = {
      {S::kIncoming, A::kStartBurnIn, S::kBurnIn},
      {S::kBurnIn, A::kBurnInPass, S::kAvailable},
      {S::kBurnIn, A::kBurnInFail, S::kFailed},
      {S::kAvailable, A::kAllocate, S::kAllocated},
      {S::kAllocated, A::kRelease, S::kAvailable},
      {S::kAvailable, A::kDrain, S::kDraining},
      {S::kAllocated, A::kDrain, S::kDraining},
      {S::kDraining, A::kUndrain, S::kAvailable},
      {S::kDraining, A::kDrained, S::kMaintenance},
      {S::kMaintenance, A::kMaintenanceDone, S::kValidating},
      {S::kValidating, A::kValidationPass, S::kAvailable},
      {S::kMaintenance, A::kValidationFail, S::kFailed},
      {S::kValidating, A::kValidationFail, S::kFailed},
      {S::kAllocated, A::kFail, S::kFailed},
      {S::kFailed, A::kRepair, S::kRepair},
      {S::kRepair, A::kRepairComplete, S::kQuarantine},
      {S::kQuarantine, A::kQuarantinePass, S::kAvailable},
      {S::kQuarantine, A::kQuarantineFail, S::kRepair},
      {S::kQuarantine, A::kRetire, S::kRetired},
      {S::kAllocated, A::kQuarantine, S::kQuarantine},
  };
  for (const auto& r : rows) {
    auto next = nextState(r.from, r.action);
    ASSERT_TRUE(next.ok()) << hostStateName(r.from) << " --" << hostActionName(r.action);
    EXPECT_EQ(*next, r.to) << hostStateName(r.from) << " --" << hostActionName(r.action);
  }
}

TEST(HostLifecycleTest, QuarantinedHostCannotBeUndrainedOrReleasedIntoThePool) {
  for (A a : {A::kUndrain, A::kRelease, A::kBurnInPass, A::kValidationPass, A::kAllocate}) {
    auto next = nextState(S::kQuarantine, a);
    ASSERT_FALSE(next.ok()) << hostActionName(a);
    EXPECT_EQ(next.error().code, ErrorCode::kConflict);
  }
}

TEST(HostLifecycleTest, RefusalNamesCurrentStateAndAllowedActions) {
  auto next = nextState(S::kFailed, A::kUndrain);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().details.at("state"), "failed");
  EXPECT_EQ(next.error().allowed, (std::vector<std::string>{"repair", "quarantine", "retire", "override"}));
}

TEST(HostLifecycleTest, RetiredIsTerminalEvenForOverride) {
  EXPECT_FALSE(nextState(S::kRetired, A::kOverride, S::kAvailable).ok());
  EXPECT_FALSE(nextState(S::kRetired, A::kRetire).ok());
  EXPECT_TRUE(allowedActions(S::kRetired, true).empty());
}

TEST(HostLifecycleTest, OverrideNeedsTargetState) {
  EXPECT_FALSE(nextState(S::kQuarantine, A::kOverride).ok());
  auto next = nextState(S::kQuarantine, A::kOverride, S::kAvailable);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, S::kAvailable);
  EXPECT_EQ(actionKind(A::kOverride), ActionKind::kAdmin);
}

TEST(HostLifecycleTest, SystemActionsAreNotOfferedToOperators) {
  auto ops = allowedActions(S::kQuarantine);
  EXPECT_EQ(std::find(ops.begin(), ops.end(), A::kQuarantinePass), ops.end());
  auto all = allowedActions(S::kQuarantine, true);
  EXPECT_NE(std::find(all.begin(), all.end(), A::kQuarantinePass), all.end());
}

TEST(HostLifecycleTest, NamesRoundTrip) {
  for (S s : allHostStates()) EXPECT_EQ(parseHostState(hostStateName(s)), s);
  EXPECT_EQ(parseHostAction("repair_complete"), A::kRepairComplete);
  EXPECT_FALSE(parseHostAction("explode").has_value());
}

TEST(HostLifecycleTest, OutOfServiceIsEveryStateBetweenLeavingThePoolAndComingBack) {
  std::vector<S> out;
  for (S s : allHostStates())
    if (outOfService(s)) out.push_back(s);
  EXPECT_EQ(out, (std::vector<S>{S::kDraining, S::kMaintenance, S::kValidating, S::kFailed, S::kRepair,
                                 S::kQuarantine}));
  for (S s : out) EXPECT_FALSE(servesJobs(s)) << hostStateName(s);
}

TEST(HostLifecycleTest, NamedSetsAndTheirSqlListsComeFromThePredicates) {
  EXPECT_EQ(servingHostStates(), (std::vector<S>{S::kAvailable, S::kAllocated}));
  EXPECT_EQ(hostStateSqlList(servingHostStates()), "('available', 'allocated')");
  EXPECT_EQ(hostStateSqlList(outOfServiceHostStates()),
            "('draining', 'maintenance', 'validating', 'failed', 'repair', 'quarantine')");
  for (S s : allHostStates()) {
    const bool listed = std::count(outOfServiceHostStates().begin(), outOfServiceHostStates().end(), s) > 0;
    EXPECT_EQ(listed, outOfService(s)) << s;
  }
}

TEST(HostLifecycleTest, UnservableAfterMaintenanceIsWhatNoDrainOrUpgradeBringsBack) {
  std::vector<S> out;
  for (S s : allHostStates())
    if (unservableAfterMaintenance(s)) out.push_back(s);
  EXPECT_EQ(out, (std::vector<S>{S::kIncoming, S::kBurnIn, S::kFailed, S::kRepair, S::kQuarantine, S::kRetired}));
  // Every other state serves jobs or comes back to it through maintenance.
  for (S s : allHostStates()) {
    if (!unservableAfterMaintenance(s)) {
      EXPECT_TRUE(servesJobs(s) || outOfService(s)) << s;
    }
  }
}

TEST(HostLifecycleTest, StatesPrintByName) {
  std::ostringstream os;
  os << S::kBurnIn;
  EXPECT_EQ(os.str(), "burn_in");
}

// ---- what follows a transition ----

TEST(HostLifecycleTest, EveryWayIntoQuarantineButAFailedValidationStartsQuarantineValidation) {
  for (S from : allHostStates())
    for (HostAction a : allowedActions(from, /*include_system=*/true)) {
      const std::optional<S> override_to = a == HostAction::kOverride ? std::optional<S>(S::kQuarantine) : std::nullopt;
      auto to = nextState(from, a, override_to);
      ASSERT_TRUE(to.ok()) << from << " " << hostActionName(a);
      // A host sent back to quarantine has a validation in hand or is on its way to repair;
      // every other arrival in quarantine (repair_complete, quarantine, override) needs one.
      EXPECT_EQ(followUps(a, *to).quarantine_validation, *to == S::kQuarantine)
          << from << " --" << hostActionName(a) << "--> " << *to;
    }
}

TEST(HostLifecycleTest, TheSchedulerHearsOfEveryMoveIntoOrOutOfTheJobPoolButItsOwn) {
  int crossings = 0;
  for (S from : allHostStates())
    for (HostAction a : allowedActions(from, /*include_system=*/true)) {
      std::vector<std::optional<S>> targets = {std::nullopt};
      if (a == HostAction::kOverride) {
        targets.clear();
        for (S t : allHostStates()) targets.push_back(t);
      }
      for (const auto& override_to : targets) {
        auto to = nextState(from, a, override_to);
        if (!to.ok()) continue;
        const bool crosses = servesJobs(from) != servesJobs(*to);
        const bool told = followUps(a, *to).scheduler;
        const std::string what = std::string(hostStateName(from)) + " --" + std::string(hostActionName(a)) + "--> " +
                                 std::string(hostStateName(*to));
        if (a == HostAction::kAllocate || a == HostAction::kRelease) {
          EXPECT_FALSE(told) << what << ": the scheduler's own move";
          continue;
        }
        if (crosses) {
          ++crossings;
          EXPECT_TRUE(told) << what;
        } else if (told) {
          // Told without a crossing only for an operator's action out of service, never for the
          // controllers' own steps (a rollout's hosts through maintenance do not wake it).
          EXPECT_TRUE(a == HostAction::kFail || a == HostAction::kQuarantine || a == HostAction::kRetire ||
                      a == HostAction::kOverride)
              << what;
        }
      }
    }
  EXPECT_GT(crossings, 5);
}

TEST(HostLifecycleTest, AnInterruptionCandidateIsAJobsHostThatFailed) {
  for (S from : allHostStates())
    for (S to : allHostStates()) EXPECT_EQ(interruptionCandidate(from, to), from == S::kAllocated && to == S::kFailed);
}

}  // namespace
}  // namespace kiln::core
