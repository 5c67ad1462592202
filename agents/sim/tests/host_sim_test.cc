#include "agents/sim/host_sim.h"

#include <gtest/gtest.h>

namespace kiln::sim {
namespace {

// Test shorthand for a Fault with positional fields.
inline Fault mk(FaultKind kind, int gpu = -1, int link = -1, int remaining = -1,
                std::string tool = "", double factor = 1.0, int xid = 0) {
  Fault f;
  f.kind = kind;
  f.gpu = gpu;
  f.link = link;
  f.remaining = remaining;
  f.tool = std::move(tool);
  f.factor = factor;
  f.xid = xid;
  return f;
}

uint64_t flits(const HostState& s, int gpu, int link) {
  return s.gpus[static_cast<size_t>(gpu)].links[static_cast<size_t>(link)].crc_flit;
}

class HostSimTest : public ::testing::Test {
 protected:
  HostState state_ = makeDefaultState("cat-r03-t07", Platform::kCatalina);
  HostSim sim_{state_};
};

TEST_F(HostSimTest, TransientWeakLinkStopsGrowingAfterItsChecks) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kWeakLinkTransient, 2, 7, 3)).ok());
  std::vector<uint64_t> seen;
  for (int i = 0; i < 6; ++i) {
    sim_.nvlinkCheck(2);
    seen.push_back(flits(state_, 2, 7));
  }
  EXPECT_LT(0u, seen[0]);
  EXPECT_LT(seen[0], seen[1]);
  EXPECT_LT(seen[1], seen[2]);
  EXPECT_EQ(seen[2], seen[3]);
  EXPECT_EQ(seen[3], seen[5]);
  EXPECT_FALSE(sim_.linkDegrading(2));
  EXPECT_EQ(flits(state_, 2, 6), 0u);  // neighbours untouched
  EXPECT_EQ(flits(state_, 1, 7), 0u);
}

TEST_F(HostSimTest, PersistentWeakLinkKeepsGrowing) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kWeakLinkPersistent, 0, 17, 2)).ok());
  uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    sim_.nvlinkCheck(0);
    EXPECT_GT(flits(state_, 0, 17), last);
    last = flits(state_, 0, 17);
  }
  EXPECT_TRUE(sim_.linkDegrading(0));
}

TEST_F(HostSimTest, WeakLinkFailsLevelTwoDiagButNotLevelOne) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kWeakLinkPersistent, 3, 4)).ok());
  EXPECT_FALSE(sim_.diagnose(1).failed());
  DiagReport r2 = sim_.diagnose(2);
  ASSERT_TRUE(r2.failed());
  const DiagTest& pcie = r2.tests[1];
  EXPECT_EQ(pcie.name, "pcie");
  EXPECT_EQ(pcie.results[3].status, "Fail");
  EXPECT_EQ(pcie.results[3].warnings[0].error_id, kDcgmFrNvlinkErrorThreshold);
  EXPECT_EQ(pcie.results[0].status, "Pass");
}

TEST_F(HostSimTest, PendingFirmwareActivatesOnlyAtReboot) {
  const std::string old_vbios = state_.versions["gpu_vbios"];
  const std::string old_boot = state_.boot_id;
  ToolRun flash = sim_.flash("gpu_vbios", "97.00.9A.00.01");
  ASSERT_EQ(flash.exit_code, 0) << flash.stdoutText();
  EXPECT_GE(flash.nominalSeconds(), kFlashMinSeconds);
  EXPECT_LE(flash.nominalSeconds(), kFlashMaxSeconds);
  EXPECT_NE(flash.stdoutText().find("Firmware update successful!"), std::string::npos);
  EXPECT_TRUE(state_.pending.empty());  // not before the flash has finished
  ASSERT_TRUE(flash.on_complete);
  flash.on_complete(state_);
  EXPECT_EQ(state_.pending["gpu_vbios"], "97.00.9A.00.01");
  EXPECT_EQ(state_.versions["gpu_vbios"], old_vbios);
  EXPECT_NE(sim_.nvidiaSmiQueryXml("t").stdoutText().find(old_vbios), std::string::npos);

  ToolRun reboot = sim_.reboot();
  EXPECT_EQ(state_.versions["gpu_vbios"], old_vbios);  // still down until it comes back
  reboot.on_complete(state_);
  EXPECT_EQ(state_.versions["gpu_vbios"], "97.00.9A.00.01");
  EXPECT_TRUE(state_.pending.empty());
  EXPECT_NE(state_.boot_id, old_boot);
  EXPECT_NE(reboot.stdoutText().find(state_.boot_id), std::string::npos);
}

TEST_F(HostSimTest, FlashFailureFailsTheNextFlashesOnly) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kFlashFailure, -1, -1, 2)).ok());
  for (int i = 0; i < 2; ++i) {
    ToolRun failed = sim_.flash("bmc", "25.04-1");
    EXPECT_EQ(failed.exit_code, 1);
    EXPECT_FALSE(failed.on_complete);
    EXPECT_NE(failed.stdoutText().find("Firmware update failed"), std::string::npos);
  }
  ToolRun ok = sim_.flash("bmc", "25.04-1");
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_TRUE(state_.faults.empty());
}

TEST_F(HostSimTest, UnknownComponentIsRejected) {
  ToolRun run = sim_.flash("toaster", "1.0");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.stderrText().find("unknown component"), std::string::npos);
}

TEST_F(HostSimTest, RowRemapPendingFailsLevelOneUntilReboot) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kRowRemapPending, 1)).ok());
  DiagReport before = sim_.diagnose(1);
  ASSERT_TRUE(before.failed());
  EXPECT_EQ(before.tests[0].results[1].warnings[0].error_id, kDcgmFrPendingRowRemap);
  EXPECT_EQ(state_.gpus[1].recovery_action, "Reset");
  sim_.reboot().on_complete(state_);
  EXPECT_FALSE(sim_.diagnose(1).failed());
  EXPECT_FALSE(state_.gpus[1].remap_pending);
  EXPECT_EQ(state_.gpus[1].remapped_rows_unc, 1u);
}

TEST_F(HostSimTest, XidSetsRecoveryActionAndClearsAtReboot) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kXid, 0, -1, -1, "", 1.0, 79)).ok());
  EXPECT_EQ(state_.gpus[0].recovery_action, "Reboot");
  EXPECT_TRUE(sim_.diagnose(2).failed());
  EXPECT_NE(sim_.xidLog().stdoutText().find(": 79,"), std::string::npos);
  sim_.reboot().on_complete(state_);
  EXPECT_TRUE(state_.xids.empty());
  EXPECT_EQ(state_.gpus[0].recovery_action, "None");
}

TEST_F(HostSimTest, RebootResetsCountersButKeepsPersistentFault) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kWeakLinkPersistent, 2, 3)).ok());
  sim_.nvlinkCheck(2);
  ASSERT_GT(flits(state_, 2, 3), 0u);
  sim_.reboot().on_complete(state_);
  EXPECT_EQ(flits(state_, 2, 3), 0u);
  EXPECT_TRUE(sim_.linkDegrading(2));
}

TEST_F(HostSimTest, DiagDurationsFollowTheLevels) {
  EXPECT_LE(sim_.dcgmiDiag(1, true).nominalSeconds(), 60);
  EXPECT_EQ(sim_.dcgmiDiag(2, true).nominalSeconds(), 120);
  EXPECT_EQ(sim_.dcgmiDiag(3, true).nominalSeconds(), 900);
  EXPECT_GT(sim_.dcgmiDiag(4, true).nominalSeconds(), 900);
}

TEST_F(HostSimTest, BadFaultArgumentsAreErrors) {
  EXPECT_FALSE(sim_.setFault(mk(FaultKind::kRowRemapPending, 9)).ok());
  EXPECT_FALSE(sim_.setFault(mk(FaultKind::kWeakLinkPersistent, 0, 18)).ok());
  EXPECT_FALSE(sim_.setFault(mk(FaultKind::kXid, 0)).ok());  // no xid number
  EXPECT_FALSE(sim_.setFault(mk(FaultKind::kSlow, -1, -1, -1, "", 0.0)).ok());
  EXPECT_TRUE(state_.faults.empty());
}

TEST_F(HostSimTest, HangIsConsumedOncePerCountAndOnlyForItsTool) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kHang, -1, -1, 1, "dcgmi")).ok());
  EXPECT_FALSE(sim_.takeHang("nvidia-smi"));
  EXPECT_TRUE(sim_.takeHang("dcgmi"));
  EXPECT_FALSE(sim_.takeHang("dcgmi"));
}

TEST_F(HostSimTest, ClearRemovesFaultsOfOneKindOrAll) {
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kFlashFailure, -1, -1, 1)).ok());
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kWeakLinkPersistent, 0, 1)).ok());
  ASSERT_TRUE(sim_.setFault(mk(FaultKind::kRowRemapPending, 2)).ok());
  EXPECT_EQ(sim_.clearFaults(FaultKind::kFlashFailure), 1);
  EXPECT_EQ(state_.faults.size(), 1u);
  sim_.clearFaults(std::nullopt);
  EXPECT_TRUE(state_.faults.empty());
  EXPECT_FALSE(state_.gpus[2].remap_pending);
  EXPECT_TRUE(state_.xids.empty());
}

}  // namespace
}  // namespace kiln::sim
