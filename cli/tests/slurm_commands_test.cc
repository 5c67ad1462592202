// kilnctl slurm prolog | health-check: which nodes and job it asks about, the request it sends,
// the exit code and the one stderr line for every outcome (passed, failed, refused, kilnd down,
// timed out), and that stdout stays empty for Slurm.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/run_fixtures.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CliHarness;

// A POST /scheduler/checks answer: a run document plus the node -> host map.
json checkAnswer(json run) {
  run["nodes"] = {{"gpu01", testing::kH1}, {"gpu02", testing::kH2}};
  return run;
}

json sentBody(const CliHarness& h, std::size_t i = 0) { return json::parse(h.transport.requests.at(i).body); }

TEST(SlurmPrologTest, APassedCheckExitsZeroWithOneLineAndNothingOnStdout) {
  CliHarness h;
  h.fs.tty = true;  // no progress bar even on a terminal
  h.fs.env = {{"SLURM_JOB_NODELIST", "gpu[01-02]"}, {"SLURM_JOB_ID", "4242"}};
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run({"slurm", "prolog"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "kiln: pre-job check run-7 passed on 2 nodes\n");
  ASSERT_EQ(h.transport.requests.size(), 3u);
  EXPECT_EQ(h.transport.requests[0].method, "POST");
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/scheduler/checks");
  EXPECT_EQ(sentBody(h), (json{{"nodes", {"gpu01", "gpu02"}}, {"job", "4242"}}));
  EXPECT_EQ(h.transport.requests[1].method, "GET");
  // Read where the prolog's narrow prejob token may read it: the state only, while it runs.
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/scheduler/checks/run-7?view=state");
  EXPECT_EQ(h.transport.requests[2].pathAndQuery(), "/api/v1/scheduler/checks/run-7?view=state");
  // A job's whole hostlist: one kilnctl for the job, polling 4 times a second (issue 35).
  EXPECT_EQ(h.fs.sleeps, (std::vector<milliseconds>{milliseconds(250), milliseconds(250)}));
}

TEST(SlurmPrologTest, OneNodePollsOnceASecond) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.fs.sleeps, (std::vector<milliseconds>{seconds(1)}));  // every node's own prolog polls
}

// The state poll carries no hosts: a failed check's reasons come from its summary, without a
// read of the whole view (tens of seconds for kilnd to build at 8,192 hosts).
TEST(SlurmPrologTest, AFailedCheckSeenByItsStateNamesTheFailedHostsFromItsSummary) {
  CliHarness h;
  h.fs.env = {{"SLURM_JOB_NODELIST", "gpu[01-02]"}};
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  json state = testing::failedRun();
  state.erase("hosts");
  state.erase("progress");
  h.transport.reply(200, state.dump());
  auto r = h.run({"slurm", "prolog"});
  EXPECT_EQ(r.code, kExitFailed);
  ASSERT_EQ(h.transport.requests.size(), 2u);
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/scheduler/checks/run-7?view=state");
  EXPECT_EQ(r.err, std::string("kiln: pre-job check run-7 failed on prn-b01-p0001-h02(gpu02): nvlink-after-g0: ") +
                       testing::kLinkFailure + "\n");
}

// Issue 35: a check whose hosts only lost their reports (an overloaded kilnd) gave no verdict on
// them: --unreachable decides, as when kilnd is down. A real failure beside them still fails.
TEST(SlurmPrologTest, ACheckThatOnlyLostReportsIsNoVerdictAndARealFailureBesideThemStillFails) {
  const std::string lost = "gpu-state: no report from the agent within the lease";
  for (const auto& [policy, code] : std::vector<std::pair<std::string, int>>{{"open", kExitOk}, {"closed", kExitFailed}}) {
    CliHarness h;
    h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
    json state = testing::failedRun();
    state.erase("hosts");
    state["summary"]["unhealthy"] = json::array({{{"host", testing::kH1}, {"pod", "p"}, {"reasons", {lost}}, {"lost", true}},
                                                 {{"host", testing::kH2}, {"pod", "p"}, {"reasons", {lost}}, {"lost", true}}});
    h.transport.reply(200, state.dump());
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu[01-02]", "--unreachable", policy});
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_EQ(r.err, "kiln: prolog: pre-job check run-7: no report from 2 hosts within its step's lease (kilnd "
                     "overloaded, or the agents unreachable): failing " + policy + "\n");
  }
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  json state = testing::failedRun();
  state.erase("hosts");
  state["summary"]["unhealthy"] = json::array({{{"host", testing::kH1}, {"pod", "p"}, {"reasons", {lost}}, {"lost", true}},
                                               {{"host", testing::kH2}, {"pod", "p"}, {"reasons", {"gpu-state: GPU count: 3"}}, {"lost", false}}});
  h.transport.reply(200, state.dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu[01-02]"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kiln: pre-job check run-7 failed on prn-b01-p0001-h01(gpu01): " + lost +
                       "\nkiln: pre-job check run-7 failed on prn-b01-p0001-h02(gpu02): gpu-state: GPU count: 3\n");
}

TEST(SlurmPrologTest, NodesComeFromTheFlagThenEachVariableInOrder) {
  struct Case {
    std::vector<std::string> extra;
    std::map<std::string, std::string> env;
    std::vector<std::string> nodes;
  };
  const std::map<std::string, std::string> all = {
      {"SLURM_JOB_NODELIST", "a[1-2]"}, {"SLURMD_NODENAME", "b1"}, {"SLURM_NODELIST", "c[1-3]"}};
  const std::vector<Case> cases = {
      {{"--nodes", "x[08-10],y"}, all, {"x08", "x09", "x10", "y"}},
      {{}, all, {"a1", "a2"}},
      {{}, {{"SLURMD_NODENAME", "b1"}, {"SLURM_NODELIST", "c[1-3]"}}, {"b1"}},
      {{}, {{"SLURM_NODELIST", "c[1-3]"}}, {"c1", "c2", "c3"}},
      // An empty variable counts as unset.
      {{}, {{"SLURM_JOB_NODELIST", ""}, {"SLURMD_NODENAME", "b1"}}, {"b1"}},
      // A slurmd Prolog checks its own node, even if Slurm also gives it the job's list.
      {{}, {{"SLURM_SCRIPT_CONTEXT", "prolog_slurmd"}, {"SLURM_JOB_NODELIST", "a[1-2]"}, {"SLURMD_NODENAME", "b1"}}, {"b1"}},
      {{}, {{"SLURM_SCRIPT_CONTEXT", "prolog_slurmctld"}, {"SLURM_JOB_NODELIST", "a[1-2]"}, {"SLURMD_NODENAME", "b1"}},
       {"a1", "a2"}},
      // Duplicates are asked about once.
      {{"--nodes", "n1,n[1-2]"}, {}, {"n1", "n2"}},
  };
  for (const auto& c : cases) {
    CliHarness h;
    h.fs.env = c.env;
    h.transport.reply(201, checkAnswer(testing::passedRun()).dump());
    std::vector<std::string> args = {"slurm", "prolog"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto r = h.run(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    ASSERT_EQ(h.transport.requests.size(), 1u);
    EXPECT_EQ(sentBody(h)["nodes"], json(c.nodes)) << sentBody(h);
  }
}

TEST(SlurmPrologTest, TheJobComesFromTheFlagOrTheEnvironmentOrIsLeftOut) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    json job;  // null: no "job" key
  };
  const std::vector<Case> cases = {
      {{"slurm", "prolog", "--nodes", "n1", "--job", "77"}, {{"SLURM_JOB_ID", "4242"}}, "77"},
      {{"slurm", "prolog", "--nodes", "n1"}, {{"SLURM_JOB_ID", "4242"}}, "4242"},
      {{"slurm", "prolog", "--nodes", "n1"}, {}, nullptr},
      {{"slurm", "prolog", "--nodes", "n1"}, {{"SLURM_JOB_ID", ""}}, nullptr},
      {{"slurm", "health-check", "--nodes", "n1"}, {{"SLURM_JOB_ID", "4242"}}, nullptr},  // never a job
  };
  for (const auto& c : cases) {
    CliHarness h;
    h.fs.env = c.env;
    h.transport.reply(201, checkAnswer(testing::passedRun()).dump());
    EXPECT_EQ(h.run(c.args).code, kExitOk);
    ASSERT_EQ(h.transport.requests.size(), 1u);
    const json body = sentBody(h);
    if (c.job.is_null()) EXPECT_FALSE(body.contains("job")) << body;
    else EXPECT_EQ(body["job"], c.job) << body;
    EXPECT_EQ(body["nodes"], json({"n1"}));
  }
}

TEST(SlurmPrologTest, AFailedCheckExitsOneWithALinePerFailedHost) {
  CliHarness h;
  h.fs.env = {{"SLURM_JOB_NODELIST", "gpu[01-02]"}};
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(200, testing::failedRun().dump());  // the poll's document has no "nodes"
  auto r = h.run({"slurm", "prolog"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, std::string("kiln: pre-job check run-7 failed on prn-b01-p0001-h02(gpu02): nvlink-after-g0: ") +
                       testing::kLinkFailure + "\n");
}

TEST(SlurmPrologTest, AFailedHostWithoutFailuresNamesItsFailedStepAndAnUnmappedHostShowsAQuestionMark) {
  json run = testing::failedRun();
  run["hosts"][1]["failures"] = json::array();
  run["hosts"][1]["host"] = "h-unknown";
  run["hosts"][0]["status"] = "failed";
  run["hosts"][0]["failures"] = {"gpu-state: 7 of 8 GPUs\nvisible", "second reason"};
  CliHarness h;
  h.transport.reply(201, checkAnswer(run).dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu[01-02]"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, std::string("kiln: pre-job check run-7 failed on prn-b01-p0001-h01(gpu01): gpu-state: 7 of 8 GPUs visible\n"
                               "kiln: pre-job check run-7 failed on h-unknown(?): nvlink-after-g0: ") +
                       testing::kLinkFailure + "\n");
}

TEST(SlurmPrologTest, ACancelledCheckExitsOne) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(200, testing::runDoc("cancelled", json::array({testing::hostDoc(testing::kH1, "cancelled", "", json::array())}))
                             .dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", "open"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kiln: pre-job check run-7 was cancelled before giving a verdict\n");
}

TEST(SlurmPrologTest, AnUnknownNodeIsRefusedAndPrintedAndFailsByPolicy) {
  const std::string refused =
      R"({"error": {"code": "invalid_content", "message": "2 nodes have no Kiln host", "details": {"fields": [)"
      R"({"path": "nodes[0]", "message": "no Kiln host for node gpu01"}, {"path": "nodes[1]", "message": "no Kiln host for node gpu02"}]}}})";
  const std::string line =
      "kiln: prolog: kilnd refused the check (HTTP 422 invalid_content: 2 nodes have no Kiln host; nodes[0]: no "
      "Kiln host for node gpu01; nodes[1]: no Kiln host for node gpu02): failing ";
  for (const auto& [policy, code] : std::vector<std::pair<std::string, int>>{{"open", kExitOk}, {"closed", kExitFailed}}) {
    CliHarness h;
    h.transport.reply(422, refused);
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu[01-02]", "--unreachable", policy});
    EXPECT_EQ(r.code, code) << policy;
    EXPECT_EQ(r.err, line + policy + "\n");
    EXPECT_EQ(h.transport.requests.size(), 1u);  // no polling
  }
  CliHarness h;  // the default is open
  h.transport.reply(401, R"({"error": {"code": "unauthenticated", "message": "bad token", "details": {}}})");
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.err, "kiln: prolog: kilnd refused the check (HTTP 401 unauthenticated: bad token): failing open\n");
}

TEST(SlurmPrologTest, AnUnreachableKilndFailsOpenByDefaultOrClosed) {
  const std::string refused = "cannot connect to http://127.0.0.1:8080: Connection refused";
  {
    CliHarness h;
    h.transport.fail(refused);
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu01"});
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_EQ(r.err, "kiln: prolog: kilnd unreachable (" + refused + "): failing open\n");
    EXPECT_EQ(r.out, "");
  }
  {
    CliHarness h;
    h.transport.fail(refused);
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", "closed"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err, "kiln: prolog: kilnd unreachable (" + refused + "): failing closed\n");
  }
}

TEST(SlurmPrologTest, A5xxCountsAsUnreachable) {
  const std::string down = R"({"error": {"code": "unavailable", "message": "the database is unreachable", "details": {}}})";
  for (const auto& [policy, code] : std::vector<std::pair<std::string, int>>{{"open", kExitOk}, {"closed", kExitFailed}}) {
    CliHarness h;
    h.transport.reply(503, down);
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", policy});
    EXPECT_EQ(r.code, code);
    EXPECT_EQ(r.err, "kiln: prolog: kilnd unreachable (HTTP 503 unavailable: the database is unreachable): failing " +
                         policy + "\n");
  }
  CliHarness h;
  h.transport.reply(502, "<html>Bad Gateway</html>");
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", "closed"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kiln: prolog: kilnd unreachable (HTTP 502: <html>Bad Gateway</html>): failing closed\n");
}

TEST(SlurmPrologTest, AnAnswerWithoutARunGivesNoVerdict) {
  CliHarness h;
  h.transport.reply(201, R"({"nodes": {}})");
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", "closed"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kiln: prolog: kilnd's answer (HTTP 201) names no check run: failing closed\n");
}

TEST(SlurmPrologTest, ACheckThatDoesNotFinishInTimeFailsByPolicyAndIsLeftRunning) {
  for (const auto& [policy, code] : std::vector<std::pair<std::string, int>>{{"open", kExitOk}, {"closed", kExitFailed}}) {
    CliHarness h;
    h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
    for (int i = 0; i < 10; ++i) h.transport.reply(200, testing::runningRun().dump());
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--timeout", "30s", "--poll-interval", "10s",
                    "--unreachable", policy});
    EXPECT_EQ(r.code, code);
    EXPECT_EQ(r.err, "kiln: prolog: pre-job check run-7 did not finish within 30s (left running): failing " + policy + "\n");
    EXPECT_EQ(h.fs.sleeps, (std::vector<milliseconds>{seconds(10), seconds(10), seconds(10)}));
    ASSERT_EQ(h.transport.requests.size(), 4u);  // the POST and three polls: nothing cancelled
    for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(h.transport.requests[i].method, "GET");
  }
}

TEST(SlurmPrologTest, TheDefaultTimeoutIs50Seconds) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  for (int i = 0; i < 60; ++i) h.transport.reply(200, testing::runningRun().dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.err, "kiln: prolog: pre-job check run-7 did not finish within 50s (left running): failing open\n");
  EXPECT_EQ(h.fs.sleeps, std::vector<milliseconds>(50, seconds(1)));
}

TEST(SlurmPrologTest, PollsFailingForLongIsUnreachableAndNotLoggedPerPoll) {
  for (const auto& [policy, code] : std::vector<std::pair<std::string, int>>{{"open", kExitOk}, {"closed", kExitFailed}}) {
    CliHarness h;
    h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
    for (int i = 0; i < 40; ++i) h.transport.fail("cannot connect to http://127.0.0.1:8080: Connection refused");
    auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", policy});
    EXPECT_EQ(r.code, code);
    EXPECT_EQ(r.err,
              "kiln: prolog: kilnd unreachable (lost run-7: cannot connect to http://127.0.0.1:8080: Connection refused): "
              "failing " + policy + "\n");
    EXPECT_EQ(h.fs.sleeps.size(), 16u);  // gave up after 15 s of failed polls, well before --timeout
  }
}

TEST(SlurmPrologTest, PollsFailingUntilTheTimeoutAreUnreachable) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.reply(503, R"({"error": {"code": "unavailable", "message": "database down", "details": {}}})");
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--timeout", "10s", "--poll-interval", "5s"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.err, "kiln: prolog: kilnd unreachable (lost run-7: HTTP 503 unavailable: database down): failing open\n");
}

TEST(SlurmPrologTest, APollAnswered4xxIsUnreachable) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(404, R"({"error": {"code": "not_found", "message": "no run run-7", "details": {}}})");
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu01", "--unreachable", "closed"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kiln: prolog: kilnd unreachable (lost run-7: HTTP 404 not_found: no run run-7): failing closed\n");
}

TEST(SlurmPrologTest, APollThatFailsOnceThenRecoversStillGivesTheVerdictQuietly) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.fail("cannot connect to http://127.0.0.1:8080: Connection refused");
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu[01-02]", "--unreachable", "closed"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.err, "kiln: pre-job check run-7 passed on 2 nodes\n");
}

TEST(SlurmPrologTest, JsonPrintsTheFinalRunWithItsNodesOnStdout) {
  CliHarness h;
  h.transport.reply(201, checkAnswer(testing::runningRun()).dump());
  h.transport.reply(200, testing::failedRun().dump());
  auto r = h.run({"slurm", "prolog", "--nodes", "gpu[01-02]", "--json"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(json::parse(r.out), checkAnswer(testing::failedRun()));
  EXPECT_EQ(testing::lineCount(r.err), 1) << r.err;
}

TEST(SlurmPrologTest, BadUsageExitsTwoWithoutACall) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"slurm", "prolog"}, {}, "kilnctl: no nodes to check: give --nodes"},
      {{"slurm", "prolog"}, {{"SLURM_JOB_NODELIST", ""}}, "kilnctl: no nodes to check"},
      {{"slurm", "prolog", "--nodes", ""}, {}, "kilnctl: --nodes needs a Slurm hostlist"},
      {{"slurm", "prolog", "--nodes", "n[3-1]"}, {}, "kilnctl: --nodes: hostlist name 'n[3-1]': range 3-1 is reversed"},
      {{"slurm", "prolog"}, {{"SLURM_JOB_NODELIST", "n[1-2"}}, "kilnctl: $SLURM_JOB_NODELIST: hostlist 'n[1-2'"},
      {{"slurm", "prolog", "--nodes", "n[1-200000]"}, {}, "kilnctl: --nodes: hostlist 'n[1-200000]' expands to more"},
      {{"slurm", "prolog", "--nodes", "n1", "--unreachable", "maybe"}, {}, "kilnctl: --unreachable must be open or closed"},
      {{"slurm", "prolog", "--nodes", "n1", "--timeout", "50"}, {}, "kilnctl: --timeout: "},
      {{"slurm", "prolog", "--nodes", "n1", "--poll-interval", "0s"}, {}, "kilnctl: --poll-interval: "},
      {{"slurm", "prolog", "--nodes", "n1", "extra"}, {}, "kilnctl: unexpected argument 'extra'"},
      {{"slurm", "health-check", "--job", "1"}, {}, "kilnctl: unknown flag '--job'"},
      {{"slurm"}, {}, "kilnctl: 'slurm' needs a command: prolog, health-check"},
  };
  for (const auto& c : cases) {
    CliHarness h;
    h.fs.env = c.env;
    auto r = h.run(c.args);
    EXPECT_EQ(r.code, kExitUsage) << c.message;
    EXPECT_EQ(r.err.rfind(c.message, 0), 0u) << r.err;
    EXPECT_TRUE(h.transport.requests.empty()) << c.message;
  }
}

TEST(SlurmHealthCheckTest, ChecksThisNodeFromSlurmdNodenameOrTheShortHostName) {
  struct Case {
    std::map<std::string, std::string> env;
    std::string host_name;
    std::vector<std::string> extra;
    std::vector<std::string> nodes;
  };
  const std::vector<Case> cases = {
      {{{"SLURMD_NODENAME", "gpu07"}, {"SLURM_JOB_NODELIST", "a[1-2]"}}, "other.example.net", {}, {"gpu07"}},
      {{{"SLURM_JOB_NODELIST", "a[1-2]"}, {"SLURM_NODELIST", "c1"}}, "gpu08.cluster.example.net", {}, {"gpu08"}},
      {{}, "gpu09", {}, {"gpu09"}},
      {{{"SLURMD_NODENAME", "gpu07"}}, "gpu09", {"--nodes", "gpu[10-11]"}, {"gpu10", "gpu11"}},
  };
  for (const auto& c : cases) {
    CliHarness h;
    h.fs.env = c.env;
    h.fs.host_name = c.host_name;
    h.transport.reply(201, checkAnswer(testing::passedRun()).dump());
    std::vector<std::string> args = {"slurm", "health-check"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto r = h.run(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    ASSERT_EQ(h.transport.requests.size(), 1u);
    EXPECT_EQ(sentBody(h), (json{{"nodes", c.nodes}}));
  }
  CliHarness none;
  auto r = none.run({"slurm", "health-check"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err.rfind("kilnctl: cannot tell this machine's host name: give --nodes\n", 0), 0u) << r.err;
}

TEST(SlurmHealthCheckTest, PrintsTheVerdictAndExitsLikeProlog) {
  {
    CliHarness h;
    h.fs.host_name = "gpu02";
    h.transport.reply(201, checkAnswer(testing::failedRun()).dump());
    auto r = h.run({"slurm", "health-check"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, std::string("kiln: pre-job check run-7 failed on prn-b01-p0001-h02(gpu02): nvlink-after-g0: ") +
                         testing::kLinkFailure + "\n");
  }
  {
    CliHarness h;
    h.fs.host_name = "gpu02";
    h.transport.fail("cannot connect to http://kiln:8080: Connection refused");
    auto r = h.run({"slurm", "health-check", "--unreachable", "closed"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err, "kiln: health-check: kilnd unreachable (cannot connect to http://kiln:8080: Connection refused): "
                     "failing closed\n");
  }
}

TEST(SlurmCommandsTest, ConnectionSettingsComeFromTheConfigFileLikeEveryCommand) {
  CliHarness h;
  h.fs.env = {{"KILN_CONFIG", "/etc/kiln/prolog.yaml"}, {"SLURMD_NODENAME", "gpu01"}};
  h.fs.files = {{"/etc/kiln/prolog.yaml", "url: https://kiln.example.net:8443\ntoken_file: prolog.token\n"},
                {"/etc/kiln/prolog.token", "s3cret\n"}};
  h.transport.reply(201, checkAnswer(testing::passedRun()).dump());
  auto r = h.run({"--timeout", "10", "slurm", "prolog"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  ASSERT_TRUE(h.settings.has_value());
  EXPECT_EQ(h.settings->url, "https://kiln.example.net:8443");
  EXPECT_EQ(h.settings->token, "s3cret");
  EXPECT_EQ(h.settings->timeout, milliseconds(10000));  // the global --timeout before the command: per call
}

TEST(SlurmCommandsTest, EachCallIsCappedAtTenSecondsWhateverTheGlobalTimeout) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"slurm", "prolog", "--nodes", "gpu01"},
        std::vector<std::string>{"--timeout", "300", "slurm", "health-check", "--nodes", "gpu01"}}) {
    CliHarness h;
    h.transport.reply(201, checkAnswer(testing::passedRun()).dump());
    h.run(args);
    ASSERT_TRUE(h.settings.has_value());
    EXPECT_EQ(h.settings->timeout, milliseconds(10000)) << args[0];  // not the default 120 s, nor 300
  }
  CliHarness h;  // a shorter global timeout stands
  h.transport.reply(201, checkAnswer(testing::passedRun()).dump());
  h.run({"--timeout", "3", "slurm", "prolog", "--nodes", "gpu01"});
  ASSERT_TRUE(h.settings.has_value());
  EXPECT_EQ(h.settings->timeout, milliseconds(3000));
}

TEST(SlurmCommandsTest, HelpNamesTheEnvironmentAndThePolicy) {
  CliHarness h;
  auto r = h.run({"slurm", "prolog", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* needle : {"SLURM_JOB_NODELIST", "SLURMD_NODENAME", "SLURM_NODELIST", "SLURM_JOB_ID",
                             "a down kilnd must not drain the whole cluster", "default 50s"})
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle;
  auto g = h.run({"slurm", "--help"});
  EXPECT_NE(g.out.find("KILN_CONFIG=/etc/kiln/prolog.yaml exec /usr/bin/kilnctl --timeout 10 slurm prolog"),
            std::string::npos) << g.out;
}

}  // namespace
}  // namespace kiln::cli
