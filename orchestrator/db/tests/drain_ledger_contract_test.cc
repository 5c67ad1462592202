// The drain ledger's contract (orchestrator/scheduler/drain_ledger.h), written once and run
// against the fake the driver's tests use and against PostgreSQL, so the fake cannot drift from
// the SQL: rows by node in byte order, put as an upsert, remove as a no-op for an unknown node,
// and the audit record each write leaves.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "orchestrator/core/testing/fake_audit_log.h"
#include "orchestrator/db/pg_drain_ledger.h"
#include "orchestrator/db/pg_store.h"
#include "orchestrator/db/tests/contract_support.h"
#include "orchestrator/scheduler/testing/fake_drain_ledger.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using scheduler::Drain;

// One implementation under test and where its audit records can be read.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual scheduler::DrainLedger& ledger() = 0;
  virtual Result<core::AuditPage> audit(const core::AuditFilter& filter) = 0;
};

class FakeHarness final : public Harness {
 public:
  scheduler::DrainLedger& ledger() override { return ledger_; }
  Result<core::AuditPage> audit(const core::AuditFilter& filter) override { return audit_.listAudit(filter); }

 private:
  core::FakeClock clock_;
  core::testing::FakeAuditLog audit_{clock_};
  scheduler::testing::FakeDrainLedger ledger_{&audit_};
};

class PgHarness final : public Harness {
 public:
  scheduler::DrainLedger& ledger() override { return *ledger_; }
  Result<core::AuditPage> audit(const core::AuditFilter& filter) override { return store_->listAudit(filter); }

 private:
  kiln::testing::TestDatabase db_;
  std::unique_ptr<scheduler::DrainLedger> ledger_ = makePgDrainLedger({db_.url(), 2});
  std::unique_ptr<core::Store> store_ = makePgStore({db_.url(), 2});
};

using Implementation = contract::Implementation<Harness>;

class DrainLedgerContractTest : public ::testing::TestWithParam<Implementation> {
 protected:
  // Whole seconds: the column keeps microseconds, and the contract is about the rows.
  static TimePoint at(int seconds) { return TimePoint{} + std::chrono::seconds(1'800'000'000 + seconds); }

  std::vector<Drain> rows() {
    auto r = h_->ledger().list();
    EXPECT_TRUE(r.ok()) << r.error();
    return r.ok() ? *r : std::vector<Drain>{};
  }
  std::vector<core::AuditRecord> auditOf(const std::string& node) {
    core::AuditFilter f;
    f.target = node;
    auto page = h_->audit(f);
    EXPECT_TRUE(page.ok()) << page.error();
    return page.ok() ? page->items : std::vector<core::AuditRecord>{};
  }

  std::unique_ptr<Harness> h_ = GetParam().make();
  core::Actor kilnd_{"kilnd", "kilnd"};
};

TEST_P(DrainLedgerContractTest, ListsTheRowsByNodeInByteOrder) {
  EXPECT_TRUE(rows().empty());
  for (const char* node : {"b-node", "a-node", "B-node"})
    ASSERT_TRUE(h_->ledger().put({node, std::string(node) + "-host", "kiln: ro-1", at(0)}, kilnd_).ok());
  std::vector<std::string> nodes;
  for (const auto& d : rows()) nodes.push_back(d.node);
  EXPECT_EQ(nodes, (std::vector<std::string>{"B-node", "a-node", "b-node"}));
}

TEST_P(DrainLedgerContractTest, PutKeepsEveryFieldAndUpsertsTheRowOfANode) {
  const Drain first{"p1-h01", "p1-h01", "kiln: ro-1 fw 1", at(10)};
  ASSERT_TRUE(h_->ledger().put(first, kilnd_).ok());
  EXPECT_EQ(rows(), std::vector<Drain>{first});
  const Drain again{"p1-h01", "p1-h01-new", "kiln: ro-2 fw 2", at(20)};
  ASSERT_TRUE(h_->ledger().put(again, kilnd_).ok());
  EXPECT_EQ(rows(), std::vector<Drain>{again});
}

TEST_P(DrainLedgerContractTest, EachPutLeavesASlurmDrainRecordNamingTheHostAndReason) {
  ASSERT_TRUE(h_->ledger().put({"p1-h01", "host-1", "kiln: ro-1", at(0)}, kilnd_).ok());
  ASSERT_TRUE(h_->ledger().put({"p1-h01", "host-1", "kiln: ro-2", at(1)}, kilnd_).ok());
  auto records = auditOf("p1-h01");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].action, "slurm.drain");
  EXPECT_EQ(records[0].actor, "kilnd");
  EXPECT_EQ(json::parse(records[0].details_json),
            (json{{"host", "host-1"}, {"reason", "kiln: ro-2"}}));  // newest first
  EXPECT_EQ(json::parse(records[1].details_json), (json{{"host", "host-1"}, {"reason", "kiln: ro-1"}}));
}

TEST_P(DrainLedgerContractTest, RemoveDeletesTheRowWithARecordOfTheActionAndWhy) {
  ASSERT_TRUE(h_->ledger().put({"p1-h01", "host-1", "kiln: ro-1", at(0)}, kilnd_).ok());
  ASSERT_TRUE(h_->ledger().put({"p1-h02", "host-2", "kiln: ro-1", at(0)}, kilnd_).ok());
  ASSERT_TRUE(h_->ledger().remove("p1-h01", "slurm.resume", "validated", kilnd_).ok());
  ASSERT_TRUE(h_->ledger().remove("p1-h02", "slurm.release", "an operator drained it", kilnd_).ok());
  EXPECT_TRUE(rows().empty());
  auto one = auditOf("p1-h01");
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].action, "slurm.resume");
  EXPECT_EQ(json::parse(one[0].details_json), (json{{"host", "host-1"}, {"why", "validated"}}));
  auto two = auditOf("p1-h02");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].action, "slurm.release");
  EXPECT_EQ(json::parse(two[0].details_json), (json{{"host", "host-2"}, {"why", "an operator drained it"}}));
}

TEST_P(DrainLedgerContractTest, RemovingANodeWithoutARowChangesNothingAndRecordsNothing) {
  ASSERT_TRUE(h_->ledger().put({"p1-h01", "host-1", "kiln: ro-1", at(0)}, kilnd_).ok());
  EXPECT_TRUE(h_->ledger().remove("p1-h09", "slurm.resume", "validated", kilnd_).ok());
  EXPECT_EQ(rows().size(), 1u);
  EXPECT_TRUE(auditOf("p1-h09").empty());
  ASSERT_TRUE(h_->ledger().remove("p1-h01", "slurm.resume", "validated", kilnd_).ok());
  EXPECT_TRUE(h_->ledger().remove("p1-h01", "slurm.resume", "again", kilnd_).ok());  // a retry
  EXPECT_EQ(auditOf("p1-h01").size(), 2u);
}

KILN_CONTRACT_INSTANTIATE(DrainLedgerContractTest, Harness, FakeHarness, PgHarness);

}  // namespace
}  // namespace kiln::db
