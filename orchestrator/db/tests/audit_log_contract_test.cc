// The audit log's contract (core::AuditLog::audit with core::Store::listAudit and actorNames,
// orchestrator/core/store.h), written once and run against core::testing::FakeAuditLog and
// against PostgreSQL (PgStore), so the fake cannot drift from the SQL: newest first by id, every
// filter, an action prefix whose LIKE wildcards are literal, the keyset, names of actors.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "orchestrator/core/testing/fake_audit_log.h"
#include "orchestrator/db/pg_store.h"
#include "orchestrator/db/tests/contract_support.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;

// One implementation under test, and how a test gives it tokens and lets time pass.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual core::AuditLog& log() = 0;
  virtual Result<core::AuditPage> listAudit(const core::AuditFilter& filter) = 0;
  virtual Result<std::vector<core::ActorName>> actorNames() = 0;
  // A token the store holds, without the audit record a token's creation writes.
  virtual void addToken(const std::string& id, const std::string& name, core::Role role, bool revoked) = 0;
  // Moves the clock the records are stamped with on (PostgreSQL's moves by itself).
  virtual void letTimePass() = 0;
};

class FakeHarness final : public Harness {
 public:
  core::AuditLog& log() override { return log_; }
  Result<core::AuditPage> listAudit(const core::AuditFilter& filter) override { return log_.listAudit(filter); }
  Result<std::vector<core::ActorName>> actorNames() override { return log_.actorNames(); }
  void addToken(const std::string& id, const std::string& name, core::Role role, bool) override {
    log_.addToken(id, name, role);
  }
  void letTimePass() override { clock_.advance(std::chrono::seconds(1)); }

 private:
  core::FakeClock clock_;
  core::testing::FakeAuditLog log_{clock_};
};

class PgHarness final : public Harness {
 public:
  core::AuditLog& log() override { return *store_; }
  Result<core::AuditPage> listAudit(const core::AuditFilter& filter) override { return store_->listAudit(filter); }
  Result<std::vector<core::ActorName>> actorNames() override { return store_->actorNames(); }
  void addToken(const std::string& id, const std::string& name, core::Role role, bool revoked) override {
    const std::string host = role == core::Role::kAgent ? "'" + name + "'" : "NULL";
    db_.query("INSERT INTO tokens (id, secret_hash, role, name, host_id, created_by, revoked_at) VALUES ('" + id +
              "', 'x', '" + std::string(core::roleName(role)) + "', '" + name + "', " + host + ", 'test', " +
              (revoked ? "now()" : "NULL") + ")");
  }
  void letTimePass() override {}

 private:
  kiln::testing::TestDatabase db_;
  std::unique_ptr<core::Store> store_ = makePgStore({db_.url(), 2});
};

using Implementation = contract::Implementation<Harness>;

class AuditLogContractTest : public ::testing::TestWithParam<Implementation> {
 protected:
  void write(const std::string& actor, const std::string& action, const std::string& target,
             const std::string& details = "{}") {
    ASSERT_TRUE(h_->log().audit({actor, actor}, action, target, details).ok());
  }
  std::vector<core::AuditRecord> list(const core::AuditFilter& f) {
    auto page = h_->listAudit(f);
    EXPECT_TRUE(page.ok()) << page.error();
    return page.ok() ? page->items : std::vector<core::AuditRecord>{};
  }
  static std::vector<std::string> targets(const std::vector<core::AuditRecord>& records) {
    std::vector<std::string> out;
    for (const auto& r : records) out.push_back(r.target);
    return out;
  }
  static core::AuditFilter filter(void (*set)(core::AuditFilter&)) {
    core::AuditFilter f;
    set(f);
    return f;
  }

  std::unique_ptr<Harness> h_ = GetParam().make();
};

TEST_P(AuditLogContractTest, ListsNewestFirstByIdWithEveryField) {
  write("tok-1", "rollout.create", "ro-1", R"({"bundle":"fw","pods":2})");
  write("system", "host.transition", "p1-h01", "");
  write("kilnd", "slurm.drain", "p1-h02");
  auto all = list({});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(targets(all), (std::vector<std::string>{"p1-h02", "p1-h01", "ro-1"}));
  EXPECT_GT(all[0].id, all[1].id);
  EXPECT_GT(all[1].id, all[2].id);
  EXPECT_EQ(all[2].actor, "tok-1");
  EXPECT_EQ(all[2].action, "rollout.create");
  EXPECT_EQ(json::parse(all[2].details_json), (json{{"bundle", "fw"}, {"pods", 2}}));
  EXPECT_EQ(json::parse(all[1].details_json), json::object()) << "empty details are an empty object";
  EXPECT_LE(all[2].at, all[0].at);
}

TEST_P(AuditLogContractTest, ActorActionAndTargetMatchExactlyAndTogether) {
  write("tok-1", "rollout.create", "ro-1");
  write("tok-2", "rollout.create", "ro-2");
  write("tok-1", "rollout.pause", "ro-1");
  write("tok-1", "rollout.create", "ro-10");
  EXPECT_EQ(targets(list(filter([](auto& f) { f.actor = "tok-1"; }))),
            (std::vector<std::string>{"ro-10", "ro-1", "ro-1"}));
  EXPECT_EQ(list(filter([](auto& f) { f.actor = "tok"; })).size(), 0u);
  EXPECT_EQ(targets(list(filter([](auto& f) { f.action = "rollout.create"; }))),
            (std::vector<std::string>{"ro-10", "ro-2", "ro-1"}));
  EXPECT_EQ(list(filter([](auto& f) { f.action = "rollout"; })).size(), 0u) << "no dot: an exact action";
  EXPECT_EQ(targets(list(filter([](auto& f) { f.target = "ro-1"; }))).size(), 2u);
  auto both = list(filter([](auto& f) {
    f.actor = "tok-1";
    f.action = "rollout.create";
    f.target = "ro-1";
  }));
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].action, "rollout.create");
}

TEST_P(AuditLogContractTest, AnActionEndingInADotIsAPrefixWhoseWildcardsAreLiteral) {
  write("t", "rollout.create", "a");
  write("t", "rollout.pod.retry", "b");
  write("t", "rollouts.x", "c");
  write("t", "host_.drain", "d");
  write("t", "hostX.drain", "e");
  write("t", "100%.x", "f");
  write("t", "1000.x", "g");
  EXPECT_EQ(targets(list(filter([](auto& f) { f.action = "rollout."; }))), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(targets(list(filter([](auto& f) { f.action = "host_."; }))), std::vector<std::string>{"d"});
  EXPECT_EQ(targets(list(filter([](auto& f) { f.action = "100%."; }))), std::vector<std::string>{"f"});
}

TEST_P(AuditLogContractTest, SinceIsInclusiveAndUntilExclusive) {
  write("t", "a.x", "first");
  h_->letTimePass();
  write("t", "a.x", "second");
  h_->letTimePass();
  write("t", "a.x", "third");
  auto all = list({});
  ASSERT_EQ(all.size(), 3u);
  const TimePoint second = all[1].at;
  ASSERT_LT(all[2].at, second);
  ASSERT_LT(second, all[0].at);
  core::AuditFilter f;
  f.since = second;
  EXPECT_EQ(targets(list(f)), (std::vector<std::string>{"third", "second"}));
  f = {};
  f.until = second;
  EXPECT_EQ(targets(list(f)), std::vector<std::string>{"first"});
  f.since = all[2].at;
  f.until = all[0].at;
  EXPECT_EQ(targets(list(f)), (std::vector<std::string>{"second", "first"}));
}

TEST_P(AuditLogContractTest, LimitAndBeforeIdPageThroughEveryRecordOnce) {
  for (int i = 1; i <= 5; ++i) write("t", "a.x", "r" + std::to_string(i));
  core::AuditFilter f;
  f.limit = 2;
  std::vector<std::string> seen;
  std::vector<bool> more;
  for (int pages = 0; pages < 5; ++pages) {
    auto page = h_->listAudit(f);
    ASSERT_TRUE(page.ok()) << page.error();
    ASSERT_FALSE(page->items.empty());
    for (const auto& r : page->items) seen.push_back(r.target);
    more.push_back(page->more);
    if (!page->more) break;
    f.before_id = page->items.back().id;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"r5", "r4", "r3", "r2", "r1"}));
  EXPECT_EQ(more, (std::vector<bool>{true, true, false}));
  f = {};
  f.limit = 0;  // clamped to 1
  auto one = h_->listAudit(f);
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_EQ(targets(one->items), std::vector<std::string>{"r5"});
  EXPECT_TRUE(one->more);
  f.limit = 5;
  one = h_->listAudit(f);
  ASSERT_TRUE(one.ok()) << one.error();
  EXPECT_FALSE(one->more) << "exactly the limit: nothing older";
}

TEST_P(AuditLogContractTest, AnActorIsNamedByItsTokenElseByItself) {
  h_->addToken("tok-1", "alice", core::Role::kOperator, false);
  h_->addToken("tok-2", "bob", core::Role::kAdmin, true);
  write("tok-1", "a.x", "1");
  write("tok-2", "a.x", "2");
  write("agent:p1-h01", "a.x", "3");
  write("TOK-1", "a.x", "4");
  auto all = list({});
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].actor_name, "alice");
  EXPECT_EQ(all[2].actor_name, "bob") << "a revoked token still names its actions";
  EXPECT_EQ(all[1].actor_name, "agent:p1-h01");
  EXPECT_EQ(all[0].actor_name, "TOK-1") << "token ids match exactly";
}

TEST_P(AuditLogContractTest, ActorNamesAreEveryTokenButAgentsInByteOrder) {
  h_->addToken("tok-b", "bob", core::Role::kOperator, false);
  h_->addToken("tok-B", "Bea", core::Role::kViewer, true);
  h_->addToken("tok-a", "alice", core::Role::kAdmin, false);
  h_->addToken("agent-1", "p1-h01", core::Role::kAgent, false);
  auto names = h_->actorNames();
  ASSERT_TRUE(names.ok()) << names.error();
  std::vector<std::string> got;
  for (const auto& n : *names) got.push_back(n.id + "=" + n.name);
  EXPECT_EQ(got, (std::vector<std::string>{"tok-B=Bea", "tok-a=alice", "tok-b=bob"}));
}

KILN_CONTRACT_INSTANTIATE(AuditLogContractTest, Harness, FakeHarness, PgHarness);

}  // namespace
}  // namespace kiln::db
