#include "agents/sim/fleet/step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

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

// Issue 35: as kiln-agent, a clean, parsed run sends only parsed_output_cap of its stdout.
TEST_F(StepTest, ACleanParsedRunSendsOnlyParsedOutputCapOfItsStdout) {
  Assignment a = assignment({"nvidia-smi", "-q", "-x"}, "nvidia-smi-xml");
  a.parsed_output_cap = 20;
  SimProcess p = startProcess(state_, a, 0, ctx_);
  json body = finishProcess(state_, a, p, Ending::kFinished, p.end());
  ASSERT_EQ(body["parse_error"], "");
  EXPECT_EQ(body["stdout_tail"].get<std::string>().size(), 20u);
  EXPECT_GT(body["stdout_bytes"].get<std::size_t>(), 10'000u);

  sim::HostSim sim(state_);
  ASSERT_TRUE(sim.setFault({sim::FaultKind::kRowRemapPending, 1}).ok());
  Assignment diag = assignment({"dcgmi", "diag", "-r", "1", "-j"}, "dcgmi-diag-json");
  diag.parsed_output_cap = 20;
  SimProcess d = startProcess(state_, diag, 0, ctx_);
  json failed = finishProcess(state_, diag, d, Ending::kFinished, d.end());
  ASSERT_NE(failed["exit_code"], 0);
  EXPECT_EQ(failed["stdout_tail"].get<std::string>().size(), 100u) << "a failed run keeps its whole tail (output_cap)";
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

// A simulated host has its artifacts at once, under the path a real agent's cache gives them
// (the tools read the file's name); a stage runs nothing and succeeds.
TEST_F(StepTest, ArtifactsAreAtTheirCachePathAndAStageRunsNothing) {
  const std::string sha(64, 'd');
  json j = {{"id", "r-1:h:2"}, {"lease", 1}, {"type", "run"},
            {"argv", {"mlxfwmanager", "-u", "-i", "kiln-artifact:sha256:" + sha, "-y"}},
            {"artifacts", {{{"url", "https://m/fw/fw-ConnectX7-rel-28_44_1036.bin"}, {"sha256", sha}}}}};
  auto a = assignmentFromJson(j);
  ASSERT_TRUE(a.ok()) << a.error();
  SimProcess p = startProcess(state_, *a, 0, ctx_);
  ASSERT_TRUE(p.started) << p.spawn_error;
  json body = finishProcess(state_, *a, p, Ending::kFinished, p.end());
  EXPECT_EQ(body["exit_code"], 0) << body.dump();
  EXPECT_EQ(state_.pending["nic"], "28.44.1036");
  EXPECT_EQ(state_.flashes, 1u);

  j["argv"] = {"mlxfwmanager", "-u", "-i", "kiln-artifact:sha256:" + std::string(64, 'e')};
  SimProcess unknown = startProcess(state_, *assignmentFromJson(j), 0, ctx_);
  EXPECT_FALSE(unknown.started);
  EXPECT_NE(unknown.spawn_error.find("does not carry"), std::string::npos);

  j["type"] = "stage";
  j["argv"] = json::array();
  auto stage = assignmentFromJson(j);
  ASSERT_TRUE(stage.ok()) << stage.error();
  SimProcess s = startProcess(state_, *stage, 0, ctx_);
  ASSERT_TRUE(s.started);
  json staged = finishProcess(state_, *stage, s, Ending::kFinished, s.end());
  EXPECT_EQ(staged["exit_code"], 0);
  EXPECT_NE(staged["stdout_tail"].get<std::string>().find("staged fw-ConnectX7-rel-28_44_1036.bin"), std::string::npos);
  EXPECT_EQ(state_.flashes, 1u);
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

// σ 0.25 over 20,000 assignments: the log-normal's median, shape and central 95%.
TEST(DurationFactorTest, IsLogNormalWithMedianOne) {
  std::vector<double> f;
  double sum_log = 0, sum_log2 = 0;
  for (int i = 0; i < 20000; ++i) {
    f.push_back(durationFactor(7, "prn-b01-p01-h01", "r-" + std::to_string(i) + ":h:1", 0.25));
    sum_log += std::log(f.back());
    sum_log2 += std::log(f.back()) * std::log(f.back());
  }
  std::sort(f.begin(), f.end());
  EXPECT_NEAR(f[f.size() / 2], 1.0, 0.02);
  const double mean_log = sum_log / f.size();
  EXPECT_NEAR(mean_log, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_log2 / f.size() - mean_log * mean_log), 0.25, 0.01);
  const auto inside = std::count_if(f.begin(), f.end(), [](double x) { return x > 0.613 && x < 1.632; });
  EXPECT_NEAR(static_cast<double>(inside) / f.size(), 0.95, 0.01);
}

TEST(DurationFactorTest, IsTheSameForTheSameAssignmentAndDiffersAcrossThem) {
  const double a = durationFactor(7, "h1", "r-1:h1:3", 0.25);
  EXPECT_EQ(durationFactor(7, "h1", "r-1:h1:3", 0.25), a);  // a retry takes the same time
  EXPECT_NE(durationFactor(7, "h1", "r-1:h1:4", 0.25), a);
  EXPECT_NE(durationFactor(7, "h2", "r-1:h1:3", 0.25), a);
  EXPECT_NE(durationFactor(8, "h1", "r-1:h1:3", 0.25), a);
  std::set<double> seen;
  for (int i = 0; i < 100; ++i) seen.insert(durationFactor(7, "h1", "r-1:h1:" + std::to_string(i), 0.25));
  EXPECT_EQ(seen.size(), 100u);
}

TEST(DurationFactorTest, ZeroSpreadIsExactlyOne) {
  for (int i = 0; i < 100; ++i) EXPECT_EQ(durationFactor(i, "h1", "r-" + std::to_string(i), 0), 1.0);
}

TEST(DurationFactorTest, IsCapped) {
  int capped = 0;
  for (int i = 0; i < 2000; ++i) {
    const double f = durationFactor(1, "h1", "r-" + std::to_string(i), 2.0);
    EXPECT_GT(f, 0);
    EXPECT_LE(f, kMaxDurationFactor);
    capped += f == kMaxDurationFactor;
  }
  EXPECT_GT(capped, 300);  // P(exp(2z) > 4) = P(z > 0.69) ~ 0.24
}

TEST_F(StepTest, FactorStretchesTheToolTimeAndItsOutput) {
  Assignment a = assignment({"dcgmi", "diag", "-r", "1", "-j"}, "dcgmi-diag-json");
  SimProcess p = startProcess(state_, a, 0.001, ctx_, 1.5);
  EXPECT_EQ(p.end(), std::chrono::nanoseconds(15'000'000));  // 10 s x 0.001 x 1.5
  EXPECT_DOUBLE_EQ(p.duration_factor, 1.5);
  json body = finishProcess(state_, a, p, Ending::kFinished, p.end());
  EXPECT_EQ(body["duration_ms"], 15);
  p = startProcess(state_, a, 0.001, ctx_, 0.5);
  EXPECT_EQ(p.end(), std::chrono::nanoseconds(5'000'000));
}

TEST_F(StepTest, FactorStretchesTheSimulatedReboot) {
  json j = {{"id", "a-9"}, {"lease", 1}, {"type", "reboot"}, {"argv", {"kiln-reboot"}},
            {"timeout_ms", 600000}};
  SimProcess p = startProcess(state_, *assignmentFromJson(j), 0.01, ctx_, 2.0);
  EXPECT_EQ(p.end(), milliseconds(4800));  // 240 s x 0.01 x 2
}

TEST_F(StepTest, FactorNeverPushesAToolPastItsTimeout) {
  // diag -r 1 is 10 s; its timeout 20 s. 4x would be 40 s: it stops at 90% of the timeout.
  Assignment a = assignment({"dcgmi", "diag", "-r", "1", "-j"}, "dcgmi-diag-json", 20000);
  SimProcess p = startProcess(state_, a, 1, ctx_, 4.0);
  EXPECT_FALSE(p.timesOut());
  EXPECT_EQ(p.end(), milliseconds(18000));
  EXPECT_DOUBLE_EQ(p.duration_factor, 1.8);
  // A hang is not scaled: the timeout still ends it.
  sim::HostSim sim(state_);
  sim::Fault hang{sim::FaultKind::kHang};
  hang.tool = "dcgmi";
  ASSERT_TRUE(sim.setFault(hang).ok());
  p = startProcess(state_, a, 0.001, ctx_, 4.0);
  EXPECT_TRUE(p.timesOut());
  EXPECT_EQ(p.end(), milliseconds(20000));
}

TEST_F(StepTest, TailKeepsTheEnd) {
  EXPECT_EQ(tail("abcdef", 3), "def");
  EXPECT_EQ(tail("ab", 3), "ab");
}

}  // namespace
}  // namespace kiln::vfleet
