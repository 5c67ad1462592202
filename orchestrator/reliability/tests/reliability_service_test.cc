// ReliabilityService over the in-memory ledger (reliability/testing): the report's totals, causes,
// weeks and coverage from the ledger's hosts in service and interruptions, the window and filters
// it checks, and what record() answers.

#include "orchestrator/reliability/reliability_service.h"

#include <gtest/gtest.h>

#include "orchestrator/reliability/testing/fake_reliability_store.h"

namespace kiln::reliability {
namespace {

using nlohmann::json;

TimePoint at(const std::string& iso) {
  auto t = parseTime(iso);
  EXPECT_TRUE(t) << iso;
  return t.value_or(TimePoint{});
}

class ReliabilityServiceTest : public ::testing::Test {
 protected:
  // Pod b1-p1 of site s1: ten hosts, b1-p1-h01..h10.
  void SetUp() override {
    store_.addPod("b1-p1", "s1", "b1", "catalina");
    for (int h = 1; h <= 10; ++h) store_.addHost(host(h), "b1-p1", h == 2 ? "maintenance" : "available");
  }
  static std::string host(int n) { return std::string("b1-p1-h") + (n < 10 ? "0" : "") + std::to_string(n); }
  void record(const std::string& id, const std::string& when, const std::string& cause, int on) {
    Interruption i;
    i.id = id;
    i.at = at(when);
    i.cause = cause;
    i.hosts = {host(on)};
    auto r = store_.record(i, {"t-1", "sre"});
    ASSERT_TRUE(r.ok()) << r.error();
  }
  void candidate(const std::string& id, const std::string& when, const std::string& cause, int on) {
    Interruption i;
    i.id = id;
    i.at = at(when);
    i.cause = cause;
    i.hosts = {host(on)};
    store_.addCandidate(i);
  }

  testing::FakeReliabilityStore store_;
  core::FakeClock clock_{at("2026-12-07T00:00:00Z")};
  ReliabilityService service_{store_, clock_, ReliabilityTargets{1.5}};
};

// Two Monday-to-Monday weeks; 10 hosts enter service when the second starts (4 GPUs each: 6,720
// GPU-hours, all in the second week): hbm 2 then 1, thermal 1 in the second week, and 2
// candidates; b1-p1-h02 had three of them and a repair.
TEST_F(ReliabilityServiceTest, TheReportCountsConfirmedInterruptionsByCauseAndWeekAndOnlyCountsCandidates) {
  const TimePoint week1 = at("2026-11-23T00:00:00Z"), week2 = at("2026-11-30T00:00:00Z");
  for (int h = 1; h <= 10; ++h) store_.addHostEvent(host(h), week2, "validate", "validating", "available");
  store_.addHostEvent(host(2), at("2026-12-01T00:00:00Z"), "repair", "failed", "repair");
  record("inc-1", "2026-11-24T10:00:00Z", "hbm", 2);
  record("inc-2", "2026-11-25T10:00:00Z", "hbm", 2);
  record("inc-3", "2026-11-30T10:00:00Z", "thermal", 2);
  record("inc-4", "2026-12-01T10:00:00Z", "hbm", 3);
  candidate("cand-1", "2026-12-02T10:00:00Z", "unknown", 4);
  candidate("cand-2", "2026-12-03T10:00:00Z", "unknown", 5);

  auto r = service_.report("2026-11-23T00:00:00Z", "2026-12-07T00:00:00Z", {"s1", "b1", ""}, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->from, week1);
  EXPECT_EQ(r->to, at("2026-12-07T00:00:00Z"));
  EXPECT_DOUBLE_EQ(r->days, 14);
  EXPECT_EQ(r->scope.building, "b1");
  EXPECT_DOUBLE_EQ(r->total.gpu_hours, 6720);
  EXPECT_EQ(r->total.interruptions, 4);
  EXPECT_EQ(r->candidates, 2);
  // 4 / (6,720 / 24 / 8,000) per 8K GPUs per day; 6,720 / 4 GPU-hours between interruptions.
  ASSERT_TRUE(r->total.per_8k_gpus_per_day && r->total.mtbi_gpu_hours);
  EXPECT_DOUBLE_EQ(*r->total.per_8k_gpus_per_day, 4 / (6720.0 / 24 / 8000));
  EXPECT_DOUBLE_EQ(*r->total.mtbi_gpu_hours, 1680);
  ASSERT_EQ(r->causes.size(), 2u);  // the candidates' cause is not among them
  EXPECT_EQ(r->causes[0].cause, "hbm");
  EXPECT_EQ(r->causes[0].count, 3);
  EXPECT_DOUBLE_EQ(r->causes[0].share, 0.75);
  EXPECT_EQ(r->causes[1].cause, "thermal");
  ASSERT_EQ(r->weekly.size(), 2u);
  EXPECT_EQ(r->weekly[0].start, week1);
  EXPECT_DOUBLE_EQ(r->weekly[0].rates.gpu_hours, 0);
  EXPECT_EQ(r->weekly[0].rates.interruptions, 2);
  EXPECT_FALSE(r->weekly[0].rates.per_8k_gpus_per_day);
  EXPECT_EQ(r->weekly[1].start, week2);
  EXPECT_DOUBLE_EQ(r->weekly[1].rates.gpu_hours, 6720);
  EXPECT_EQ(r->weekly[1].rates.interruptions, 2);
  // The history started halfway: the rates are over its 7 days.
  EXPECT_EQ(r->history_start, week2);
  EXPECT_DOUBLE_EQ(r->covered_days, 7);
  EXPECT_EQ(r->lemon_threshold, 2);
  ASSERT_EQ(r->lemons.size(), 1u);
  EXPECT_EQ(r->lemons[0].host, "b1-p1-h02");
  EXPECT_EQ(r->lemons[0].state, "maintenance");
  EXPECT_EQ(r->lemons[0].interruptions, 3);
  EXPECT_EQ(r->lemons[0].repairs, 1);
  EXPECT_DOUBLE_EQ(r->targets.per_8k_gpus_per_day, 1.5);
}

TEST_F(ReliabilityServiceTest, WithoutHistoryOrInterruptionsTheReportHasNoRatesAndCoversNothing) {
  auto r = service_.report("", "", {}, 2);  // the last 28 days
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->to, clock_.now());
  EXPECT_DOUBLE_EQ(r->days, 28);
  EXPECT_EQ(r->total.interruptions, 0);
  EXPECT_FALSE(r->total.per_8k_gpus_per_day);
  EXPECT_FALSE(r->total.mtbi_gpu_hours);
  EXPECT_FALSE(r->history_start);
  EXPECT_EQ(r->covered_days, 0);
  EXPECT_TRUE(r->causes.empty());
  EXPECT_EQ(r->weekly.size(), 4u);  // every week the window touches, at zero: Mondays Nov 9 to Nov 30
}

TEST_F(ReliabilityServiceTest, ABadWindowIsRefused) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"2026-12-02", "2026-12-01"}, {"yesterday", ""}, {"", "tomorrow"}, {"2020-01-01", "2026-01-01"}}) {
    auto r = service_.report(from, to, {}, 2);
    ASSERT_FALSE(r.ok()) << from << " " << to;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << from << " " << to;
  }
}

TEST_F(ReliabilityServiceTest, TheListPassesTheWindowAndFiltersAndAnswersTheStoresPage) {
  record("inc-1", "2026-11-10T00:00:00Z", "hbm", 1);
  candidate("cand-1", "2026-11-01T00:00:00Z", "hbm", 1);
  candidate("cand-2", "2026-11-20T00:00:00Z", "hbm", 1);
  candidate("cand-3", "2026-11-21T00:00:00Z", "thermal", 1);
  candidate("cand-4", "2026-12-01T00:00:00Z", "hbm", 1);  // the window's end
  auto page = service_.list("2026-11-01", "2026-12-01", "hbm", "true", {"", 1});
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].id, "cand-2");
  ASSERT_TRUE(page->next_cursor.has_value());
  page = service_.list("2026-11-01", "2026-12-01", "hbm", "true", {*page->next_cursor, 1});
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].id, "cand-1");
  EXPECT_FALSE(page->next_cursor.has_value());

  auto both = service_.list("", "", "", "", {"", 10});  // the last 28 days, either flag
  ASSERT_TRUE(both.ok()) << both.error();
  std::vector<std::string> ids;
  for (const auto& i : both->items) ids.push_back(i.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"cand-4", "cand-3", "cand-2", "inc-1"}));
  EXPECT_EQ(service_.list("", "", "", "maybe", {"", 10}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(service_.list("", "", "cosmic_rays", "", {"", 10}).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(ReliabilityServiceTest, RecordAnswersTheDecodedInterruptionAndWhetherItWasNew) {
  const json body = {{"id", "slurm-1"}, {"at", "2026-12-02T10:00:00Z"}, {"hosts", {"b1-p1-h01"}}, {"cause", "gpu"}};
  const core::Actor sre{"t-1", "sre"};
  auto first = service_.record(body, sre);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(first->created);
  EXPECT_EQ(first->interruption.id, "slurm-1");
  EXPECT_EQ(first->interruption.at, at("2026-12-02T10:00:00Z"));
  EXPECT_EQ(first->interruption.hosts, std::vector<std::string>{"b1-p1-h01"});
  auto again = service_.record(body, sre);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(service_.record(json{{"id", "x"}}, sre).error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(store_.interruptions().size(), 1u);
}

}  // namespace
}  // namespace kiln::reliability
