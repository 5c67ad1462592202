// reliability report and interruption record | list against a fake transport.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/reliability_view.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;
using Query = std::vector<std::pair<std::string, std::string>>;

// 28 days of 8,000 GPUs in service = 5,376,000 GPU-hours; 28 interruptions = 1 per 8K GPUs per
// day, MTBI 192,000 GPU-hours (docs/FACTS.md arithmetic: the north star is 2 and 96,000).
const char* kReport = R"({"from": "2026-11-04T00:00:00Z", "to": "2026-12-02T00:00:00Z", "days": 28.0,
  "scope": {"site": "prn", "building": "", "platform": ""},
  "gpu_hours": 5376000.0, "interruptions": 28, "candidates": 3, "per_8k_gpus_per_day": 1.0, "mtbi_gpu_hours": 192000.0,
  "north_star": {"per_8k_gpus_per_day": 2.0, "mtbi_gpu_hours": 96000.0},
  "causes": [{"cause": "nvlink_signal_integrity", "count": 14, "share": 0.5}, {"cause": "hbm", "count": 7, "share": 0.25},
             {"cause": "thermal", "count": 7, "share": 0.25}],
  "weekly": [{"week": "2026-11-02T00:00:00Z", "gpu_hours": 1152000.0, "interruptions": 12, "per_8k_gpus_per_day": 2.0,
              "mtbi_gpu_hours": 96000.0},
             {"week": "2026-11-09T00:00:00Z", "gpu_hours": 1344000.0, "interruptions": 0, "per_8k_gpus_per_day": 0.0,
              "mtbi_gpu_hours": null}],
  "lemon_threshold": 2,
  "lemons": [{"host": "prn-b01-p0001-t03", "pod": "prn-b01-p0001", "state": "available", "interruptions": 2, "repairs": 1}]})";

TEST(ReliabilityReportTest, PassesTheWindowScopeAndThreshold) {
  CliHarness h;
  h.transport.reply(200, kReport);
  auto r = h.run({"reliability", "report", "--from", "2026-11-04", "--to", "2026-12-02T00:00:00Z", "--site", "prn",
                  "--building", "b01", "--platform", "clemente", "--lemon-threshold", "3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].method, "GET");
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/reliability");
  EXPECT_EQ(h.transport.requests[0].query, (Query{{"from", "2026-11-04"}, {"to", "2026-12-02T00:00:00Z"}, {"site", "prn"},
                                                  {"building", "b01"}, {"platform", "clemente"}, {"lemon_threshold", "3"}}));
  auto bad = h.run({"reliability", "report", "--lemon-threshold", "many"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_EQ(h.transport.requests.size(), 1u);
}

TEST(ReliabilityReportTest, RendersRatesAgainstTheNorthStarCausesWeeksAndLemons) {
  CliHarness h;
  h.transport.reply(200, kReport);
  auto r = h.run({"reliability", "report"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/reliability");
  EXPECT_EQ(r.out,
            "Reliability of site prn from 2026-11-04T00:00:00Z to 2026-12-02T00:00:00Z (28.0 days)\n"
            "\n"
            "GPU-hours in service:  5,376,000\n"
            "Interruptions:         28 (+3 candidates recorded by Kiln, not yet confirmed)\n"
            "Per 8K GPUs per day:   1.00  meets the north star of 2\n"
            "MTBI:                  192,000 GPU-hours  meets the north star of 96,000\n"
            "\n"
            "Causes:\n"
            "CAUSE                    COUNT  SHARE\n"
            "nvlink_signal_integrity  14     50.0%\n"
            "hbm                      7      25.0%\n"
            "thermal                  7      25.0%\n"
            "\n"
            "Weekly (weeks start Monday, UTC):\n"
            "WEEK        GPU-HOURS  INTERRUPTIONS  PER 8K GPUS/DAY  MTBI (GPU-HOURS)\n"
            "2026-11-02  1,152,000  12             2.00             96,000\n"
            "2026-11-09  1,344,000  0              0.00             -\n"
            "\n"
            "Lemons (interruptions plus repairs above 2): 1\n"
            "HOST               POD            STATE      INTERRUPTIONS  REPAIRS\n"
            "prn-b01-p0001-t03  prn-b01-p0001  available  2              1\n"
            "Send one to quarantine: kilnctl hosts action HOST quarantine --reason \"lemon\"\n");
}

TEST(ReliabilityReportTest, ShowsHowFarFromTheNorthStarAWorseFleetIs) {
  json report = json::parse(kReport);
  report["per_8k_gpus_per_day"] = 12.4;       // the docs/FACTS.md curve, a year before the north star
  report["mtbi_gpu_hours"] = 15483.87;
  report["lemons"] = json::array();
  report["scope"] = {{"site", ""}, {"building", ""}, {"platform", ""}};
  const std::string out = renderReliability(report);
  EXPECT_NE(out.find("Per 8K GPUs per day:   12.40  6.2x the north star of 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("MTBI:                  15,484 GPU-hours  16% of the north star of 96,000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Reliability of the whole fleet from"), std::string::npos) << out;
  EXPECT_NE(out.find("Lemons (interruptions plus repairs above 2): none\n"), std::string::npos) << out;

  report["per_8k_gpus_per_day"] = 14605.5;  // a tiny fleet with one interruption
  report["mtbi_gpu_hours"] = 13.1;
  const std::string tiny = renderReliability(report);
  EXPECT_NE(tiny.find("Per 8K GPUs per day:   14,606  7302.8x the north star of 2\n"), std::string::npos) << tiny;
  EXPECT_NE(tiny.find("MTBI:                  13 GPU-hours  under 1% of the north star of 96,000\n"), std::string::npos) << tiny;

  report["per_8k_gpus_per_day"] = nullptr;
  report["mtbi_gpu_hours"] = nullptr;
  const std::string empty = renderReliability(report);
  EXPECT_NE(empty.find("Per 8K GPUs per day:   - (no GPU-hours in service)\n"), std::string::npos) << empty;
  EXPECT_NE(empty.find("MTBI:                  - (no interruption in the window)\n"), std::string::npos) << empty;
}

TEST(ReliabilityReportTest, GroupsThousands) {
  EXPECT_EQ(groupedNumber(0), "0");
  EXPECT_EQ(groupedNumber(999.4), "999");
  EXPECT_EQ(groupedNumber(96000), "96,000");
  EXPECT_EQ(groupedNumber(1234567.6), "1,234,568");
  EXPECT_EQ(groupedNumber(-4500), "-4,500");
}

TEST(InterruptionRecordTest, PostsTheInterruptionBuiltFromFlags) {
  CliHarness h;
  h.transport.reply(201, R"({"id": "slurm-991", "at": "2026-12-02T10:00:00Z", "cause": "hbm", "created": true})");
  auto r = h.run({"interruption", "record", "--id", "slurm-991", "--at", "2026-12-02T10:00:00Z", "--cause", "hbm", "--hosts",
                  "h1,h2", "--job", "llm-pretrain", "--job-gpus", "16384", "--owner", "sre", "--description", "XID 48"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].method, "POST");
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/interruptions");
  EXPECT_EQ(json::parse(h.transport.requests[0].body), json::parse(R"({"id": "slurm-991", "at": "2026-12-02T10:00:00Z",
    "cause": "hbm", "hosts": ["h1", "h2"], "job": "llm-pretrain", "job_gpus": 16384, "owner": "sre", "description": "XID 48"})"));
  EXPECT_EQ(r.out, "interruption slurm-991 recorded: hbm at 2026-12-02T10:00:00Z\n");

  CliHarness again;
  again.transport.reply(200, R"({"id": "slurm-991", "at": "2026-12-02T10:00:00Z", "cause": "hbm", "created": false})");
  auto a = again.run({"interruption", "record", "--id", "slurm-991", "--at", "2026-12-02T10:00:00Z", "--cause", "hbm", "--pod",
                      "prn-b01-p0001"});
  ASSERT_EQ(a.code, kExitOk) << a.err;
  EXPECT_EQ(json::parse(again.transport.requests[0].body),
            json::parse(R"({"id": "slurm-991", "at": "2026-12-02T10:00:00Z", "cause": "hbm", "pod": "prn-b01-p0001"})"));
  EXPECT_EQ(a.out, "interruption slurm-991 was already recorded (unchanged): hbm at 2026-12-02T10:00:00Z\n");
}

TEST(InterruptionRecordTest, UsageErrorsSendNothing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"interruption", "record", "--at", "2026-12-02T10:00:00Z", "--cause", "hbm", "--pod", "p"}, "kilnctl: missing --id\n"},
      {{"interruption", "record", "--id", "i", "--at", "2026-12-02T10:00:00Z", "--cause", "hbm"},
       "kilnctl: give --hosts or --pod: what the interruption hit\n"},
      {{"interruption", "record", "--id", "i", "--at", "t", "--cause", "hbm", "--hosts", "h1,"},
       "kilnctl: --hosts needs a comma-separated list of host ids, not 'h1,'\n"},
      {{"interruption", "record", "--id", "i", "--at", "t", "--cause", "hbm", "--pod", "p", "--job-gpus", "0"},
       "kilnctl: --job-gpus must be at least 1, not 0\n"},
  };
  for (const auto& [args, first_line] : cases) {
    CliHarness h;
    auto r = h.run(args);
    EXPECT_EQ(r.code, kExitUsage) << first_line;
    EXPECT_TRUE(h.transport.requests.empty());
    EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1), first_line);
  }
}

TEST(InterruptionRecordTest, TheServersFieldErrorsAreShown) {
  CliHarness h;
  h.transport.reply(422, R"({"error": {"code": "invalid_content", "message": "invalid interruption: cause: expected one of hbm, gpu",
    "details": {"fields": [{"path": "cause", "message": "expected one of hbm, gpu"}]}}})");
  auto r = h.run({"interruption", "record", "--id", "i", "--at", "2026-12-02T10:00:00Z", "--cause", "cosmic", "--pod", "p"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err,
            "kilnctl: invalid interruption: cause: expected one of hbm, gpu (HTTP 422 invalid_content)\n"
            "  cause: expected one of hbm, gpu\n");
}

TEST(InterruptionListTest, FiltersAndRendersATable) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [{"id": "kiln-cand-7", "at": "2026-12-01T08:00:00Z", "job": "", "cause": "unknown",
    "owner": "", "description": "allocated host failed", "candidate": true, "hosts": ["h1"], "job_gpus": null, "pod": null}],
    "next_cursor": null})");
  auto r = h.run({"interruption", "list", "--from", "2026-11-01", "--cause", "unknown", "--candidate", "--limit", "50"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/interruptions");
  EXPECT_EQ(h.transport.requests[0].query,
            (Query{{"limit", "50"}, {"from", "2026-11-01"}, {"cause", "unknown"}, {"candidate", "true"}}));
  EXPECT_EQ(r.out,
            "AT                    ID           CAUSE    HOSTS  POD  JOB  JOB_GPUS  CANDIDATE  OWNER  DESCRIPTION\n"
            "2026-12-01T08:00:00Z  kiln-cand-7  unknown  h1     -    -    -         yes        -      allocated host failed\n");
}

// kilnd pages interruptions (issue 19): --all follows next_cursor, and without it the table says
// more follow.
TEST(InterruptionListTest, AllFollowsNextCursor) {
  auto page = [](const std::string& id, const std::string& next) {
    return R"({"items": [{"id": ")" + id + R"(", "at": "2026-12-01T08:00:00Z", "job": "j", "cause": "hbm", "owner": "",
      "description": "", "candidate": false, "hosts": [], "job_gpus": null, "pod": null}], "next_cursor": )" +
           (next.empty() ? std::string("null") : "\"" + next + "\"") + "}";
  };
  CliHarness h;
  h.transport.reply(200, page("i1", "c1"));
  h.transport.reply(200, page("i2", ""));
  auto r = h.run({"interruption", "list", "--all"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 2u);
  EXPECT_EQ(h.transport.requests[1].query, (Query{{"limit", "1000"}, {"cursor", "c1"}}));
  EXPECT_NE(r.out.find("i1"), std::string::npos);
  EXPECT_NE(r.out.find("i2"), std::string::npos);

  CliHarness one;
  one.transport.reply(200, page("i1", "c1"));
  auto first = one.run({"interruption", "list"});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  EXPECT_NE(first.err.find("--cursor c1"), std::string::npos) << first.err;
}

}  // namespace
}  // namespace kiln::cli
