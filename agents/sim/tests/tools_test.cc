#include "agents/sim/tools.h"

#include <gtest/gtest.h>

namespace kiln::sim {
namespace {

class ToolsTest : public ::testing::Test {
 protected:
  ToolRun run(const std::string& tool, std::vector<std::string> args) {
    return runTool(state_, tool, args, ctx_);
  }
  HostState state_ = makeDefaultState("cat-r01-t01", Platform::kCatalina);
  std::map<std::string, std::string> files_;
  ToolContext ctx_{"Mon Jun  2 10:00:00 2025",
                   [this](const std::string& p) -> std::optional<std::string> {
                     auto it = files_.find(p);
                     if (it == files_.end()) return std::nullopt;
                     return it->second;
                   }};
};

TEST_F(ToolsTest, NvidiaSmiAcceptsTheUsualSpellings) {
  EXPECT_NE(run("nvidia-smi", {"-q", "-x"}).stdoutText().find("<nvidia_smi_log>"),
            std::string::npos);
  EXPECT_NE(run("nvidia-smi", {"--query", "--xml-format"}).stdoutText().find("<gpu id="),
            std::string::npos);
  EXPECT_NE(run("nvidia-smi", {"-L"}).stdoutText().find("GPU 0: NVIDIA GB200"), std::string::npos);
  EXPECT_EQ(run("nvidia-smi", {"--bogus"}).exit_code, 2);
}

TEST_F(ToolsTest, DcgmiDiagValidatesLevelAndReportsFailureInExitCode) {
  EXPECT_EQ(run("dcgmi", {"diag", "-r", "5", "-j"}).exit_code, 2);
  EXPECT_EQ(run("dcgmi", {"diag", "-r", "x"}).exit_code, 2);
  EXPECT_EQ(run("dcgmi", {"diag", "-r", "1", "-j"}).exit_code, 0);
  ASSERT_EQ(run("kiln-hwsim", {"fault", "set", "--kind", "row_remap_pending", "--gpu", "0"})
                .exit_code,
            0);
  ToolRun failed = run("dcgmi", {"diag", "--run", "1", "--json"});
  EXPECT_NE(failed.exit_code, 0);
  auto j = nlohmann::json::parse(failed.stdoutText());
  EXPECT_EQ(j["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"][0]["status"], "Fail");
}

TEST_F(ToolsTest, DcgmiNvlinkForOneGpuOrAll) {
  auto one = nlohmann::json::parse(run("dcgmi", {"nvlink", "-e", "-g", "3", "-j"}).stdoutText());
  EXPECT_EQ(one["header"][1], "GPU 3");
  std::string all = run("dcgmi", {"nvlink", "-e", "-j"}).stdoutText();
  EXPECT_NE(all.find("\"GPU 0\""), std::string::npos);
  EXPECT_NE(all.find("\"GPU 3\""), std::string::npos);
  EXPECT_EQ(run("dcgmi", {"nvlink", "-e", "-g", "9", "-j"}).exit_code, 1);
  EXPECT_NE(run("dcgmi", {"nvlink", "-e", "-g", "0"}).stdoutText().find("-> CRC FLIT Error"),
            std::string::npos);
}

TEST_F(ToolsTest, NvfwupdPackageNameBecomesTheHmcBundle) {
  ToolRun r = run("nvfwupd", {"-t", "ip=10.0.0.5", "user=admin", "password=x", "servertype=GB200",
                              "update_fw", "-p",
                              "/fw/nvfw_GB200-P4975_0004_250301.1.0_custom_prod-signed.fwpkg",
                              "-y"});
  ASSERT_EQ(r.exit_code, 0) << r.stderrText();
  r.on_complete(state_);
  EXPECT_EQ(state_.pending["hmc_bundle"], "GB200-P4975_0004_250301.1.0");
}

TEST_F(ToolsTest, NvfwupdJsonManifestFlashesListedComponents) {
  files_["/fw/bundle.fwpkg"] = R"({"gpu_vbios": "97.00.9A.00.01", "sbios": "02.04.01"})";
  ToolRun r = run("nvfwupd", {"update_fw", "-p", "/fw/bundle.fwpkg"});
  ASSERT_EQ(r.exit_code, 0);
  r.on_complete(state_);
  EXPECT_EQ(state_.pending["gpu_vbios"], "97.00.9A.00.01");
  EXPECT_EQ(state_.pending["sbios"], "02.04.01");
  EXPECT_NE(run("nvfwupd", {"show_version"}).stdoutText().find("02.04.01"), std::string::npos);
}

// The artifact tests count flashes (issue 31): every flash that reaches the hardware, and
// nothing else (a query, an up-to-date image, an unknown component).
TEST_F(ToolsTest, FlashesThatReachTheHardwareAreCounted) {
  EXPECT_EQ(state_.flashes, 0u);
  ASSERT_EQ(run("nvfwupd", {"update_fw", "-p", "/fw/nvfw_GB200-P4975_0004_250601.1.0.fwpkg"}).exit_code, 0);
  EXPECT_EQ(state_.flashes, 1u);
  EXPECT_EQ(state_.last_flash, "nvfw_GB200-P4975_0004_250601.1.0.fwpkg");
  const std::string image = "fw-ConnectX7-rel-28_44_1036-MCX750500B-0D00_Ax-UEFI-14.37.14.bin";
  run("mlxfwmanager", {"--query", "-i", image});
  EXPECT_EQ(state_.flashes, 1u);
  ToolRun burn = run("mlxfwmanager", {"-u", "-i", image, "-y"});
  ASSERT_EQ(burn.exit_code, 0);
  burn.on_complete(state_);
  EXPECT_EQ(state_.flashes, 2u);
  run("mlxfwmanager", {"-u", "-i", image, "-y"});  // up to date: nothing burned
  EXPECT_EQ(state_.flashes, 2u);
  run("kiln-hwsim", {"flash", "no_such_component", "1"});
  EXPECT_EQ(state_.flashes, 2u);
  auto back = hostStateFromJson(toJson(state_));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->flashes, 2u);
  EXPECT_EQ(back->last_flash, state_.last_flash);
}

TEST_F(ToolsTest, MlxfwmanagerUpdateTakesVersionFromImageName) {
  const std::string image = "fw-ConnectX7-rel-28_44_1036-MCX750500B-0D00_Ax-UEFI-14.37.14.bin";
  EXPECT_NE(run("mlxfwmanager", {"--query", "-i", image}).stdoutText().find("Update required"),
            std::string::npos);
  ToolRun u = run("mlxfwmanager", {"-u", "-i", image, "-y"});
  ASSERT_EQ(u.exit_code, 0) << u.stdoutText();
  EXPECT_NE(u.stdoutText().find("Restart needed for updates to take effect."), std::string::npos);
  u.on_complete(state_);
  EXPECT_EQ(state_.pending["nic"], "28.44.1036");
  EXPECT_NE(run("mlxfwmanager", {"--query", "-i", image}).stdoutText().find("Up to date"),
            std::string::npos);
  EXPECT_EQ(run("mlxfwmanager", {"-u", "-y"}).exit_code, 1);
}

TEST_F(ToolsTest, DriverInstallGoesPendingAndActivatesAtTheNextReboot) {
  const std::string before = state_.versions["driver"];
  ToolRun install = run("kiln-driver-install", {"575.57.08"});
  ASSERT_EQ(install.exit_code, 0) << install.stderrText();
  EXPECT_GT(install.nominalSeconds(), 10.0);
  install.on_complete(state_);
  EXPECT_EQ(state_.pending["driver"], "575.57.08");
  EXPECT_EQ(state_.versions["driver"], before);  // not active before the reboot
  EXPECT_NE(run("nvidia-smi", {"-q", "-x"}).stdoutText().find(before), std::string::npos);

  // Idempotent while pending: no second install.
  ToolRun again = run("kiln-driver-install", {"575.57.08"});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_FALSE(again.on_complete);

  ToolRun reboot = run("kiln-reboot", {});
  reboot.on_complete(state_);
  EXPECT_EQ(state_.versions["driver"], "575.57.08");
  EXPECT_NE(run("nvidia-smi", {"-q", "-x"}).stdoutText().find("<driver_version>575.57.08<"),
            std::string::npos);
  ToolRun installed = run("kiln-driver-install", {"575.57.08"});
  EXPECT_EQ(installed.exit_code, 0);
  EXPECT_NE(installed.stdoutText().find("already installed"), std::string::npos);
  EXPECT_DOUBLE_EQ(installed.nominalSeconds(), 0.0);
}

TEST_F(ToolsTest, DriverInstallFailsOnAFlashFailureFaultAndNeedsAVersion) {
  ASSERT_EQ(run("kiln-hwsim", {"fault", "set", "--kind", "flash_failure", "--count", "1"}).exit_code, 0);
  ToolRun failed = run("kiln-driver-install", {"580.65.06"});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_FALSE(failed.on_complete);
  EXPECT_EQ(state_.pending.count("driver"), 0u);
  ToolRun ok = run("kiln-driver-install", {"580.65.06"});  // the fault was used up
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(run("kiln-driver-install", {}).exit_code, 2);
  EXPECT_EQ(run("kiln-driver-install", {"--bogus"}).exit_code, 2);
}

TEST_F(ToolsTest, VersionFromImageName) {
  EXPECT_EQ(versionFromImageName("/x/fw-ConnectX8-rel-40_45_1200-900-9X81Q.bin"), "40.45.1200");
  EXPECT_EQ(versionFromImageName("cx7-28.43.2026.bin"), "28.43.2026");
  EXPECT_FALSE(versionFromImageName("firmware.bin"));
}

TEST_F(ToolsTest, HangFaultMakesTheNextRunSleepUnscaledPastAnyTimeout) {
  ASSERT_EQ(run("kiln-hwsim", {"fault", "set", "--kind", "hang", "--tool", "dcgmi"}).exit_code, 0);
  ToolRun hung = run("dcgmi", {"diag", "-r", "1", "-j"});
  ASSERT_EQ(hung.chunks.size(), 1u);
  EXPECT_FALSE(hung.chunks[0].scaled);
  EXPECT_GE(hung.chunks[0].delay_s, 24 * 3600);
  EXPECT_EQ(run("dcgmi", {"diag", "-r", "1", "-j"}).exit_code, 0);  // used up
}

TEST_F(ToolsTest, SlowFaultMultipliesDurations) {
  const double normal = run("dcgmi", {"diag", "-r", "2", "-j"}).nominalSeconds();
  ASSERT_EQ(run("kiln-hwsim", {"fault", "set", "--kind", "slow", "--factor", "3"}).exit_code, 0);
  EXPECT_DOUBLE_EQ(run("dcgmi", {"diag", "-r", "2", "-j"}).nominalSeconds(), 3 * normal);
}

TEST_F(ToolsTest, FaultSeedIsDeterministicPerHost) {
  auto seeded = [&](const std::string& host) {
    state_ = makeDefaultState(host, Platform::kCatalina);
    run("kiln-hwsim", {"fault", "seed", "--seed", "11", "--rate", "0.5", "--kind",
                       "weak_link_persistent"});
    return toJson(state_)["faults"];
  };
  int chosen = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string host = "cat-r09-t" + std::to_string(i);
    auto first = seeded(host);
    EXPECT_EQ(first, seeded(host)) << host;
    chosen += first.empty() ? 0 : 1;
  }
  EXPECT_GT(chosen, 5);
  EXPECT_LT(chosen, 35);
}

TEST_F(ToolsTest, DcgmiMndiagPassesAHealthyPodAndTakesMinutes) {
  ToolRun r = run("dcgmi", {"mndiag", "--hostList", "cat-r01-t01,cat-r01-t02,cat-r01-t03",
                            "--run", "nvloom"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_DOUBLE_EQ(r.nominalSeconds(), kMndiagSeconds);
  const std::string out = r.stdoutText();
  EXPECT_NE(out.find("Successfully ran multi-node diagnostic"), std::string::npos);
  EXPECT_NE(out.find("| Hosts Found               | 3 "), std::string::npos);
  EXPECT_NE(out.find("cat-r01-t03: Pass"), std::string::npos);
  EXPECT_NE(out.find("| nvloom                    | Pass"), std::string::npos);
}

TEST_F(ToolsTest, DcgmiMndiagGrowsOwnWeakLinkCountersAndFailsThisHost) {
  ASSERT_EQ(run("kiln-hwsim", {"fault", "set", "--kind", "weak_link_persistent", "--gpu", "2",
                               "--link", "5"})
                .exit_code,
            0);
  ToolRun r = run("dcgmi", {"mndiag", "--hostList", "cat-r01-t01,cat-r01-t02", "--run",
                            "mnubergemm"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stdoutText().find("cat-r01-t01: Fail"), std::string::npos);
  EXPECT_NE(r.stdoutText().find("cat-r01-t02: Pass"), std::string::npos);
  EXPECT_GT(state_.gpus[2].links[5].crc_flit, 0u);
  EXPECT_EQ(state_.gpus[1].links[5].crc_flit, 0u);
}

TEST_F(ToolsTest, DcgmiMndiagNeedsHostsAndAKnownTest) {
  EXPECT_EQ(run("dcgmi", {"mndiag", "--run", "nvloom"}).exit_code, 2);
  EXPECT_EQ(run("dcgmi", {"mndiag", "--hostList", "a,b", "--run", "gemm"}).exit_code, 2);
  EXPECT_EQ(run("dcgmi", {"mndiag", "--hostList", ",", "--run", "nvloom"}).exit_code, 2);
}

TEST_F(ToolsTest, UnknownToolAndUsageErrorsDoNotCrash) {
  EXPECT_EQ(run("frobnicate", {}).exit_code, 127);
  EXPECT_EQ(run("kiln-hwsim", {"fault", "set"}).exit_code, 2);
  EXPECT_EQ(run("kiln-hwsim", {"fault", "set", "--kind", "xid", "--gpu", "0"}).exit_code, 2);
  EXPECT_EQ(run("kiln-hwsim", {"flash", "gpu_vbios"}).exit_code, 2);
  EXPECT_EQ(run("dcgmi", {}).exit_code, 2);
}

}  // namespace
}  // namespace kiln::sim
