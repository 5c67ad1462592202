// The fleet service over the fleet fake, a recording run starter and the fake scheduler driver.

#include "orchestrator/fleet/fleet_service.h"

#include <gtest/gtest.h>

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/scheduler/testing/fake_driver.h"

namespace kiln::fleet {
namespace {

using core::HostAction;
using core::HostState;

// Starts nothing; records what it was asked to start, and refuses while `refuse` is set.
class RecordingStarter final : public runs::RunStarter {
 public:
  Result<runs::RunView> startRun(const runs::StartRequest& req, const core::Actor&) override {
    if (!refuse.empty()) return conflict(refuse);
    started.push_back(req);
    runs::RunView v;
    v.row.id = "r-" + std::to_string(started.size());
    return v;
  }
  std::vector<runs::StartRequest> started;
  std::string refuse;
};

class FleetServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_.addPod("b1-p1", "b1");
    service_.setScheduler(&scheduler_);
  }
  const core::Actor op_{"tok-1", "alice"};
  core::testing::FakeFleet fleet_;
  RecordingStarter runs_;
  scheduler::testing::FakeDriver scheduler_;
  RecordingLogger log_;
  FleetService service_{fleet_, &runs_, log_};
};

TEST_F(FleetServiceTest, ARepairedHostGoesThroughQuarantineValidation) {
  fleet_.setState("b1-p1-h05", HostState::kRepair);
  auto moved = service_.move({"b1-p1-h05", HostAction::kRepairComplete, std::nullopt, "new HBM"}, op_);
  ASSERT_TRUE(moved.ok()) << moved.error().message;
  EXPECT_EQ(moved->host.state, HostState::kQuarantine);
  EXPECT_EQ(moved->host.state_reason, "new HBM");
  ASSERT_EQ(runs_.started.size(), 1u);
  EXPECT_EQ(runs_.started[0].workflow, "quarantine-validation");
  EXPECT_EQ(runs_.started[0].hosts, std::vector<std::string>{"b1-p1-h05"});
  EXPECT_EQ(runs_.started[0].purpose, "quarantine");
  EXPECT_EQ(moved->quarantine_run, "r-1");
  EXPECT_FALSE(moved->quarantine_run_error.has_value());
}

TEST_F(FleetServiceTest, TheRuleHoldsForEveryPathIntoQuarantineNotOnlyRestsRepairComplete) {
  // A batch (the Slurm driver's and the controller's path) and an admin's override.
  fleet_.setState("b1-p1-h01", HostState::kRepair);
  fleet_.setState("b1-p1-h02", HostState::kFailed);
  auto batch = service_.transitionHosts({{"b1-p1-h01", HostAction::kRepairComplete, std::nullopt, "fixed"},
                                         {"b1-p1-h02", HostAction::kQuarantine, std::nullopt, "lemon"}},
                                        {"system", "slurm"});
  ASSERT_TRUE(batch.ok());
  auto over = service_.move({"b1-p1-h03", HostAction::kOverride, HostState::kQuarantine, "suspect"}, op_);
  ASSERT_TRUE(over.ok());
  ASSERT_EQ(runs_.started.size(), 3u);
  EXPECT_EQ(runs_.started[0].hosts, std::vector<std::string>{"b1-p1-h01"});
  EXPECT_EQ(runs_.started[1].hosts, std::vector<std::string>{"b1-p1-h02"});
  EXPECT_EQ(runs_.started[2].hosts, std::vector<std::string>{"b1-p1-h03"});
}

TEST_F(FleetServiceTest, ARefusedMoveHasNoFollowUpsAndChangesNothing) {
  // available -> quarantine through repair_complete is not a transition.
  auto moved = service_.move({"b1-p1-h05", HostAction::kRepairComplete, std::nullopt, "x"}, op_);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code, ErrorCode::kConflict);
  EXPECT_EQ(fleet_.state("b1-p1-h05"), HostState::kAvailable);
  EXPECT_TRUE(runs_.started.empty());
  EXPECT_TRUE(scheduler_.moved().empty());
  auto missing = service_.move({"nope", HostAction::kDrain, std::nullopt, "x"}, op_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);

  // In a batch the refused one is skipped and the others follow up.
  fleet_.setState("b1-p1-h06", HostState::kRepair);
  auto batch = service_.transitionHosts({{"b1-p1-h05", HostAction::kRepairComplete, std::nullopt, "x"},
                                         {"b1-p1-h06", HostAction::kRepairComplete, std::nullopt, "y"}},
                                        op_);
  ASSERT_TRUE(batch.ok());
  EXPECT_FALSE((*batch)[0].ok());
  EXPECT_TRUE((*batch)[1].ok());
  ASSERT_EQ(runs_.started.size(), 1u);
  EXPECT_EQ(runs_.started[0].hosts, std::vector<std::string>{"b1-p1-h06"});
}

TEST_F(FleetServiceTest, AValidationThatCannotStartIsSaidAndTheMoveStands) {
  fleet_.setState("b1-p1-h05", HostState::kRepair);
  runs_.refuse = "no workflow 'quarantine-validation'";
  auto moved = service_.move({"b1-p1-h05", HostAction::kRepairComplete, std::nullopt, "fixed"}, op_);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->host.state, HostState::kQuarantine);  // never undone: the host is not back in the pool
  EXPECT_FALSE(moved->quarantine_run.has_value());
  EXPECT_EQ(moved->quarantine_run_error, "no workflow 'quarantine-validation'");
  EXPECT_EQ(log_.count(LogLevel::kWarn, "b1-p1-h05 entered quarantine but its quarantine validation did not start"), 1);
}

TEST_F(FleetServiceTest, TheSchedulerHearsOfDrainsAndReturnsButNotOfItsOwnMovesOrMaintenanceSteps) {
  ASSERT_TRUE(service_.move({"b1-p1-h01", HostAction::kAllocate, std::nullopt, "job 7"}, {"system", "slurm"}).ok());
  EXPECT_TRUE(scheduler_.moved().empty());
  ASSERT_TRUE(service_.move({"b1-p1-h02", HostAction::kDrain, std::nullopt, "bad fan"}, op_).ok());
  EXPECT_EQ(scheduler_.moved(), std::vector<std::string>{"b1-p1-h02"});
  // A rollout's hosts through maintenance: one batch, nothing for the scheduler until they return.
  auto steps = service_.transitionHosts({{"b1-p1-h02", HostAction::kDrained, std::nullopt, ""},
                                         {"b1-p1-h02", HostAction::kMaintenanceDone, std::nullopt, ""}},
                                        {"system", "controller"});
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(scheduler_.moved().size(), 1u);
  ASSERT_TRUE(service_.transitionHosts({{"b1-p1-h02", HostAction::kValidationPass, std::nullopt, ""}}, op_).ok());
  EXPECT_EQ(scheduler_.moved(), (std::vector<std::string>{"b1-p1-h02", "b1-p1-h02"}));
}

TEST_F(FleetServiceTest, WithoutASchedulerOrRunsTheMovesStillApply) {
  FleetService bare(fleet_, nullptr, log_);
  fleet_.setState("b1-p1-h05", HostState::kRepair);
  auto moved = bare.move({"b1-p1-h05", HostAction::kRepairComplete, std::nullopt, "fixed"}, op_);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(fleet_.state("b1-p1-h05"), HostState::kQuarantine);
  EXPECT_TRUE(moved->quarantine_run_error.has_value());
}

}  // namespace
}  // namespace kiln::fleet
