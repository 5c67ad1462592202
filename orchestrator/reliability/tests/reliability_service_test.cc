// ReliabilityService over a scripted store: the report's totals, causes, weeks and coverage from
// the ledger's counts, the window and filters it checks, and what record() answers.

#include "orchestrator/reliability/reliability_service.h"

#include <gtest/gtest.h>

namespace kiln::reliability {
namespace {

using nlohmann::json;

TimePoint at(const std::string& iso) {
  auto t = parseTime(iso);
  EXPECT_TRUE(t) << iso;
  return t.value_or(TimePoint{});
}

// Answers data() with `ledger` and list() with `page`, and keeps what it was asked.
class ScriptedStore final : public ReliabilityStore {
 public:
  LedgerData ledger;
  core::Page<Interruption> page;
  std::vector<Interruption> recorded;
  struct ListCall {
    TimePoint from, to;
    std::string cause;
    std::optional<bool> candidate;
  };
  std::vector<ListCall> list_calls;
  int data_calls = 0;

  Result<bool> record(const Interruption& i, const core::Actor&) override {
    for (const auto& r : recorded)
      if (r.id == i.id) return false;
    recorded.push_back(i);
    return true;
  }
  Result<core::Page<Interruption>> list(TimePoint from, TimePoint to, const std::string& cause,
                                        std::optional<bool> candidate, const core::PageRequest&) override {
    list_calls.push_back({from, to, cause, candidate});
    return page;
  }
  Result<LedgerData> data(TimePoint, TimePoint, const Scope&, int) override {
    ++data_calls;
    return ledger;
  }
  Result<std::map<std::string, std::int64_t>> countsByCause() override { return std::map<std::string, std::int64_t>{}; }
};

class ReliabilityServiceTest : public ::testing::Test {
 protected:
  ScriptedStore store_;
  core::FakeClock clock_{at("2026-12-07T00:00:00Z")};
  ReliabilityService service_{store_, clock_, ReliabilityTargets{1.5}};
};

// Two Monday-to-Monday weeks of 10 hosts in service all along (4 GPUs each: 13,440 GPU-hours,
// 6,720 a week): hbm 2 then 1, thermal 1 in the second week, and 2 candidates.
TEST_F(ReliabilityServiceTest, TheReportCountsConfirmedInterruptionsByCauseAndWeekAndOnlyCountsCandidates) {
  store_.ledger.service_level_at_first_day = 10;
  const TimePoint week1 = at("2026-11-23T00:00:00Z"), week2 = at("2026-11-30T00:00:00Z");
  store_.ledger.interruptions = {{week1, "hbm", false, 2}, {week2, "thermal", false, 1}, {week2, "hbm", false, 1},
                                 {week2, "unknown", true, 2}};
  store_.ledger.lemons = {{"b1-p1-h02", "b1-p1", "maintenance", 3, 1}};
  store_.ledger.history_start = at("2026-11-30T00:00:00Z");

  auto r = service_.report("2026-11-23T00:00:00Z", "2026-12-07T00:00:00Z", {"s1", "b1", ""}, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->from, week1);
  EXPECT_EQ(r->to, at("2026-12-07T00:00:00Z"));
  EXPECT_DOUBLE_EQ(r->days, 14);
  EXPECT_EQ(r->scope.building, "b1");
  EXPECT_DOUBLE_EQ(r->total.gpu_hours, 13440);
  EXPECT_EQ(r->total.interruptions, 4);
  EXPECT_EQ(r->candidates, 2);
  // 4 / (13,440 / 24 / 8,000) per 8K GPUs per day; 13,440 / 4 GPU-hours between interruptions.
  ASSERT_TRUE(r->total.per_8k_gpus_per_day && r->total.mtbi_gpu_hours);
  EXPECT_DOUBLE_EQ(*r->total.per_8k_gpus_per_day, 4 / (13440.0 / 24 / 8000));
  EXPECT_DOUBLE_EQ(*r->total.mtbi_gpu_hours, 3360);
  ASSERT_EQ(r->causes.size(), 2u);  // the candidates' cause is not among them
  EXPECT_EQ(r->causes[0].cause, "hbm");
  EXPECT_EQ(r->causes[0].count, 3);
  EXPECT_DOUBLE_EQ(r->causes[0].share, 0.75);
  EXPECT_EQ(r->causes[1].cause, "thermal");
  ASSERT_EQ(r->weekly.size(), 2u);
  EXPECT_EQ(r->weekly[0].start, week1);
  EXPECT_DOUBLE_EQ(r->weekly[0].rates.gpu_hours, 6720);
  EXPECT_EQ(r->weekly[0].rates.interruptions, 2);
  EXPECT_EQ(r->weekly[1].start, week2);
  EXPECT_EQ(r->weekly[1].rates.interruptions, 2);
  // The history started halfway: the rates are over its 7 days.
  EXPECT_EQ(r->history_start, week2);
  EXPECT_DOUBLE_EQ(r->covered_days, 7);
  EXPECT_EQ(r->lemon_threshold, 2);
  ASSERT_EQ(r->lemons.size(), 1u);
  EXPECT_EQ(r->lemons[0].host, "b1-p1-h02");
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

TEST_F(ReliabilityServiceTest, ABadWindowIsRefusedBeforeTheStoreIsAsked) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"2026-12-02", "2026-12-01"}, {"yesterday", ""}, {"", "tomorrow"}, {"2020-01-01", "2026-01-01"}}) {
    auto r = service_.report(from, to, {}, 2);
    ASSERT_FALSE(r.ok()) << from << " " << to;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << from << " " << to;
  }
  EXPECT_EQ(store_.data_calls, 0);
}

TEST_F(ReliabilityServiceTest, TheListPassesTheWindowAndFiltersAndAnswersTheStoresPage) {
  Interruption i;
  i.id = "inc-1";
  store_.page.items = {i};
  store_.page.next_cursor = "1.inc-1";
  auto page = service_.list("2026-11-01", "2026-12-01", "hbm", "true", {"", 10});
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].id, "inc-1");
  EXPECT_EQ(page->next_cursor, "1.inc-1");
  ASSERT_EQ(store_.list_calls.size(), 1u);
  EXPECT_EQ(store_.list_calls[0].from, at("2026-11-01"));
  EXPECT_EQ(store_.list_calls[0].to, at("2026-12-01"));
  EXPECT_EQ(store_.list_calls[0].cause, "hbm");
  EXPECT_EQ(store_.list_calls[0].candidate, true);

  ASSERT_TRUE(service_.list("", "", "", "", {"", 10}).ok());
  EXPECT_FALSE(store_.list_calls[1].candidate.has_value());  // both
  EXPECT_EQ(service_.list("", "", "", "maybe", {"", 10}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(service_.list("", "", "cosmic_rays", "", {"", 10}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store_.list_calls.size(), 2u);
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
  EXPECT_EQ(store_.recorded.size(), 1u);
}

}  // namespace
}  // namespace kiln::reliability
