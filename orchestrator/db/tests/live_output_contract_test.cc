// The live output store's contract (orchestrator/runs/live_output.h), written once and run
// against runs::testing::FakeLiveOutputStore and against PostgreSQL, so the fake cannot drift
// from the SQL: who may append, what is kept of each stream, what a read answers, and the sweep
// of finished assignments' output (its durations 0 or an hour, so no test sleeps).

#include <gtest/gtest.h>

#include <memory>

#include "orchestrator/db/pg_live_output.h"
#include "orchestrator/db/tests/contract_support.h"
#include "orchestrator/runs/testing/fake_live_output.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using runs::LiveChunk;

// One implementation under test over assignments a test puts; `keep_after_done` of the
// implementation's options set by the test (the sweep runs on every append).
class Harness {
 public:
  virtual ~Harness() = default;
  virtual runs::LiveOutputStore& store(std::chrono::seconds keep_after_done) = 0;
  // An assignment of run "run-1" on host h1 or h2 (step "burn", attempt 2), added or changed.
  virtual void putAssignment(const std::string& id, const std::string& host, int lease, const std::string& state) = 0;
  // Moves the clock updated_at is stamped with on (PostgreSQL's moves by itself).
  virtual void letTimePass() = 0;
};

class FakeHarness final : public Harness {
 public:
  runs::LiveOutputStore& store(std::chrono::seconds keep) override {
    if (!store_)
      store_ = std::make_unique<runs::testing::FakeLiveOutputStore>(
          clock_, runs::testing::FakeLiveOutputOptions{keep, std::chrono::seconds(0)});
    for (const auto& a : pending_) store_->putAssignment(a);
    pending_.clear();
    return *store_;
  }
  void putAssignment(const std::string& id, const std::string& host, int lease, const std::string& state) override {
    runs::testing::FakeLiveOutputStore::Assignment a{id, "run-1", host, "burn", 2, lease, state};
    if (store_)
      store_->putAssignment(a);
    else
      pending_.push_back(a);
  }
  void letTimePass() override { clock_.advance(std::chrono::seconds(1)); }

 private:
  core::FakeClock clock_;
  std::vector<runs::testing::FakeLiveOutputStore::Assignment> pending_;
  std::unique_ptr<runs::testing::FakeLiveOutputStore> store_;
};

class PgHarness final : public Harness {
 public:
  PgHarness() {
    contract::insertPod(db_, "prn", "prn-b01", "p1", "catalina");
    contract::insertHost(db_, "h1", "p1", "maintenance", 0);
    contract::insertHost(db_, "h2", "p1", "maintenance", 1);
    db_.query(
        "INSERT INTO workflow_versions (name, hash, yaml, source, created_by) VALUES ('burn-in', 'h', '', 'test', "
        "'test')");
    db_.query(
        "INSERT INTO workflow_runs (id, workflow, workflow_hash, scope, purpose, params, state, created_by)"
        " VALUES ('run-1', 'burn-in', 'h', 'pod:p1', 'test', '{}', 'running', 'test')");
  }
  runs::LiveOutputStore& store(std::chrono::seconds keep) override {
    if (!store_) store_ = makePgLiveOutputStore({db_.url(), 2}, {keep, std::chrono::seconds(0)});
    return *store_;
  }
  void putAssignment(const std::string& id, const std::string& host, int lease, const std::string& state) override {
    db_.query(
        "INSERT INTO assignments (id, run_id, group_key, host_id, step_id, attempt, type, argv, timeout_ms, parse,"
        " inventory_after, state, lease) VALUES ('" +
        id + "', 'run-1', 'g', '" + host +
        "', 'burn', 2, 'exec', '[]',"
        " 1000, 'none', false, '" +
        state + "', " + std::to_string(lease) +
        ")"
        " ON CONFLICT (id) DO UPDATE SET host_id = EXCLUDED.host_id, state = EXCLUDED.state, lease = EXCLUDED.lease");
  }
  void letTimePass() override {}

 private:
  kiln::testing::TestDatabase db_;
  std::unique_ptr<runs::LiveOutputStore> store_;
};

using Implementation = contract::Implementation<Harness>;

class LiveOutputContractTest : public ::testing::TestWithParam<Implementation> {
 protected:
  runs::LiveOutputStore& store() { return h_->store(std::chrono::hours(1)); }
  runs::LiveOutput read(const std::string& id) {
    auto r = h_->store(std::chrono::hours(1)).read(id);
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? *r : runs::LiveOutput{};
  }

  std::unique_ptr<Harness> h_ = GetParam().make();
};

TEST_P(LiveOutputContractTest, AnAssignmentWithNothingSentReadsAsItsStepWithEmptyStreams) {
  h_->putAssignment("a-1", "h1", 3, "dispatched");
  runs::LiveOutput o = read("a-1");
  EXPECT_EQ(o.assignment_id, "a-1");
  EXPECT_EQ(o.run_id, "run-1");
  EXPECT_EQ(o.host, "h1");
  EXPECT_EQ(o.step_id, "burn");
  EXPECT_EQ(o.attempt, 2);
  EXPECT_EQ(o.state, "dispatched");
  EXPECT_EQ(o.out, runs::LiveStream{});
  EXPECT_EQ(o.err, runs::LiveStream{});
  EXPECT_FALSE(o.updated_at.has_value());
}

TEST_P(LiveOutputContractTest, AnUnknownAssignmentIsNotFound) {
  auto r = store().read("a-404");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  auto a = store().append("a-404", "h1", 1, LiveChunk{0, "x"}, std::nullopt);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, ErrorCode::kNotFound);
}

TEST_P(LiveOutputContractTest, OnlyTheHoldersCurrentLeaseWhileDispatchedMayAppend) {
  h_->putAssignment("a-1", "h1", 3, "dispatched");
  h_->putAssignment("a-2", "h1", 3, "done");
  h_->putAssignment("a-3", "h1", 3, "pending");
  auto other = store().append("a-1", "h2", 3, LiveChunk{0, "x"}, std::nullopt);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kPermissionDenied);
  auto stale = store().append("a-1", "h1", 2, LiveChunk{0, "x"}, std::nullopt);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ErrorCode::kConflict);
  for (const char* id : {"a-2", "a-3"}) {
    auto over = store().append(id, "h1", 3, LiveChunk{0, "x"}, std::nullopt);
    ASSERT_FALSE(over.ok()) << id;
    EXPECT_EQ(over.error().code, ErrorCode::kConflict) << id;
  }
  for (const char* id : {"a-1", "a-2", "a-3"}) {
    EXPECT_EQ(read(id).out, runs::LiveStream{}) << id << ": a refused append keeps nothing";
    EXPECT_FALSE(read(id).updated_at.has_value()) << id;
  }
}

TEST_P(LiveOutputContractTest, ChunksAppendToEachStreamAndTheAnswerSaysWhereEachEnds) {
  h_->putAssignment("a-1", "h1", 1, "dispatched");
  auto ends = store().append("a-1", "h1", 1, LiveChunk{0, "hello "}, LiveChunk{0, "warn\n"});
  ASSERT_TRUE(ends.ok()) << ends.error();
  EXPECT_EQ(ends->out, 6);
  EXPECT_EQ(ends->err, 5);
  ends = store().append("a-1", "h1", 1, LiveChunk{6, "wörld"}, std::nullopt);
  ASSERT_TRUE(ends.ok()) << ends.error();
  EXPECT_EQ(ends->out, 12);
  EXPECT_EQ(ends->err, 5) << "a stream without a chunk keeps its end";
  runs::LiveOutput o = read("a-1");
  EXPECT_EQ(o.out, (runs::LiveStream{"hello wörld", 0, 12}));
  EXPECT_EQ(o.err, (runs::LiveStream{"warn\n", 0, 5}));
  EXPECT_TRUE(o.updated_at.has_value());
}

TEST_P(LiveOutputContractTest, BytesSentAgainAreSkippedAndAGapStartsTheKeptTextAnew) {
  h_->putAssignment("a-1", "h1", 1, "dispatched");
  ASSERT_TRUE(store().append("a-1", "h1", 1, LiveChunk{0, "abc"}, std::nullopt).ok());
  ASSERT_TRUE(store().append("a-1", "h1", 1, LiveChunk{0, "abcdef"}, std::nullopt).ok());  // a lost answer
  ASSERT_TRUE(store().append("a-1", "h1", 1, LiveChunk{2, "cd"}, std::nullopt).ok());      // nothing new
  EXPECT_EQ(read("a-1").out, (runs::LiveStream{"abcdef", 0, 6}));
  auto ends = store().append("a-1", "h1", 1, LiveChunk{100, "xyz"}, std::nullopt);  // the agent dropped 94 bytes
  ASSERT_TRUE(ends.ok()) << ends.error();
  EXPECT_EQ(ends->out, 103);
  EXPECT_EQ(read("a-1").out, (runs::LiveStream{"xyz", 100, 103}));
}

TEST_P(LiveOutputContractTest, OnlyTheLastKeepBytesOfAStreamAreKept) {
  h_->putAssignment("a-1", "h1", 1, "dispatched");
  const std::string first(runs::kLiveOutputKeep, 'a'), second(1000, 'b');
  ASSERT_TRUE(store().append("a-1", "h1", 1, LiveChunk{0, first}, std::nullopt).ok());
  auto ends = store().append("a-1", "h1", 1, LiveChunk{static_cast<std::int64_t>(first.size()), second}, std::nullopt);
  ASSERT_TRUE(ends.ok()) << ends.error();
  const auto total = static_cast<std::int64_t>(first.size() + second.size());
  EXPECT_EQ(ends->out, total);
  runs::LiveOutput o = read("a-1");
  EXPECT_EQ(o.out.end, total);
  EXPECT_EQ(o.out.start, total - static_cast<std::int64_t>(runs::kLiveOutputKeep));
  EXPECT_EQ(o.out.text, std::string(runs::kLiveOutputKeep - 1000, 'a') + second);
}

TEST_P(LiveOutputContractTest, AFinishedAssignmentsQuietOutputIsSweptOnAnAppendAndARunningOnesIsNot) {
  runs::LiveOutputStore& s = h_->store(std::chrono::seconds(0));
  h_->putAssignment("a-done", "h1", 1, "dispatched");
  h_->putAssignment("a-quiet", "h2", 1, "dispatched");
  h_->putAssignment("a-busy", "h2", 1, "dispatched");
  ASSERT_TRUE(s.append("a-done", "h1", 1, LiveChunk{0, "finished\n"}, std::nullopt).ok());
  ASSERT_TRUE(s.append("a-quiet", "h2", 1, LiveChunk{0, "sleeping\n"}, std::nullopt).ok());
  h_->putAssignment("a-done", "h1", 1, "done");
  h_->letTimePass();
  auto before = s.read("a-done");
  ASSERT_TRUE(before.ok()) << before.error();
  EXPECT_EQ(before->out.text, "finished\n") << "a read sweeps nothing";
  ASSERT_TRUE(s.append("a-busy", "h2", 1, LiveChunk{0, "x"}, std::nullopt).ok());
  auto swept = s.read("a-done");
  ASSERT_TRUE(swept.ok()) << swept.error();
  EXPECT_EQ(swept->state, "done");
  EXPECT_EQ(swept->out, runs::LiveStream{});
  EXPECT_FALSE(swept->updated_at.has_value());
  auto kept = s.read("a-quiet");
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_EQ(kept->out.text, "sleeping\n") << "a dispatched step that prints nothing keeps its output";
}

TEST_P(LiveOutputContractTest, AFinishedAssignmentsOutputStaysReadableForTheKeepTime) {
  runs::LiveOutputStore& s = h_->store(std::chrono::hours(1));
  h_->putAssignment("a-done", "h1", 1, "dispatched");
  h_->putAssignment("a-busy", "h2", 1, "dispatched");
  ASSERT_TRUE(s.append("a-done", "h1", 1, LiveChunk{0, "finished\n"}, std::nullopt).ok());
  h_->putAssignment("a-done", "h1", 1, "done");
  h_->letTimePass();
  ASSERT_TRUE(s.append("a-busy", "h2", 1, LiveChunk{0, "x"}, std::nullopt).ok());
  auto kept = s.read("a-done");
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_EQ(kept->out.text, "finished\n");
  EXPECT_EQ(kept->state, "done");
}

KILN_CONTRACT_INSTANTIATE(LiveOutputContractTest, Harness, FakeHarness, PgHarness);

}  // namespace
}  // namespace kiln::db
