// The reliability answers' shapes (reliability_views.h): the JSON the routes send for a recorded
// interruption, a page of interruptions and the report, field by field as api/openapi.yaml
// names them.

#include "orchestrator/api/reliability_views.h"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

using nlohmann::json;
using reliability::Interruption;

core::TimePoint at(const std::string& iso) {
  auto t = reliability::parseTime(iso);
  EXPECT_TRUE(t) << iso;
  return t.value_or(core::TimePoint{});
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, _] : j.items()) out.insert(k);
  return out;
}

Interruption onTwoHosts() {
  Interruption i;
  i.id = "inc-7";
  i.at = at("2026-12-02T10:00:00Z");
  i.job = "train-42";
  i.job_gpus = 512;
  i.hosts = {"b1-p1-h02", "b1-p1-h01"};  // as given: the answer does not reorder them
  i.cause = "hbm";
  i.owner = "sre";
  i.description = "ECC storm";
  return i;
}

TEST(ReliabilityViewsTest, ARecordedInterruptionHasEveryFieldAndCreatedButNoCandidate) {
  reliability::RecordOutcome r{onTwoHosts(), true};
  const json j = toJson(r);
  EXPECT_EQ(keys(j), (std::set<std::string>{"id", "at", "job", "job_gpus", "hosts", "pod", "cause", "owner", "description",
                                            "created"}));
  EXPECT_EQ(j["id"], "inc-7");
  EXPECT_EQ(j["at"], "2026-12-02T10:00:00Z");
  EXPECT_EQ(j["job"], "train-42");
  EXPECT_EQ(j["job_gpus"], 512);
  EXPECT_EQ(j["hosts"], (json{"b1-p1-h02", "b1-p1-h01"}));
  EXPECT_TRUE(j["pod"].is_null());  // none given
  EXPECT_EQ(j["cause"], "hbm");
  EXPECT_EQ(j["owner"], "sre");
  EXPECT_EQ(j["description"], "ECC storm");
  EXPECT_EQ(j["created"], true);

  r.created = false;  // a retry
  r.interruption.pod = "b1-p1";
  r.interruption.job_gpus.reset();
  const json k = toJson(r);
  EXPECT_EQ(k["created"], false);
  EXPECT_EQ(k["pod"], "b1-p1");
  EXPECT_TRUE(k["job_gpus"].is_null());
}

TEST(ReliabilityViewsTest, AListPageHasItsInterruptionsWithCandidateAndTheNextCursor) {
  core::Page<Interruption> page;
  page.items.push_back(onTwoHosts());
  Interruption candidate;
  candidate.id = "kiln-b1-p1-h03-1";
  candidate.at = at("2026-12-01T08:30:00Z");
  candidate.hosts = {"b1-p1-h03"};
  candidate.cause = "unknown";
  candidate.candidate = true;
  page.items.push_back(candidate);
  page.next_cursor = "1796113800000000.kiln-b1-p1-h03-1";
  const json j = interruptionListJson(page);
  EXPECT_EQ(keys(j), (std::set<std::string>{"items", "next_cursor"}));
  EXPECT_EQ(j["next_cursor"], "1796113800000000.kiln-b1-p1-h03-1");
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(keys(j["items"][0]), (std::set<std::string>{"id", "at", "job", "job_gpus", "hosts", "pod", "cause", "owner",
                                                        "description", "candidate"}));
  EXPECT_EQ(j["items"][0]["id"], "inc-7");
  EXPECT_EQ(j["items"][0]["candidate"], false);
  EXPECT_EQ(j["items"][1]["candidate"], true);
  EXPECT_EQ(j["items"][1]["at"], "2026-12-01T08:30:00Z");
  EXPECT_EQ(j["items"][1]["job"], "");
  EXPECT_TRUE(j["items"][1]["job_gpus"].is_null());
  EXPECT_TRUE(j["items"][1]["pod"].is_null());

  page.next_cursor.reset();  // the last page
  EXPECT_TRUE(interruptionListJson(page)["next_cursor"].is_null());
  EXPECT_EQ(interruptionListJson({})["items"], json::array());
}

// Two weeks of a building: three confirmed interruptions in the second week, one candidate, one
// lemon; the history started inside the window.
reliability::ReliabilityReport twoWeeks() {
  reliability::ReliabilityReport r;
  r.from = at("2026-11-23T00:00:00Z");
  r.to = at("2026-12-07T00:00:00Z");
  r.days = 14;
  r.scope = {"s1", "b1", "catalina"};
  r.total = reliability::rates(96000, 3);
  r.candidates = 1;
  r.history_start = at("2026-11-24T06:00:00Z");
  r.covered_days = 12.75;
  r.targets.per_8k_gpus_per_day = 1.5;
  r.causes = {{"hbm", 2, 2.0 / 3}, {"thermal", 1, 1.0 / 3}};
  r.weekly = {{at("2026-11-23T00:00:00Z"), reliability::rates(40000, 0)},
              {at("2026-11-30T00:00:00Z"), reliability::rates(56000, 3)}};
  r.lemon_threshold = 2;
  r.lemons = {{"b1-p1-h02", "b1-p1", "maintenance", 2, 1}};
  return r;
}

TEST(ReliabilityViewsTest, TheReportHasItsWindowScopeRatesTargetCausesWeeksAndLemons) {
  const json j = toJson(twoWeeks());
  EXPECT_EQ(keys(j), (std::set<std::string>{"from", "to", "days", "scope", "gpu_hours", "interruptions", "candidates",
                                            "per_8k_gpus_per_day", "mtbi_gpu_hours", "history_start", "covered_days",
                                            "north_star", "causes", "weekly", "lemon_threshold", "lemons"}));
  EXPECT_EQ(j["from"], "2026-11-23T00:00:00Z");
  EXPECT_EQ(j["to"], "2026-12-07T00:00:00Z");
  EXPECT_EQ(j["days"], 14.0);
  EXPECT_EQ(j["scope"], (json{{"site", "s1"}, {"building", "b1"}, {"platform", "catalina"}}));
  EXPECT_EQ(j["gpu_hours"], 96000.0);
  EXPECT_EQ(j["interruptions"], 3);
  EXPECT_EQ(j["candidates"], 1);
  // 3 / (96,000 / 24 / 8,000) = 6 per 8K GPUs per day; 96,000 / 3 GPU-hours between them.
  EXPECT_DOUBLE_EQ(j["per_8k_gpus_per_day"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(j["mtbi_gpu_hours"].get<double>(), 32000.0);
  EXPECT_EQ(j["history_start"], "2026-11-24T06:00:00Z");
  EXPECT_EQ(j["covered_days"], 12.75);
  // The configured target, and the same as an MTBI: 8,000 x 24 / 1.5.
  EXPECT_EQ(j["north_star"], (json{{"per_8k_gpus_per_day", 1.5}, {"mtbi_gpu_hours", 128000.0}}));
  ASSERT_EQ(j["causes"].size(), 2u);
  EXPECT_EQ(j["causes"][0], (json{{"cause", "hbm"}, {"count", 2}, {"share", 2.0 / 3}}));
  EXPECT_EQ(j["causes"][1]["cause"], "thermal");
  ASSERT_EQ(j["weekly"].size(), 2u);
  // A week without interruptions has a rate of 0 but no MTBI.
  EXPECT_EQ(j["weekly"][0], (json{{"week", "2026-11-23T00:00:00Z"}, {"gpu_hours", 40000.0}, {"interruptions", 0},
                                  {"per_8k_gpus_per_day", 0.0}, {"mtbi_gpu_hours", nullptr}}));
  EXPECT_EQ(j["weekly"][1]["week"], "2026-11-30T00:00:00Z");
  EXPECT_EQ(j["weekly"][1]["interruptions"], 3);
  EXPECT_DOUBLE_EQ(j["weekly"][1]["mtbi_gpu_hours"].get<double>(), 56000.0 / 3);
  EXPECT_EQ(j["lemon_threshold"], 2);
  EXPECT_EQ(j["lemons"], (json::array({{{"host", "b1-p1-h02"}, {"pod", "b1-p1"}, {"state", "maintenance"},
                                         {"interruptions", 2}, {"repairs", 1}}})));
}

TEST(ReliabilityViewsTest, AScopeWithoutHistoryHasNullRatesAndHistoryStart) {
  reliability::ReliabilityReport r = twoWeeks();
  r.total = reliability::rates(0, 0);
  r.history_start.reset();
  r.covered_days = 0;
  r.causes.clear();
  r.weekly.clear();
  r.lemons.clear();
  const json j = toJson(r);
  EXPECT_TRUE(j["per_8k_gpus_per_day"].is_null());
  EXPECT_TRUE(j["mtbi_gpu_hours"].is_null());
  EXPECT_TRUE(j["history_start"].is_null());
  EXPECT_EQ(j["covered_days"], 0.0);
  EXPECT_EQ(j["gpu_hours"], 0.0);
  EXPECT_EQ(j["causes"], json::array());
  EXPECT_EQ(j["weekly"], json::array());
  EXPECT_EQ(j["lemons"], json::array());
}

}  // namespace
}  // namespace kiln::api
