// rollout watch: scripted rollout documents on a fake transport and a fake clock; the exit
// code scripts chain on and the progress it prints.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/rollout_fixtures.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CliHarness;
using testing::rolloutDoc;

json running1() { return rolloutDoc("running", {{"draining", 1}, {"pending", 3}}, {{1, 0}, {3, 0}}); }
json running2() { return rolloutDoc("running", {{"succeeded", 1}, {"upgrading", 2}, {"pending", 1}}, {{1, 1}, {3, 0}}); }

TEST(RolloutWatchTest, CompletedWithNoFailedPodExitsZero) {
  CliHarness h;
  h.transport.reply(200, running1().dump());
  h.transport.reply(200, running1().dump());  // no change: no new line
  h.transport.reply(200, running2().dump());
  h.transport.reply(200, rolloutDoc("completed", {{"succeeded", 3}, {"skipped", 1}}, {{1, 1}, {3, 3}}).dump());
  auto r = h.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 4u);
  for (const auto& req : h.transport.requests) EXPECT_EQ(req.path, "/api/v1/rollouts/ro-5");
  EXPECT_EQ(h.fs.sleeps, (std::vector<milliseconds>{seconds(10), seconds(10), seconds(10)}));
  EXPECT_EQ(r.out,
            "[0:00:00] ro-5 running: canary 0/1, 0/4 done, 1 in flight (1 draining), 3 pending\n"
            "[0:00:20] ro-5 running: wave 1 0/3, 1/4 done (1 succeeded), 2 in flight (2 upgrading), 1 pending; "
            "P50 1h42m, P90 2h05m; ETA 3h10m\n"
            "[0:00:30] ro-5 completed: 4/4 done (3 succeeded, 1 skipped); P50 1h42m, P90 2h05m\n"
            "ro-5 completed: 4 pods, 3 succeeded, 1 skipped\n");
  EXPECT_EQ(r.err, "");
}

TEST(RolloutWatchTest, CompletedWithFailedPodsExitsOneAndSaysSo) {
  CliHarness h;
  h.transport.reply(200, running2().dump());
  h.transport.reply(200, rolloutDoc("completed", {{"succeeded", 3}, {"failed", 1}}, {{1, 1}, {3, 3}},
                                    json::parse(R"J([{"id": 12, "at_ms": 1, "pod": "prn-b02-p0001", "kind": "failed",
                                                     "message": "only 56 healthy GPUs after the upgrade (a slice needs 64)"},
                                                    {"id": 11, "at_ms": 0, "pod": "prn-b02-p0001", "kind": "validating",
                                                     "message": "validation run-9 started"}])J"))
                             .dump());
  auto r = h.run({"rollout", "watch", "ro-5", "--interval", "30s"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(h.fs.sleeps, (std::vector<milliseconds>{seconds(30)}));
  EXPECT_NE(r.out.find("\n  FAILED prn-b02-p0001: only 56 healthy GPUs after the upgrade (a slice needs 64)\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ro-5 completed: 4 pods, 3 succeeded, 1 failed (completed with failed pods: kilnctl rollout show "
                       "ro-5 --pods)\n"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.err, "kilnctl: ro-5 failed: it completed with 1 failed pods\n");
}

TEST(RolloutWatchTest, HaltedExitsOneWithTheReason) {
  CliHarness h;
  h.transport.reply(200, running2().dump());
  h.transport.reply(200, rolloutDoc("halted", {{"succeeded", 1}, {"failed", 2}, {"pending", 1}}, {{1, 1}, {3, 2}}, json::array(),
                                    "2 pods failed; the failure budget allows 1")
                             .dump());
  auto r = h.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("] ro-5 halted (2 pods failed; the failure budget allows 1): wave 1 2/3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ro-5 halted: 2 pods failed; the failure budget allows 1 (kilnctl rollout resume ro-5 retries the "
                       "failed pods)\n"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.err, "kilnctl: ro-5 halted: 2 pods failed; the failure budget allows 1\n");
}

TEST(RolloutWatchTest, AbortingOrAbortedExitsOneWithoutWaitingForPodsInFlight) {
  CliHarness h;
  h.transport.reply(200, running2().dump());
  h.transport.reply(200, rolloutDoc("aborting", {{"succeeded", 1}, {"upgrading", 1}, {"aborted", 1}, {"pending", 1}},
                                    {{1, 1}, {3, 1}})
                             .dump());
  auto r = h.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(h.transport.requests.size(), 2u);
  EXPECT_NE(r.out.find("] ro-5 aborting: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nro-5 aborting: pods in flight are stopping at a safe point and stay drained"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, "kilnctl: ro-5 aborting\n");

  CliHarness done;
  done.transport.reply(200, rolloutDoc("aborted", {{"succeeded", 1}, {"aborted", 2}, {"pending", 1}}, {{1, 1}, {3, 2}}).dump());
  auto d = done.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(d.code, kExitFailed);
  EXPECT_TRUE(done.fs.sleeps.empty());
  EXPECT_EQ(d.err, "kilnctl: ro-5 aborted\n");
}

TEST(RolloutWatchTest, TimeoutExitsOneAndLeavesTheRolloutRunning) {
  CliHarness h;
  for (int i = 0; i < 10; ++i) h.transport.reply(200, running1().dump());
  auto r = h.run({"rollout", "watch", "ro-5", "--timeout", "25s"});
  EXPECT_EQ(r.code, kExitFailed);
  // Sleeps never overshoot the timeout: 10 s, 10 s, then the 5 s left.
  EXPECT_EQ(h.fs.sleeps, (std::vector<milliseconds>{seconds(10), seconds(10), seconds(5)}));
  EXPECT_EQ(h.transport.requests.size(), 4u);
  EXPECT_EQ(r.err,
            "kilnctl: timeout: stopped watching ro-5 after 25s while it is running; the rollout goes on (kilnctl rollout "
            "pause ro-5 or abort stops it)\n");
}

TEST(RolloutWatchTest, RetriesServerErrorsAndGivesUpOnA404) {
  CliHarness h;
  h.transport.reply(200, running1().dump());
  h.transport.reply(503, "busy");
  h.transport.fail("connection refused");
  h.transport.reply(200, rolloutDoc("completed", {{"succeeded", 4}}, {{1, 1}, {3, 3}}).dump());
  auto r = h.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err,
            "kilnctl: cannot poll ro-5: HTTP 503 (retrying)\n"
            "kilnctl: cannot poll ro-5: connection refused (retrying)\n");

  CliHarness lost;
  lost.transport.reply(200, running1().dump());
  lost.transport.reply(404, R"({"error": {"code": "not_found", "message": "no rollout 'ro-5'", "details": {}}})");
  auto l = lost.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(l.code, kExitFailed);
  EXPECT_EQ(l.err, "kilnctl: no rollout 'ro-5' (HTTP 404 not_found)\nkilnctl: lost track of ro-5\n");
}

TEST(RolloutWatchTest, OnATerminalRedrawsABarPerWaveInPlace) {
  CliHarness h;
  h.fs.tty = true;
  h.transport.reply(200, running1().dump());
  h.transport.reply(200, rolloutDoc("completed", {{"succeeded", 4}}, {{1, 1}, {3, 3}}).dump());
  auto r = h.run({"rollout", "watch", "ro-5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "canary  [--------------------] 0/1 current\n"
            "wave 1  [--------------------] 0/3 pending\n"
            "[0:00:00] running: canary 0/1, 0/4 done, 1 in flight (1 draining), 3 pending\n"
            "\033[3F\033[J"
            "canary  [####################] 1/1 done\n"
            "wave 1  [####################] 3/3 done\n"
            "[0:00:10] completed: 4/4 done (4 succeeded); P50 1h42m, P90 2h05m\n"
            "ro-5 completed: 4 pods, 4 succeeded\n");
}

TEST(RolloutWatchTest, JsonSendsProgressToStderrAndTheFinalDocumentToStdout) {
  CliHarness h;
  h.transport.reply(200, running1().dump());
  h.transport.reply(200, rolloutDoc("completed", {{"succeeded", 4}}, {{1, 1}, {3, 3}}).dump());
  auto r = h.run({"--json", "rollout", "watch", "ro-5"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(json::parse(r.out)["state"], "completed");
  EXPECT_NE(r.err.find("] ro-5 running: "), std::string::npos) << r.err;
}

TEST(RolloutWatchTest, BadDurationsAreUsageErrors) {
  CliHarness h;
  auto r = h.run({"rollout", "watch", "ro-5", "--interval", "often"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.rfind("kilnctl: --interval: 'often' is not a duration", 0), 0u) << r.err;
  EXPECT_TRUE(h.transport.requests.empty());
}

}  // namespace
}  // namespace kiln::cli
