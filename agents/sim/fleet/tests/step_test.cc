#include "agents/sim/fleet/step.h"

#include <gtest/gtest.h>

#include "agents/sim/host_sim.h"

namespace kiln::vfleet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class StepTest : public ::testing::Test {
 protected:
  Assignment assignment(std::vector<std::string> argv, std::string parse = "",
                        std::int64_t timeout_ms = 60000) {
    json j = {{"id", "r-1:h:1"}, {"lease", 3}, {"type", "run"}, {"argv", argv},
              {"timeout_ms", timeout_ms}, {"parse", parse}, {"output_cap", 100}};
    auto a = assignmentFromJson(j);
    EXPECT_TRUE(a.ok());
    return *a;
  }
  sim::HostState state_ = sim::makeDefaultState("prn-b01-p01-h01", sim::Platform::kCatalina);
  sim::ToolContext ctx_{"Mon Jun  2 10:00:00 2025", nullptr};
};

TEST_F(StepTest, AssignmentNeedsIdArgvAndKnownType) {
  EXPECT_FALSE(assignmentFromJson(json{{"argv", {"x"}}}).ok());
  EXPECT_FALSE(assignmentFromJson(json{{"id", "a"}, {"argv", json::array()}}).ok());
  EXPECT_FALSE(assignmentFromJson(json{{"id", "a"}, {"argv", {"x"}}, {"type", "shell"}}).ok());
  EXPECT_FALSE(assignmentFromJson(json{{"id", "a"}, {"argv", {1}}}).ok());
  auto a = assignmentFromJson(json{{"id", "a"}, {"argv", {"dcgmi"}}, {"inventory_after", true}});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->timeout_ms, 60000);
  EXPECT_TRUE(a->inventory_after);
}

TEST_F(StepTest, DurationIsScaledAndResultParsedWithTheRealParser) {
  Assignment a = assignment({"/usr/bin/dcgmi", "diag", "-r", "1", "-j"}, "dcgmi-diag-json");
  SimProcess p = startProcess(state_, a, 0.001, ctx_);
  ASSERT_TRUE(p.started);
  EXPECT_EQ(p.end(), std::chrono::nanoseconds(10'000'000));  // 10 s x 0.001
  json body = finishProcess(state_, a, p, Ending::kFinished, p.end());
  EXPECT_EQ(body["lease"], 3);
  EXPECT_EQ(body["host"], "prn-b01-p01-h01");
  EXPECT_EQ(body["exit_code"], 0);
  EXPECT_EQ(body["duration_ms"], 10);
  EXPECT_EQ(body["parsed"]["overall"], "Pass");
  EXPECT_EQ(body["parse_error"], "");
  EXPECT_LE(body["stdout_tail"].get<std::string>().size(), 100u);  // output_cap
  EXPECT_GT(body["stdout_bytes"].get<std::size_t>(), 100u);
  EXPECT_TRUE(body["inventory"].is_null());
}

TEST_F(StepTest, FailedDiagStillParsesAndReportsItsExitCode) {
  sim::HostSim sim(state_);
  ASSERT_TRUE(sim.setFault({sim::FaultKind::kRowRemapPending, 1}).ok());
  Assignment a = assignment({"dcgmi", "diag", "-r", "1", "-j"}, "dcgmi-diag-json");
  SimProcess p = startProcess(state_, a, 0, ctx_);
  json body = finishProcess(state_, a, p, Ending::kFinished, p.end());
  EXPECT_NE(body["exit_code"], 0);
  EXPECT_EQ(body["parsed"]["overall"], "Fail");
}

TEST_F(StepTest, UnknownToolIsASpawnError) {
  Assignment a = assignment({"rm", "-rf", "/"});
  SimProcess p = startProcess(state_, a, 1, ctx_);
  EXPECT_FALSE(p.started);
  json body = finishProcess(state_, a, p, Ending::kFinished, milliseconds(0));
  EXPECT_EQ(body["started"], false);
  EXPECT_EQ(body["exit_code"], -1);
  EXPECT_NE(body["spawn_error"].get<std::string>().find("rm"), std::string::npos);
}

TEST_F(StepTest, HangTimesOutWithOutputUntilThenAndNoParse) {
  sim::HostSim sim(state_);
  sim::Fault hang{sim::FaultKind::kHang};
  hang.tool = "dcgmi";
  ASSERT_TRUE(sim.setFault(hang).ok());
  Assignment a = assignment({"dcgmi", "diag", "-r", "1", "-j"}, "dcgmi-diag-json", 20000);
  SimProcess p = startProcess(state_, a, 0.001, ctx_);
  EXPECT_TRUE(p.timesOut());
  EXPECT_EQ(p.end(), milliseconds(20000));  // hangs are not scaled: the step timeout ends it
  json body = finishProcess(state_, a, p, Ending::kTimedOut, p.end());
  EXPECT_EQ(body["timed_out"], true);
  EXPECT_EQ(body["signal"], 15);
  EXPECT_TRUE(body["parsed"].is_null());
}

TEST_F(StepTest, CancelKeepsOnlyOutputPrintedSoFarAndSkipsCompletion) {
  Assignment a = assignment({"nvfwupd", "-t", "ip=x", "update_fw", "-p", "nvfw_GB200-X_1.fwpkg"});
  SimProcess p = startProcess(state_, a, 1, ctx_);
  json body = finishProcess(state_, a, p, Ending::kCancelled, std::chrono::seconds(6));
  EXPECT_EQ(body["cancelled"], true);
  EXPECT_EQ(body["signal"], 15);
  EXPECT_EQ(body["stdout_bytes"].get<std::size_t>() < p.run.stdoutText().size(), true);
  EXPECT_TRUE(state_.pending.empty());  // the flash never completed
}

TEST_F(StepTest, RebootStepEndsWithANewBootIdAndInventory) {
  const std::string before = state_.boot_id;
  json j = {{"id", "a-9"}, {"lease", 1}, {"type", "reboot"}, {"argv", {"kiln-reboot"}},
            {"timeout_ms", 600000}, {"inventory_after", true}};
  auto a = assignmentFromJson(j);
  ASSERT_TRUE(a.ok());
  SimProcess p = startProcess(state_, *a, 0.01, ctx_);
  EXPECT_EQ(p.end(), milliseconds(2400));  // 240 s x 0.01
  EXPECT_EQ(state_.boot_id, before);       // not rebooted until it ends
  json body = finishProcess(state_, *a, p, Ending::kFinished, p.end());
  EXPECT_EQ(body["exit_code"], 0);
  EXPECT_NE(body["boot_id"], before);
  EXPECT_EQ(body["boot_id"], state_.boot_id);
  EXPECT_EQ(body["inventory"]["driver"], state_.versions.at("driver"));
  EXPECT_FALSE(body["inventory"].contains("boot_id"));
}

TEST_F(StepTest, RebootStepThatDoesNotRebootWaitsForItsTimeout) {
  json j = {{"id", "a-9"}, {"lease", 1}, {"type", "reboot"}, {"argv", {"nvidia-smi", "-L"}},
            {"timeout_ms", 5000}};
  SimProcess p = startProcess(state_, *assignmentFromJson(j), 0.01, ctx_);
  EXPECT_TRUE(p.timesOut());
  json body = finishProcess(state_, *assignmentFromJson(j), p, Ending::kTimedOut, p.end());
  EXPECT_EQ(body["timed_out"], true);
  EXPECT_EQ(body["signal"], 0);
}

TEST_F(StepTest, TailKeepsTheEnd) {
  EXPECT_EQ(tail("abcdef", 3), "def");
  EXPECT_EQ(tail("ab", 3), "ab");
}

}  // namespace
}  // namespace kiln::vfleet
