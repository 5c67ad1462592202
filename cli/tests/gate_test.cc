// kilnctl gate: exit codes 0/1/2 over scripted run documents, the JUnit file it writes, its
// progress output, and that a timeout leaves the run alone.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/run_fixtures.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;
using std::chrono::seconds;

const std::vector<std::string> kGate = {"gate", "--workflow", "l11-burn-in", "--pods", "prn-b01-p0001",
                                        "--junit", "report.xml"};

std::vector<std::string> gateWith(std::vector<std::string> extra) {
  std::vector<std::string> args = kGate;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(GateTest, AllHostsPassedExitsZeroAndWritesAReportWithoutFailures) {
  CliHarness h;
  h.transport.reply(201, testing::runningRun().dump());
  h.transport.reply(200, testing::runningRun().dump());
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run(gateWith({"--param", "diag_level=4"}));
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 3u);
  EXPECT_EQ(h.transport.requests[0].method, "POST");
  EXPECT_EQ(json::parse(h.transport.requests[0].body),
            (json{{"workflow", "l11-burn-in"}, {"pods", {"prn-b01-p0001"}}, {"params", {{"diag_level", "4"}}}}));
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/workflow-runs/run-7");
  EXPECT_EQ(h.transport.requests[2].pathAndQuery(), "/api/v1/workflow-runs/run-7");
  EXPECT_EQ(h.fs.sleeps, (std::vector<std::chrono::milliseconds>{seconds(10), seconds(10)}));
  EXPECT_EQ(r.out,
            "gate: started run-7 (l11-burn-in)\n"
            "[0:00:00] run-7 running: 2 hosts, 0 passed, 0 failed, 2 running (dcgm-diag 2)\n"
            "[0:00:20] run-7 passed: 2 hosts, 2 passed, 0 failed, 0 running\n"
            "gate: JUnit report written to report.xml\n"
            "run-7 passed: 2 of 2 hosts healthy\n"
            "gate: PASSED\n");
  ASSERT_TRUE(h.fs.written.count("report.xml"));
  const std::string& xml = h.fs.written["report.xml"];
  EXPECT_NE(xml.find("<testsuite name=\"l11-burn-in run-7\" tests=\"8\" failures=\"0\" errors=\"0\" skipped=\"0\""),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"prn-b01-p0001-h01\" name=\"dcgm-diag\" time=\"60.000\"/>"), std::string::npos)
      << xml;
}

TEST(GateTest, AHostFailingACheckExitsOneAndTheReportNamesIt) {
  CliHarness h;
  h.transport.reply(201, testing::runningRun().dump());
  h.transport.reply(200, testing::failedRun().dump());
  auto r = h.run(kGate);
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("[0:00:10] run-7 failed: 2 hosts, 1 passed, 1 failed, 0 running\n"
                       "  FAILED prn-b01-p0001-h02: nvlink-after-g0: NVLink error counters did not grow: gpu 2 link 7: "
                       "crc_flit +14\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run-7 failed: 1 of 2 hosts healthy\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gate: FAILED\n"), std::string::npos);
  const std::string& xml = h.fs.written["report.xml"];
  EXPECT_NE(xml.find("failures=\"2\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"prn-b01-p0001-h02\" name=\"nvlink-after-g0\" time=\"1.500\">\n"
                     "      <failure message=\"NVLink error counters did not grow: gpu 2 link 7: crc_flit +14\">"
                     "check failed: NVLink error counters did not grow: gpu 2 link 7: crc_flit +14\n"),
            std::string::npos) << xml;
  EXPECT_NE(xml.find("<system-out>gpu 2 link 7 crc_flit 14 &lt;&amp;&gt;\n</system-out>"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"prn-b01-p0001-h02\" name=\"host verdict\" time=\"2.800\">\n"
                     "      <failure message=\"nvlink-after-g0: NVLink error counters did not grow: gpu 2 link 7: "
                     "crc_flit +14\">"),
            std::string::npos) << xml;
}

TEST(GateTest, ACancelledRunExitsOne) {
  CliHarness h;
  h.transport.reply(201, testing::runningRun().dump());
  h.transport.reply(200, testing::runDoc("cancelled", json::array({testing::hostDoc(testing::kH1, "cancelled", "", json::array()),
                                                                    testing::hostDoc(testing::kH2, "cancelled", "", json::array())}))
                             .dump());
  auto r = h.run(kGate);
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(h.fs.written["report.xml"].find("<error message=\"cancelled\"/>"), std::string::npos);
}

TEST(GateTest, RunsThatCannotStartExitTwoWithoutPolling) {
  struct Case {
    int status;
    std::string body;
    std::string err_start;
  };
  const std::vector<Case> cases = {
      {422, R"({"error": {"code": "invalid_content", "message": "no workflow 'l11-burn-in'", "details": {"field": "workflow"}}})",
       "kilnctl: no workflow 'l11-burn-in' (HTTP 422 invalid_content)\n  field: workflow\n"},
      {409, R"({"error": {"code": "conflict", "message": "host prn-b01-p0001-h01 is available: burn-in takes incoming hardware", "details": {"host": "prn-b01-p0001-h01"}}})",
       "kilnctl: host prn-b01-p0001-h01 is available: burn-in takes incoming hardware (HTTP 409 conflict)\n"},
      {403, R"({"error": {"code": "forbidden", "message": "needs operator", "details": {}}})",
       "kilnctl: needs operator (HTTP 403 forbidden)\n"},
      {201, "not json", "kilnctl: the server's answer names no run\n"},
  };
  for (const auto& c : cases) {
    CliHarness h;
    h.transport.reply(c.status, c.body);
    auto r = h.run(kGate);
    EXPECT_EQ(r.code, kExitUsage) << c.status;
    EXPECT_EQ(h.transport.requests.size(), 1u);
    EXPECT_EQ(r.err.rfind(c.err_start, 0), 0u) << r.err;
    EXPECT_NE(r.err.find("kilnctl: gate: the l11-burn-in run could not be started\n"), std::string::npos);
    EXPECT_TRUE(h.fs.written.empty());
  }
  CliHarness down;
  down.transport.fail("cannot connect to http://127.0.0.1:8080: Connection refused");
  EXPECT_EQ(down.run(kGate).code, kExitUsage);
}

TEST(GateTest, BadUsageExitsTwoWithoutACall) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"gate", "--pods", "p1"},                                    // no --workflow
           {"gate", "--workflow", "w"},                                  // no targets
           {"gate", "--workflow", "w", "--pods", "p", "--timeout", "3"},  // no unit
           {"gate", "--workflow", "w", "--pods", "p", "--poll-interval", "0s"},
           {"gate", "--workflow", "w", "--pods", "p", "--param", "k"},
       }) {
    CliHarness h;
    auto r = h.run(args);
    EXPECT_EQ(r.code, kExitUsage) << r.err;
    EXPECT_TRUE(h.transport.requests.empty());
  }
}

TEST(GateTest, TimeoutExitsOneLeavesTheRunAndReportsUnfinishedHosts) {
  CliHarness h;
  h.transport.reply(201, testing::runningRun().dump());
  for (int i = 0; i < 20; ++i) h.transport.reply(200, testing::runningRun().dump());
  auto r = h.run(gateWith({"--timeout", "1m", "--poll-interval", "15s"}));
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(h.fs.sleeps, (std::vector<std::chrono::milliseconds>{seconds(15), seconds(15), seconds(15), seconds(15)}));
  ASSERT_EQ(h.transport.requests.size(), 5u);  // the POST and four polls: no cancel
  for (std::size_t i = 1; i < h.transport.requests.size(); ++i) EXPECT_EQ(h.transport.requests[i].method, "GET");
  EXPECT_EQ(r.err,
            "kilnctl: the gate stopped waiting after 1m; run-7 was left running (kilnctl run cancel run-7 stops it)\n");
  const std::string& xml = h.fs.written["report.xml"];
  EXPECT_NE(xml.find("<error message=\"not finished (running, at step dcgm-diag): the gate stopped waiting after 1m; "
                     "run-7 was left running\"/>"),
            std::string::npos) << xml;
  EXPECT_NE(r.out.find("run-7 running: 0 of 2 hosts healthy, 2 unfinished\n"), std::string::npos) << r.out;
}

TEST(GateTest, OnATerminalDrawsAProgressBarAndClearsIt) {
  CliHarness h;
  h.fs.tty = true;
  h.transport.reply(201, testing::runningRun().dump());
  h.transport.reply(200, testing::passedRun().dump());
  auto r = h.run(kGate);
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("\r\033[K[------------------------------] 0/2 done, 0ms\r\033[K[0:00:10] run-7 passed"),
            std::string::npos) << r.out;
}

TEST(GateTest, UnwritableReportFailsTheGate) {
  CliHarness h;
  h.transport.reply(201, testing::passedRun().dump());
  auto r = h.run({"gate", "--workflow", "l11-burn-in", "--hosts", "h1", "--junit", "/readonly/report.xml"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("cannot write /readonly/report.xml"), std::string::npos);
}

TEST(GateTest, JsonPrintsTheFinalRunAndSendsProgressToStderr) {
  CliHarness h;
  h.transport.reply(201, testing::passedRun().dump());
  auto r = h.run({"gate", "--workflow", "l11-burn-in", "--hosts", "h1", "--json"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(json::parse(r.out), testing::passedRun());
  EXPECT_NE(r.err.find("gate: PASSED"), std::string::npos);
}

}  // namespace
}  // namespace kiln::cli
