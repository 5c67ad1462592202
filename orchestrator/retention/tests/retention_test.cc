// Issue 33 (bounded on disk): the retention rule, and the sweeper over the fake store.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/clock.h"
#include "common/logger.h"
#include "orchestrator/retention/retention.h"
#include "orchestrator/retention/sweeper.h"
#include "orchestrator/retention/testing/fake_retention_store.h"

namespace kiln::retention {
namespace {

using std::chrono::hours;
using testing::FakeRetentionStore;
constexpr auto kDay = hours(24);

TEST(RetentionPolicyTest, DefaultsAndOverridesAreReadAndSaidBack) {
  auto p = parsePolicy("");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(describe(*p),
            "runs=90d,pre_job_runs=14d,host_events=365d,audit=365d,rollout_events=365d,idempotency_keys=7d");
  p = parsePolicy("pre_job_runs=3d,audit=forever,idempotency_keys=36h");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(describe(*p),
            "runs=90d,pre_job_runs=3d,host_events=365d,audit=forever,rollout_events=365d,idempotency_keys=36h");
}

TEST(RetentionPolicyTest, BadRulesAreRefusedNamingTheItem) {
  const std::pair<const char*, const char*> bad[] = {
      {"runs", "is not KIND=DURATION"},
      {"tokens=30d", "unknown kind 'tokens'"},
      {"runs=90", "expected a duration like 90d"},
      {"runs=-5d", "expected a duration like 90d"},
      {"runs=90days", "expected a duration like 90d"},
      {"runs=30m", "at least 1h"},
      {"runs=0d", "at least 1h"},
      {"runs=90d,runs=30d", "given twice"},
      {"runs=36501d", "at most 36500d"},
      {"runs=99999999999d", "at most 36500d"},
      {"runs=90d,", "is not KIND=DURATION"},
  };
  for (const auto& [spec, want] : bad) {
    auto p = parsePolicy(spec);
    ASSERT_FALSE(p.ok()) << spec;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument) << spec;
    EXPECT_NE(p.error().message.find(want), std::string::npos) << spec << ": " << p.error().message;
  }
}

TEST(RetentionPolicyTest, CutoffsAreNowMinusEachRuleAndTheAuditOnlyWithItsExport) {
  const TimePoint now = TimePoint{} + kDay * 20000;
  auto p = *parsePolicy("host_events=forever");
  auto with = cutoffs(p, now, true);
  EXPECT_EQ(with.at(Kind::kRuns), now - kDay * 90);
  EXPECT_EQ(with.at(Kind::kPreJobRuns), now - kDay * 14);
  EXPECT_EQ(with.at(Kind::kAudit), now - kDay * 365);
  EXPECT_FALSE(with.count(Kind::kHostEvents)) << "kept for ever";
  // The longest rule still gives a cutoff in the past.
  EXPECT_LT(cutoffs(*parsePolicy("runs=36500d"), WallClock::now(), true).at(Kind::kRuns), WallClock::now());
  auto without = cutoffs(p, now, false);
  EXPECT_FALSE(without.count(Kind::kAudit)) << "no export, no audit pruning";
  EXPECT_TRUE(without.count(Kind::kRuns));
}

class RecordingExport final : public AuditExport {
 public:
  Status append(const std::vector<AuditLine>& lines) override {
    if (fail) return Error(ErrorCode::kUnavailable, "disk full");
    for (const auto& l : lines) exported.push_back(l.id);
    return okStatus();
  }
  bool fail = false;
  std::vector<std::int64_t> exported;
};

class SweeperTest : public ::testing::Test {
 protected:
  void add(Kind kind, const std::string& id, std::chrono::hours age, bool kept = false) {
    store_.add({kind, id, clock_.now() - age, kept});
  }
  FakeClock clock_;
  FakeRetentionStore store_;
  RecordingExport export_;
  RecordingLogger log_;
};

TEST_F(SweeperTest, OnlyWhatIsOverAndOldEnoughGoesAndWhatAnOpenRolloutNamesStays) {
  add(Kind::kRuns, "old", kDay * 91);
  add(Kind::kRuns, "young", kDay * 89);
  add(Kind::kRuns, "old-but-named", kDay * 200, /*kept=*/true);
  add(Kind::kPreJobRuns, "check-old", kDay * 15);
  add(Kind::kPreJobRuns, "check-young", kDay * 13);
  add(Kind::kHostEvents, "e-old", kDay * 400);
  add(Kind::kHostEvents, "e-young", kDay * 1);
  add(Kind::kIdempotencyKeys, "k-old", kDay * 8);
  add(Kind::kIdempotencyKeys, "k-young", hours(1));
  Sweeper sweeper(store_, &export_, Policy{}, clock_, log_);
  auto r = sweeper.sweep();
  EXPECT_EQ(r.errors, 0);
  EXPECT_EQ(r.deleted[Kind::kRuns], 1);
  EXPECT_EQ(r.deleted[Kind::kPreJobRuns], 1);
  EXPECT_EQ(store_.ids(Kind::kRuns), (std::vector<std::string>{"old-but-named", "young"}));
  EXPECT_EQ(store_.ids(Kind::kPreJobRuns), std::vector<std::string>{"check-young"});
  EXPECT_EQ(store_.ids(Kind::kHostEvents), std::vector<std::string>{"e-young"});
  EXPECT_EQ(store_.ids(Kind::kIdempotencyKeys), std::vector<std::string>{"k-young"});
  EXPECT_NE(sweeper.metrics().find("kiln_retention_deleted_total{kind=\"runs\"} 1\n"), std::string::npos);
  EXPECT_EQ(log_.count(LogLevel::kInfo, "retention: deleted"), 1);
}

TEST_F(SweeperTest, ASweepTakesSmallBatchesAndLeavesTheRestForTheNext) {
  for (int i = 0; i < 25; ++i) add(Kind::kHostEvents, "e" + std::to_string(i), kDay * (400 + i));
  Sweeper sweeper(store_, &export_, Policy{}, clock_, log_, {.run_batch = 2, .row_batch = 4, .max_batches = 3});
  EXPECT_EQ(sweeper.sweep().deleted[Kind::kHostEvents], 12) << "3 batches of 4";
  EXPECT_EQ(store_.ids(Kind::kHostEvents).size(), 13u);
  // Oldest first: the 12 oldest went.
  EXPECT_EQ(store_.ids(Kind::kHostEvents).front(), "e12");
  sweeper.sweep();
  EXPECT_EQ(sweeper.sweep().deleted[Kind::kHostEvents], 1);
  EXPECT_TRUE(store_.ids(Kind::kHostEvents).empty());
}

TEST_F(SweeperTest, AuditRecordsAreExportedBeforeTheyGoAndAFailedExportDeletesNothing) {
  for (int i = 0; i < 5; ++i) add(Kind::kAudit, "a" + std::to_string(i), kDay * (366 + i));
  add(Kind::kAudit, "recent", kDay * 2);
  Sweeper sweeper(store_, &export_, Policy{}, clock_, log_, {.run_batch = 2, .row_batch = 2, .max_batches = 10});

  export_.fail = true;
  auto r = sweeper.sweep();
  EXPECT_EQ(r.deleted[Kind::kAudit], 0);
  EXPECT_EQ(r.errors, 1);
  EXPECT_EQ(store_.ids(Kind::kAudit).size(), 6u) << "nothing deleted that is not on disk";
  EXPECT_EQ(log_.count(LogLevel::kError, "not exported, none deleted"), 1);

  export_.fail = false;
  r = sweeper.sweep();
  EXPECT_EQ(r.deleted[Kind::kAudit], 5);
  EXPECT_EQ(export_.exported, (std::vector<std::int64_t>{1, 2, 3, 4, 5})) << "each once, by id";
  EXPECT_EQ(store_.ids(Kind::kAudit), std::vector<std::string>{"recent"});
}

TEST_F(SweeperTest, WithoutAnExportTheAuditLogIsKeptWhole) {
  add(Kind::kAudit, "ancient", kDay * 4000);
  Sweeper sweeper(store_, nullptr, Policy{}, clock_, log_);
  EXPECT_FALSE(sweeper.sweep().deleted.count(Kind::kAudit));
  EXPECT_EQ(store_.ids(Kind::kAudit).size(), 1u);
}

TEST_F(SweeperTest, AFailingStoreIsCountedAndTheOtherKindsStillSwept) {
  add(Kind::kRuns, "old", kDay * 100);
  add(Kind::kHostEvents, "e-old", kDay * 400);
  store_.failNext();  // the first call of the sweep (runs) fails
  Sweeper sweeper(store_, &export_, Policy{}, clock_, log_);
  auto r = sweeper.sweep();
  EXPECT_EQ(r.errors, 1);
  EXPECT_TRUE(store_.ids(Kind::kHostEvents).empty()) << "a failing kind does not stop the others";
  EXPECT_NE(sweeper.metrics().find("kiln_retention_errors_total 1\n"), std::string::npos);
  EXPECT_EQ(sweeper.sweep().errors, 0);
  EXPECT_TRUE(store_.ids(Kind::kRuns).empty());
}

TEST(FileAuditExportTest, LinesAreAppendedToTheMonthsFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("kiln-audit-export-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  FakeClock clock(TimePoint{} + std::chrono::seconds(1796677073));  // 2026-12-07
  FileAuditExport out(dir.string(), clock);
  ASSERT_TRUE(out.append({{1, R"({"id":1})"}, {2, R"({"id":2})"}}).ok());
  ASSERT_TRUE(out.append({{3, R"({"id":3})"}}).ok());
  EXPECT_EQ(out.currentFile(), (dir / "audit-2026-12.jsonl").string());
  std::ifstream in(out.currentFile());
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
  std::filesystem::remove_all(dir);
  FileAuditExport nowhere((dir / "missing").string(), clock);
  auto st = nowhere.append({{4, "{}"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("audit export"), std::string::npos);
}

}  // namespace
}  // namespace kiln::retention
