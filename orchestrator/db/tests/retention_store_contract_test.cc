// The retention store's contract (orchestrator/retention/retention_store.h, issue 33), run
// against retention::testing::FakeRetentionStore and against PostgreSQL alike: what is over and
// old enough goes, oldest first, a batch at a time; a running run, a run that a rollout still
// going names, and an event of a rollout still going stay; audit records are read in id order
// and deleted only through the last one read. The PostgreSQL half also checks what belongs to a
// run goes with it, and that pruned host events leave the hosts-in-service rollup as it was.

#include <gtest/gtest.h>

#include <memory>

#include "orchestrator/db/pg_retention_store.h"
#include "orchestrator/db/tests/contract_support.h"
#include "orchestrator/retention/testing/fake_retention_store.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using retention::Kind;
using std::chrono::hours;

class Harness {
 public:
  virtual ~Harness() = default;
  virtual retention::RetentionStore& store() = 0;
  virtual TimePoint now() = 0;
  // A run of `purpose` ended `age` ago (state passed), or still running; `named`: a rollout not
  // finished names it as a pod's validation run.
  virtual void addRun(const std::string& id, const std::string& purpose, hours age, bool running, bool named) = 0;
  virtual void addHostEvent(const std::string& tag, hours age) = 0;
  virtual void addRolloutEvent(const std::string& tag, hours age, bool rollout_finished) = 0;
  virtual void addKey(const std::string& key, hours age) = 0;
  virtual void addAudit(const std::string& target, hours age) = 0;
  // What is left of a kind, by the id or tag it was added with, sorted.
  virtual std::vector<std::string> left(Kind kind) = 0;
};

class FakeHarness final : public Harness {
 public:
  retention::RetentionStore& store() override { return store_; }
  TimePoint now() override { return clock_.now(); }
  void addRun(const std::string& id, const std::string& purpose, hours age, bool running, bool named) override {
    store_.add({purpose == "pre_job" ? Kind::kPreJobRuns : Kind::kRuns, id, clock_.now() - age, running || named});
  }
  void addHostEvent(const std::string& tag, hours age) override {
    store_.add({Kind::kHostEvents, tag, clock_.now() - age});
  }
  void addRolloutEvent(const std::string& tag, hours age, bool rollout_finished) override {
    store_.add({Kind::kRolloutEvents, tag, clock_.now() - age, !rollout_finished});
  }
  void addKey(const std::string& key, hours age) override {
    store_.add({Kind::kIdempotencyKeys, key, clock_.now() - age});
  }
  void addAudit(const std::string& target, hours age) override {
    store_.add({Kind::kAudit, target, clock_.now() - age, false, 0, "{\"target\":\"" + target + "\"}"});
  }
  std::vector<std::string> left(Kind kind) override {
    auto ids = store_.ids(kind);
    std::sort(ids.begin(), ids.end());
    return ids;
  }

 private:
  FakeClock clock_;
  retention::testing::FakeRetentionStore store_;
};

class PgHarness final : public Harness {
 public:
  PgHarness() {
    contract::insertPod(db_, "s1", "s1-b1", "p1", "catalina");
    contract::insertHost(db_, "p1-h01", "p1", "available");
    db_.query(
        "INSERT INTO workflow_versions (name, hash, yaml, source, created_by) VALUES ('wf', 'h1', '', 'test', 't')");
    db_.query("INSERT INTO bundles (id, name, version, spec, created_by) VALUES ('b1', 'fw', '1', '{}', 't')");
  }
  retention::RetentionStore& store() override { return *store_; }
  TimePoint now() override { return WallClock::now(); }
  void addRun(const std::string& id, const std::string& purpose, hours age, bool running, bool named) override {
    const std::string at = ago(age);
    db_.query(
        "INSERT INTO workflow_runs (id, workflow, workflow_hash, scope, purpose, params, state, created_by,"
        " created_at, finished_at) VALUES ('" +
        id + "', 'wf', 'h1', 'host', '" + purpose + "', '{}', '" + (running ? "running" : "passed") + "', 't', " + at +
        ", " + (running ? "NULL" : at) + ")");
    db_.query("INSERT INTO run_hosts (run_id, host_id, group_key) VALUES ('" + id + "', 'p1-h01', 'p1-h01')");
    db_.query("INSERT INTO run_groups (run_id, group_key, state, done) VALUES ('" + id + "', 'p1-h01', '{}', true)");
    db_.query(
        "INSERT INTO assignments (id, run_id, group_key, host_id, step_id, attempt, type, argv, timeout_ms, parse,"
        " inventory_after, state) VALUES ('" +
        id + ":a', '" + id +
        "', 'p1-h01', 'p1-h01', 's', 1, 'run', '[\"x\"]',"
        " 1000, '', false, 'done')");
    db_.query("INSERT INTO run_step_records (run_id, group_key, host_id, record) VALUES ('" + id +
              "', 'p1-h01', 'p1-h01', '{}')");
    db_.query("INSERT INTO step_live_output (assignment_id) VALUES ('" + id + ":a')");
    if (named) {
      const std::string ro = "ro-" + id;
      db_.query("INSERT INTO rollouts (id, bundle_id, selector, policy, plan, state, created_by) VALUES ('" + ro +
                "', 'b1', '{}', '{}', '{}', 'running', 't')");
      db_.query("INSERT INTO rollout_pods (rollout_id, pod_id, wave, position, phase, validation_run_id) VALUES ('" +
                ro + "', 'p1', 0, 0, 'validating', '" + id + "')");
    }
  }
  void addHostEvent(const std::string& tag, hours age) override {
    // A host's move that the rollup of hosts in service counts (out of service and back).
    db_.query("INSERT INTO host_events (host_id, at, action, from_state, to_state, actor, reason) VALUES ('p1-h01', " +
              ago(age) + ", 'transition', 'available', 'maintenance', 't', '" + tag + "')");
    db_.query("INSERT INTO host_events (host_id, at, action, from_state, to_state, actor, reason) VALUES ('p1-h01', " +
              ago(age) + " + interval '1 minute', 'transition', 'maintenance', 'available', 't', '" + tag + "')");
  }
  void addRolloutEvent(const std::string& tag, hours age, bool rollout_finished) override {
    const std::string ro = "ro-ev-" + tag;
    db_.query("INSERT INTO rollouts (id, bundle_id, selector, policy, plan, state, created_by, finished_at) VALUES ('" +
              ro + "', 'b1', '{}', '{}', '{}', '" + (rollout_finished ? "completed" : "running") + "', 't', " +
              (rollout_finished ? ago(age) : "NULL") + ")");
    db_.query("INSERT INTO rollout_events (rollout_id, at, kind, message) VALUES ('" + ro + "', " + ago(age) +
              ", 'x', '" + tag + "')");
  }
  void addKey(const std::string& key, hours age) override {
    db_.query("INSERT INTO idempotency_keys (key, scope, fingerprint, object_id, created_by, created_at) VALUES ('" +
              key + "', 'rollout', 'f', 'o', 't', " + ago(age) + ")");
  }
  void addAudit(const std::string& target, hours age) override {
    db_.query("INSERT INTO audit_log (at, actor, action, target) VALUES (" + ago(age) + ", 't', 'x.y', '" + target +
              "')");
  }
  std::vector<std::string> left(Kind kind) override {
    std::string sql;
    switch (kind) {
      case Kind::kRuns:
        sql = "SELECT id FROM workflow_runs WHERE purpose <> 'pre_job'";
        break;
      case Kind::kPreJobRuns:
        sql = "SELECT id FROM workflow_runs WHERE purpose = 'pre_job'";
        break;
      // Two rows a tag: each tag once.
      case Kind::kHostEvents:
        sql = "SELECT DISTINCT reason FROM host_events WHERE action = 'transition'";
        break;
      case Kind::kRolloutEvents:
        sql = "SELECT message FROM rollout_events";
        break;
      case Kind::kIdempotencyKeys:
        sql = "SELECT key FROM idempotency_keys";
        break;
      case Kind::kAudit:
        sql = "SELECT target FROM audit_log WHERE action = 'x.y'";
        break;
    }
    const std::string text = db_.query("SELECT coalesce(string_agg(x, ',' ORDER BY x), '') FROM (" + sql + ") t(x)");
    std::vector<std::string> out;
    std::size_t at = 0;
    while (!text.empty() && at <= text.size()) {
      const auto comma = text.find(',', at);
      out.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    return out;
  }
  const kiln::testing::TestDatabase& db() const { return db_; }

 private:
  static std::string ago(hours age) { return "now() - interval '" + std::to_string(age.count()) + " hours'"; }
  kiln::testing::TestDatabase db_;
  std::unique_ptr<retention::RetentionStore> store_ = makePgRetentionStore({db_.url(), 2});
};

using Implementation = contract::Implementation<Harness>;

class RetentionStoreContractTest : public ::testing::TestWithParam<Implementation> {
 protected:
  int prune(Kind kind, hours older_than, int limit = 100) {
    auto n = h_->store().prune(kind, h_->now() - older_than, limit);
    EXPECT_TRUE(n.ok()) << n.error().message;
    return n.ok() ? *n : -1;
  }
  using Ids = std::vector<std::string>;
  std::unique_ptr<Harness> h_ = GetParam().make();
};

TEST_P(RetentionStoreContractTest, FinishedRunsGoOldestFirstByPurposeAndWhatIsRunningOrNamedStays) {
  h_->addRun("r-old", "manual", hours(100), false, false);
  h_->addRun("r-older", "rollout", hours(200), false, false);
  h_->addRun("r-young", "manual", hours(10), false, false);
  h_->addRun("r-running", "burn_in", hours(300), true, false);
  h_->addRun("r-named", "rollout", hours(300), false, true);
  h_->addRun("c-old", "pre_job", hours(100), false, false);
  h_->addRun("c-young", "pre_job", hours(1), false, false);

  EXPECT_EQ(prune(Kind::kRuns, hours(50), 1), 1) << "a batch of one";
  EXPECT_EQ(h_->left(Kind::kRuns), (Ids{"r-named", "r-old", "r-running", "r-young"})) << "the oldest went first";
  EXPECT_EQ(prune(Kind::kRuns, hours(50)), 1);
  EXPECT_EQ(h_->left(Kind::kRuns), (Ids{"r-named", "r-running", "r-young"}));
  EXPECT_EQ(prune(Kind::kRuns, hours(50)), 0);
  EXPECT_EQ(h_->left(Kind::kPreJobRuns), (Ids{"c-old", "c-young"})) << "pre-job checks have their own rule";
  EXPECT_EQ(prune(Kind::kPreJobRuns, hours(50)), 1);
  EXPECT_EQ(h_->left(Kind::kPreJobRuns), Ids{"c-young"});
}

TEST_P(RetentionStoreContractTest, EventsAndKeysGoByAgeAndAnOpenRolloutsEventsStay) {
  h_->addHostEvent("e-old", hours(9000));
  h_->addHostEvent("e-young", hours(5));
  h_->addRolloutEvent("re-old", hours(9000), true);
  h_->addRolloutEvent("re-open", hours(9000), false);
  h_->addRolloutEvent("re-young", hours(5), true);
  h_->addKey("k-old", hours(200));
  h_->addKey("k-young", hours(2));
  EXPECT_GE(prune(Kind::kHostEvents, hours(8760)), 1);
  EXPECT_EQ(h_->left(Kind::kHostEvents), Ids{"e-young"});
  EXPECT_EQ(prune(Kind::kRolloutEvents, hours(8760)), 1);
  EXPECT_EQ(h_->left(Kind::kRolloutEvents), (Ids{"re-open", "re-young"}));
  EXPECT_EQ(prune(Kind::kIdempotencyKeys, hours(168)), 1);
  EXPECT_EQ(h_->left(Kind::kIdempotencyKeys), Ids{"k-young"});
  // The audit log is not pruned this way.
  auto refused = h_->store().prune(Kind::kAudit, h_->now(), 10);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(RetentionStoreContractTest, AuditRecordsAreReadByIdAndDeletedOnlyThroughTheLastRead) {
  h_->addAudit("a1", hours(9000));
  h_->addAudit("a2", hours(9001));
  h_->addAudit("a3", hours(9002));
  h_->addAudit("recent", hours(1));
  const TimePoint before = h_->now() - hours(8760);
  auto first = h_->store().auditBefore(before, 2);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->size(), 2u);
  EXPECT_LT((*first)[0].id, (*first)[1].id);
  EXPECT_NE((*first)[0].json.find("\"a1\""), std::string::npos) << (*first)[0].json;
  auto n = h_->store().deleteAuditThrough(first->back().id, before);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(h_->left(Kind::kAudit), (Ids{"a3", "recent"})) << "only what was read";
  auto rest = h_->store().auditBefore(before, 10);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ(*h_->store().deleteAuditThrough(rest->back().id + 1000, before), 1) << "never a record after `before`";
  EXPECT_EQ(h_->left(Kind::kAudit), Ids{"recent"});
}

KILN_CONTRACT_INSTANTIATE(RetentionStoreContractTest, Harness, FakeHarness, PgHarness);

// PostgreSQL only: what a run holds goes with it, and pruned host events do not move the hosts
// in service that the reliability ledger counts.
TEST(PgRetentionStoreTest, ARunGoesWithEverythingItHeldAndTheServiceRollupStaysAsItWas) {
  PgHarness h;
  h.addRun("r-old", "manual", hours(100), false, false);
  h.addRun("r-keep", "manual", hours(1), false, false);
  h.addHostEvent("e-old", hours(9000));
  const auto& db = h.db();
  EXPECT_EQ(*h.store().prune(Kind::kRuns, h.now() - hours(50), 10), 1);
  for (const char* table : {"assignments", "run_groups", "run_hosts", "run_step_records"})
    EXPECT_EQ(db.query(std::string("SELECT count(*) FROM ") + table + " WHERE run_id = 'r-old'"), "0") << table;
  EXPECT_EQ(db.query("SELECT count(*) FROM step_live_output WHERE assignment_id = 'r-old:a'"), "0");
  EXPECT_EQ(db.query("SELECT count(*) FROM assignments WHERE run_id = 'r-keep'"), "1");

  const std::string rollup = "SELECT sum(net_hosts)::text || '/' || sum(tail_host_us)::text FROM service_days";
  const std::string before = db.query(rollup);
  EXPECT_EQ(*h.store().prune(Kind::kHostEvents, h.now() - hours(8760), 100), 2);
  EXPECT_EQ(db.query(rollup), before) << "the rollup already holds the pruned history";
  EXPECT_NE(db.query("SELECT before FROM retention_horizon WHERE kind = 'host_events'"), "");
  // A rebuild from what is left would lose that history: refused.
  EXPECT_THROW(db.query("SELECT kiln_rebuild_service_days()"), std::exception);
  // A DELETE made by hand is still followed by the rollup.
  h.addHostEvent("e-hand", hours(2));
  const std::string with = db.query(rollup);
  db.query("DELETE FROM host_events WHERE reason = 'e-hand' AND to_state = 'available'");
  EXPECT_NE(db.query(rollup), with);
}

}  // namespace
}  // namespace kiln::db
