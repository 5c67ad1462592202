// workflow, run and quarantine commands against a fake transport; parsing of the flags they need.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/run_fixtures.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;
using Query = std::vector<std::pair<std::string, std::string>>;
using std::chrono::seconds;

// --- parsing ------------------------------------------------------------------------------

ParsedCommand parsed(const Registry& registry, const std::vector<std::string>& args) {
  auto r = parseArgs(registry, args);
  if (auto* u = std::get_if<UsageError>(&r)) ADD_FAILURE() << u->message;
  return std::holds_alternative<ParsedCommand>(r) ? std::get<ParsedCommand>(r) : ParsedCommand{};
}

TEST(RunFlagsParseTest, RepeatedFlagKeepsEveryValueInOrder) {
  CliHarness h;
  auto c = parsed(h.registry, {"run", "start", "wf", "--param", "a=1", "--hosts", "h1", "--param", "b=2=3"});
  EXPECT_EQ(c.values("param"), (std::vector<std::string>{"a=1", "b=2=3"}));
  EXPECT_TRUE(c.values("hosts").empty());  // not a repeated flag
  EXPECT_EQ(c.value("hosts"), "h1");
}

TEST(RunFlagsParseTest, CommandFlagShadowsTheGlobalOfTheSameNameAfterTheCommand) {
  CliHarness h;
  auto c = parsed(h.registry, {"--timeout", "30", "gate", "--workflow", "w", "--pods", "p", "--timeout", "3h"});
  EXPECT_EQ(c.value("timeout"), "3h");
  ASSERT_TRUE(c.global.timeout_seconds);
  EXPECT_DOUBLE_EQ(*c.global.timeout_seconds, 30);
  auto pods = parsed(h.registry, {"pods", "list", "--timeout", "5"});  // no command flag: still the global
  ASSERT_TRUE(pods.global.timeout_seconds);
  EXPECT_DOUBLE_EQ(*pods.global.timeout_seconds, 5);
}

TEST(RunFlagsParseTest, GateIsASingleCommandGroup) {
  CliHarness h;
  auto c = parsed(h.registry, {"gate", "--workflow", "l11-burn-in", "--pods", "p1"});
  ASSERT_NE(c.spec, nullptr);
  EXPECT_EQ(c.commandLine(), "kilnctl gate");
  auto r = h.run({"gate", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out.rfind("Usage: kilnctl gate --workflow NAME [--hosts H1,H2]", 0), 0u) << r.out;
  auto extra = h.run({"gate", "now", "--workflow", "w"});
  EXPECT_EQ(extra.code, kExitUsage);
  EXPECT_EQ(extra.err, "kilnctl: unexpected argument 'now'\nRun 'kilnctl gate --help' for usage.\n");
  auto help = h.run({"help"});
  const auto gate_line = help.out.find("\n  gate ");  // the column width follows the longest command name
  ASSERT_NE(gate_line, std::string::npos) << help.out;
  EXPECT_EQ(help.out.find_first_not_of(' ', gate_line + 7), help.out.find("CI gate: run a workflow", gate_line)) << help.out;
  EXPECT_NE(r.out.find("Global flags this command's flags shadow (give them before the command):\n"
                       "  --timeout SECONDS"),
            std::string::npos) << r.out;
}

// --- workflow -----------------------------------------------------------------------------

TEST(WorkflowCommandTest, ListRendersNameVersionScopeAndShortHash) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [{"name": "l11-burn-in", "hash": "0123456789abcdef99", "source": "api",
    "version": "1", "description": "L11 burn-in", "scope": "pod", "steps": 14}], "next_cursor": null})");
  auto r = h.run({"workflow", "list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].method, "GET");
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/workflows");
  EXPECT_EQ(r.out,
            "NAME         VERSION  SCOPE  STEPS  HASH          SOURCE  DESCRIPTION\n"
            "l11-burn-in  1        pod    14     0123456789ab  api     L11 burn-in\n");
}

TEST(WorkflowCommandTest, ShowYamlPrintsTheStoredDocumentAsIs) {
  CliHarness h;
  h.transport.reply(200, R"({"name": "pre job", "yaml": "name: pre job\nsteps: []\n", "steps": []})");
  auto r = h.run({"workflow", "show", "pre job", "--yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/workflows/pre%20job");
  EXPECT_EQ(r.out, "name: pre job\nsteps: []\n");
}

TEST(WorkflowCommandTest, ShowRendersParametersAndSteps) {
  CliHarness h;
  h.transport.reply(200, R"({"name": "w", "version": "2", "scope": "host", "hash": "abc", "repeat": 1,
    "params": {"level": {"type": "int", "default": 3, "description": "diag level"}},
    "steps": [{"id": "diag", "type": "run", "run": ["dcgmi", "diag", "-r", "{{level}}"], "timeout": "45m",
               "on_failure": "continue", "run_on": "host", "checks": [{"name": "a"}, {"name": "b"}]},
              {"id": "ready", "type": "barrier", "timeout": "1h", "on_failure": "fail", "run_on": "host", "checks": []}]})");
  auto r = h.run({"workflow", "show", "w"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("Parameters:\nNAME   TYPE  DEFAULT  DESCRIPTION\nlevel  int   3        diag level\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Steps:\n"
                       "ID     TYPE     TIMEOUT  ON_FAILURE  RUN_ON  CHECKS  RUN\n"
                       "diag   run      45m      continue    -       2       dcgmi diag -r {{level}}\n"
                       "ready  barrier  1h       fail        -       0       -\n"),
            std::string::npos) << r.out;
}

TEST(WorkflowCommandTest, PutSendsTheFileAsYaml) {
  CliHarness h;
  h.fs.files["wf.yaml"] = "name: w\nsteps: []\n";
  h.transport.reply(200, R"({"name": "w", "hash": "abc123", "changed": true})");
  auto r = h.run({"workflow", "put", "w", "wf.yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const ApiRequest& req = h.transport.requests[0];
  EXPECT_EQ(req.method, "PUT");
  EXPECT_EQ(req.path, "/api/v1/workflows/w");
  EXPECT_EQ(req.content_type, "application/yaml");
  EXPECT_EQ(req.body, "name: w\nsteps: []\n");
  EXPECT_EQ(r.out, "workflow w: stored new version abc123\n");
}

TEST(WorkflowCommandTest, VersionsListsNewestFirstWithTheCurrentAndTheFilesVersionMarked) {
  CliHarness h;
  h.transport.reply(200, R"({"name": "w", "items": [
    {"hash": "h2", "source": "api", "created_at": "2026-12-02T10:00:00.000Z", "created_by": "t-3", "current": true, "file_loaded": false},
    {"hash": "h1", "source": "workflows/w.yaml", "created_at": "2026-12-01T09:00:00.000Z", "created_by": "kilnd", "current": false, "file_loaded": true}],
    "next_cursor": null})");
  auto r = h.run({"workflow", "versions", "w"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/workflows/w/versions");
  EXPECT_EQ(r.out,
            "HASH  CURRENT  FILE  CREATED                   BY     SOURCE\n"
            "h2    yes      -     2026-12-02T10:00:00.000Z  t-3    api\n"
            "h1    -        yes   2026-12-01T09:00:00.000Z  kilnd  workflows/w.yaml\n");
}

TEST(WorkflowCommandTest, HistoryReadsTheWorkflowsAuditRecordsAndPrintsWhoWhenHashesAndDiff) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [
    {"id": 9, "at": "2026-12-02T10:00:00.000Z", "actor": "t-3", "actor_name": "alice", "action": "workflow.put",
     "target": "w", "details": {"hash": "h2", "source": "api", "previous_hash": "h1", "previous_source": "workflows/w.yaml",
     "diff": "--- w@h1\n+++ w@h2\n@@ -1,1 +1,1 @@\n-a\n+b\n", "diff_truncated": true}},
    {"id": 2, "at": "2026-12-01T09:00:00.000Z", "actor": "kilnd", "actor_name": "kilnd", "action": "workflow.put",
     "target": "w", "details": {"hash": "h1", "source": "workflows/w.yaml", "previous_hash": null}}],
    "next_cursor": null})");
  auto r = h.run({"workflow", "history", "w"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/audit?action=workflow.put&target=w");
  EXPECT_EQ(r.out,
            "2026-12-02T10:00:00.000Z  alice (t-3)  h1 -> h2  from api\n"
            "--- w@h1\n+++ w@h2\n@@ -1,1 +1,1 @@\n-a\n+b\n... (diff truncated)\n\n"
            "2026-12-01T09:00:00.000Z  kilnd  (new) -> h1  from workflows/w.yaml\n\n");
}

TEST(WorkflowCommandTest, PutPrintsEveryProblemWithFileLineAndColumn) {
  CliHarness h;
  h.fs.files["wf.yaml"] = "name: w\n";
  h.transport.reply(422, R"({"error": {"code": "invalid_content", "message": "request body:3:5: steps[0].timeout: bad",
    "details": {"fields": [{"path": "steps[0].timeout", "message": "3:5: expected a duration like 30s"},
                           {"path": "", "message": "9:1: YAML syntax error: end of map not found"},
                           {"path": "params.x", "message": "no position"}],
                "text": "request body:3:5: ...", "count": "3"}}})");
  auto r = h.run({"workflow", "put", "w", "wf.yaml"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "kilnctl: wf.yaml is not a valid workflow (3 problems):\n"
            "wf.yaml:3:5: steps[0].timeout: expected a duration like 30s\n"
            "wf.yaml:9:1: YAML syntax error: end of map not found\n"
            "wf.yaml: params.x: no position\n");
}

TEST(WorkflowCommandTest, PutOfAMissingFileIsAUsageErrorWithoutACall) {
  CliHarness h;
  auto r = h.run({"workflow", "put", "w", "nope.yaml"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(h.transport.requests.empty());
  EXPECT_NE(r.err.find("cannot read nope.yaml"), std::string::npos);
}

// --- run ----------------------------------------------------------------------------------

TEST(RunCommandTest, StartPostsWorkflowTargetsParamsAndPurpose) {
  CliHarness h;
  h.transport.reply(201, testing::runningRun().dump());
  auto r = h.run({"run", "start", "l11-burn-in", "--pods", "p1,p2", "--param", "diag_level=4", "--param",
                  "stress_test=mnubergemm", "--purpose", "manual"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const ApiRequest& req = h.transport.requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/api/v1/workflow-runs");
  EXPECT_EQ(json::parse(req.body), (json{{"workflow", "l11-burn-in"},
                                         {"pods", {"p1", "p2"}},
                                         {"params", {{"diag_level", "4"}, {"stress_test", "mnubergemm"}}},
                                         {"purpose", "manual"}}));
  EXPECT_EQ(r.out,
            "started run-7: run-7 running: 2 hosts, 0 passed, 0 failed, 2 running (dcgm-diag 2)\n"
            "Follow it: kilnctl run watch run-7\n");
}

TEST(RunCommandTest, StartWithHostsSendsOnlyHosts) {
  CliHarness h;
  h.transport.reply(201, testing::runningRun().dump());
  ASSERT_EQ(h.run({"run", "start", "pre-job-health", "--hosts", "h1"}).code, kExitOk);
  EXPECT_EQ(json::parse(h.transport.requests[0].body), (json{{"workflow", "pre-job-health"}, {"hosts", {"h1"}}}));
}

TEST(RunCommandTest, StartRefusesBadTargetsAndParamsWithoutACall) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "start", "w"}, "kilnctl: give --hosts or --pods\n"},
      {{"run", "start", "w", "--hosts", "h1,,h2"}, "kilnctl: --hosts needs a comma-separated list of ids, not 'h1,,h2'\n"},
      {{"run", "start", "w", "--pods", "p", "--param", "a=1", "--param", "a=2"}, "kilnctl: --param a given twice\n"},
      {{"run", "start", "w", "--pods", "p", "--param", "novalue"}, "kilnctl: --param needs KEY=VALUE, not 'novalue'\n"},
  };
  for (const auto& [args, err] : cases) {
    CliHarness h;
    auto r = h.run(args);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_EQ(r.err, err + "Run 'kilnctl run start --help' for usage.\n");
    EXPECT_TRUE(h.transport.requests.empty());
  }
}

TEST(RunCommandTest, ShowRendersHostsStepsAndTheSummary) {
  CliHarness h;
  h.transport.reply(200, testing::failedRun().dump());
  auto r = h.run({"run", "show", "run-7"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/workflow-runs/run-7");
  EXPECT_EQ(r.out,
            "id:        run-7\n"
            "workflow:  l11-burn-in (0123456789ab)\n"
            "purpose:   burn_in\n"
            "scope:     pod\n"
            "state:     failed\n"
            "progress:  2 hosts, 1 passed, 1 failed, 0 running\n"
            "params:    diag_level=3\n"
            "created:   2026-01-01T00:00:00Z by tok-ci\n"
            "finished:  2026-01-01T00:01:35Z (after 1m35s)\n"
            "\n"
            "Hosts:\n"
            "HOST               STATUS  STEP  PASS  FAILURES                                                                         WARNINGS\n"
            "prn-b01-p0001-h01  passed  -     1     -                                                                                -\n"
            "prn-b01-p0001-h02  failed  -     1     nvlink-after-g0: NVLink error counters did not grow: gpu 2 link 7: crc_flit +14  -\n"
            "\n"
            "prn-b01-p0001-h01: passed\n"
            "STEP             PASS  ATTEMPT  OUTCOME  EXIT  TIME   MESSAGE\n"
            "gpu-state        1     1        passed   0     1.2s   -\n"
            "dcgm-diag        1     1        passed   0     1m00s  -\n"
            "nvlink-after-g0  1     1        passed   0     500ms  -\n"
            "\n"
            "prn-b01-p0001-h02: failed\n"
            "STEP             PASS  ATTEMPT  OUTCOME  EXIT  TIME  MESSAGE\n"
            "gpu-state        1     1        passed   0     1.3s  -\n"
            "dcgm-diag        1     1        skipped  -     -     condition is false\n"
            "nvlink-after-g0  1     1        failed   0     1.5s  NVLink error counters did not grow: gpu 2 link 7: crc_flit +14\n"
            "\n"
            "Summary:\n"
            "healthy:  1 of 2 hosts\n"
            "\n"
            "Unhealthy hosts:\n"
            "HOST               POD            REASONS\n"
            "prn-b01-p0001-h02  prn-b01-p0001  nvlink-after-g0: NVLink error counters did not grow: gpu 2 link 7: crc_flit +14\n"
            "\n"
            "Pods:\n"
            "POD            HEALTHY_HOSTS  HEALTHY_GPUS  SPARES_COVER  FAILED_HOSTS\n"
            "prn-b01-p0001  1/2            4             -             -\n");
}

TEST(RunCommandTest, ListSendsFiltersAndRendersHealthyCounts) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [{"id": "run-9", "workflow": "l11-burn-in", "purpose": "burn_in", "state": "failed",
    "created_by": "tok-ci", "created_at_ms": 1767225600000, "finished_at_ms": 1767229200000,
    "summary": {"hosts": 18, "healthy": 17}},
    {"id": "run-10", "workflow": "l11-burn-in", "purpose": "burn_in", "state": "running", "created_by": "tok-ci",
    "created_at_ms": 1767229200000, "finished_at_ms": null, "summary": null}], "next_cursor": null})");
  auto r = h.run({"run", "list", "--workflow", "l11-burn-in", "--state", "failed", "--host", "h1", "--purpose",
                  "burn_in", "--limit", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/workflow-runs");
  EXPECT_EQ(h.transport.requests[0].query, (Query{{"limit", "2"}, {"workflow", "l11-burn-in"}, {"state", "failed"},
                                                   {"host", "h1"}, {"purpose", "burn_in"}}));
  EXPECT_EQ(r.out,
            "ID      WORKFLOW     PURPOSE  STATE    HEALTHY  CREATED               BY      FINISHED\n"
            "run-9   l11-burn-in  burn_in  failed   17/18    2026-01-01T00:00:00Z  tok-ci  2026-01-01T01:00:00Z\n"
            "run-10  l11-burn-in  burn_in  running  -        2026-01-01T01:00:00Z  tok-ci  -\n");
}

TEST(RunCommandTest, CancelPostsToTheRunsCancelPath) {
  CliHarness h;
  json cancelled = testing::runDoc("cancelled", json::array({testing::hostDoc(testing::kH1, "cancelled", "", json::array())}));
  h.transport.reply(200, cancelled.dump());
  auto r = h.run({"run", "cancel", "run 7"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].method, "POST");
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/workflow-runs/run%207/cancel");
  EXPECT_EQ(r.out, "run-7 cancelled: 0 of 1 host healthy, 1 cancelled\n");
}

TEST(RunCommandTest, CancelOfAFinishedRunFails) {
  CliHarness h;
  h.transport.reply(409, R"({"error": {"code": "conflict", "message": "run run-7 is already passed", "details": {}}})");
  auto r = h.run({"run", "cancel", "run-7"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kilnctl: run run-7 is already passed (HTTP 409 conflict)\n");
}

TEST(RunWatchTest, FollowsUntilPassedAndExitsZero) {
  CliHarness h;
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run({"run", "watch", "run-7"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 3u);
  for (const auto& req : h.transport.requests) EXPECT_EQ(req.pathAndQuery(), "/api/v1/workflow-runs/run-7");
  EXPECT_EQ(h.fs.sleeps, (std::vector<std::chrono::milliseconds>{seconds(5), seconds(5)}));
  EXPECT_EQ(r.out,
            "[0:00:00] run-7 running: 2 hosts, 0 passed, 0 failed, 2 running (dcgm-diag 2)\n"
            "[0:00:10] run-7 passed: 2 hosts, 2 passed, 0 failed, 0 running\n"
            "run-7 passed: 2 of 2 hosts healthy\n");
}

TEST(RunWatchTest, FailedRunExitsOneAndNamesTheHost) {
  CliHarness h;
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.reply(200, testing::failedRun().dump());
  auto r = h.run({"run", "watch", "run-7", "--poll-interval", "1m"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(h.fs.sleeps, (std::vector<std::chrono::milliseconds>{seconds(60)}));
  EXPECT_NE(r.out.find("  FAILED prn-b01-p0001-h02: nvlink-after-g0: NVLink error counters did not grow"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("run-7 failed: 1 of 2 hosts healthy\n"), std::string::npos) << r.out;
}

TEST(RunWatchTest, TimeoutStopsWatchingWithoutCancelling) {
  CliHarness h;
  for (int i = 0; i < 10; ++i) h.transport.reply(200, testing::runningRun().dump());
  auto r = h.run({"run", "watch", "run-7", "--timeout", "12s"});
  EXPECT_EQ(r.code, kExitFailed);
  // 5s + 5s + the 2s left of the timeout; then no more polls.
  EXPECT_EQ(h.fs.sleeps, (std::vector<std::chrono::milliseconds>{seconds(5), seconds(5), seconds(2)}));
  EXPECT_EQ(h.transport.requests.size(), 4u);
  for (const auto& req : h.transport.requests) EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(r.err, "kilnctl: stopped watching run-7 after 12s; the run goes on (kilnctl run cancel run-7 stops it)\n");
  EXPECT_EQ(testing::lineCount(r.out), 1) << r.out;  // nothing changed after the first line
}

TEST(RunWatchTest, RejectsABadDuration) {
  CliHarness h;
  auto r = h.run({"run", "watch", "run-7", "--timeout", "soon"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.rfind("kilnctl: --timeout: 'soon' is not a duration", 0), 0u) << r.err;
  EXPECT_TRUE(h.transport.requests.empty());
}

TEST(RunWatchTest, PollFailuresAreRetriedUntilTheOutageLimit) {
  CliHarness h;
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.fail("connection refused");
  h.transport.reply(503, "{}");
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run({"run", "watch", "run-7"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.err,
            "kilnctl: cannot poll run-7: connection refused (retrying)\n"
            "kilnctl: cannot poll run-7: HTTP 503 (retrying)\n");

  CliHarness down;
  down.transport.reply(200, testing::runningRun().dump());
  for (int i = 0; i < 100; ++i) down.transport.fail("connection refused");
  auto lost = down.run({"run", "watch", "run-7", "--poll-interval", "1m"});
  EXPECT_EQ(lost.code, kExitFailed);
  EXPECT_EQ(down.transport.requests.size(), 7u);  // 6 failed polls span 5 minutes
  EXPECT_NE(lost.err.find("kilnctl: cannot poll run-7 (connection refused) for 5m00s; giving up\n"), std::string::npos)
      << lost.err;
}

// --- quarantine ---------------------------------------------------------------------------

TEST(QuarantineCommandTest, ListShowsTimeRepairsOffendersAndValidationProgress) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [
    {"host": "prn-b01-p0001-h05", "pod": "prn-b01-p0001", "building": "prn-b01", "since_ms": 1767225600000,
     "seconds_in_quarantine": 93784, "repairs": 3, "repeat_offender": true,
     "last_failure": "pre-job-health run-3 failed: gpu-state: no row remap pending: gpu 1 pending",
     "validation_run": "run-12", "validation_state": "running",
     "progress": {"pass": 2, "step_index": 0, "status": "pending", "waiting_until_ms": 1767229200000}},
    {"host": "prn-b01-p0002-h11", "pod": "prn-b01-p0002", "building": "prn-b01", "since_ms": 1767225600000,
     "seconds_in_quarantine": 600, "repairs": 1, "repeat_offender": false, "last_failure": "",
     "validation_run": "run-13", "validation_state": "running",
     "progress": {"pass": 1, "step_index": 3, "status": "running", "waiting_until_ms": null}},
    {"host": "prn-b01-p0003-h02", "pod": "prn-b01-p0003", "building": "prn-b01", "since_ms": 1767225600000,
     "seconds_in_quarantine": 42, "repairs": 0, "repeat_offender": false, "last_failure": "",
     "validation_run": null, "validation_state": null, "progress": null}], "next_cursor": null})");
  auto r = h.run({"quarantine", "list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/quarantine");
  EXPECT_EQ(r.out,
            "HOST               POD            IN_QUARANTINE  REPAIRS  OFFENDER  LAST_FAILURE                                                                 VALIDATION\n"
            "prn-b01-p0001-h05  prn-b01-p0001  26h03m         3        REPEAT    pre-job-health run-3 failed: gpu-state: no row remap pending: gpu 1 pending  run-12 running: pass 2, step 1, soaking\n"
            "prn-b01-p0002-h11  prn-b01-p0002  10m00s         1        -         -                                                                            run-13 running: pass 1, step 4\n"
            "prn-b01-p0003-h02  prn-b01-p0003  42s            0        -         -                                                                            not started\n");
}

}  // namespace
}  // namespace kiln::cli
