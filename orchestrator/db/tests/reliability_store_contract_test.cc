// The reliability ledger's contract (orchestrator/reliability/reliability_service.h), written
// once and run against reliability::testing::FakeReliabilityStore and against PostgreSQL, so the
// fake cannot drift from the SQL: record's answers and audit record, the list's order, filters
// and keyset, the counts by cause, and what data() gives a report (interruptions by week, cause
// and flag in a scope, lemons, hosts in service rolled up by day and hour, the history's start).

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "orchestrator/core/testing/fake_audit_log.h"
#include "orchestrator/db/pg_reliability_store.h"
#include "orchestrator/db/pg_store.h"
#include "orchestrator/db/tests/contract_support.h"
#include "orchestrator/reliability/testing/fake_reliability_store.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using reliability::Interruption;
using reliability::LedgerData;

TimePoint at(const std::string& iso) {
  auto t = reliability::parseTime(iso);
  EXPECT_TRUE(t) << iso;
  return t.value_or(TimePoint{});
}

// One implementation under test, over a fleet and host events a test gives it.
class Harness {
 public:
  virtual ~Harness() = default;
  virtual reliability::ReliabilityStore& store() = 0;
  virtual Result<core::AuditPage> audit(const core::AuditFilter& filter) = 0;
  virtual void addPod(const std::string& id, const std::string& site, const std::string& building,
                      const std::string& platform) = 0;
  virtual void addHost(const std::string& id, const std::string& pod, const std::string& state) = 0;
  // A host_events row ("" states: none).
  virtual void addHostEvent(const std::string& host, TimePoint when, const std::string& action,
                            const std::string& from_state, const std::string& to_state) = 0;
  // An interruption candidate as Kiln records one (not through record()).
  virtual void addCandidate(const Interruption& i) = 0;
};

class FakeHarness final : public Harness {
 public:
  reliability::ReliabilityStore& store() override { return store_; }
  Result<core::AuditPage> audit(const core::AuditFilter& filter) override { return audit_.listAudit(filter); }
  void addPod(const std::string& id, const std::string& site, const std::string& building,
              const std::string& platform) override {
    store_.addPod(id, site, building, platform);
  }
  void addHost(const std::string& id, const std::string& pod, const std::string& state) override {
    store_.addHost(id, pod, state);
  }
  void addHostEvent(const std::string& host, TimePoint when, const std::string& action, const std::string& from_state,
                    const std::string& to_state) override {
    store_.addHostEvent(host, when, action, from_state, to_state);
  }
  void addCandidate(const Interruption& i) override { store_.addCandidate(i); }

 private:
  core::FakeClock clock_;
  core::testing::FakeAuditLog audit_{clock_};
  reliability::testing::FakeReliabilityStore store_{&audit_};
};

class PgHarness final : public Harness {
 public:
  reliability::ReliabilityStore& store() override { return *store_; }
  Result<core::AuditPage> audit(const core::AuditFilter& filter) override { return fleet_->listAudit(filter); }
  void addPod(const std::string& id, const std::string& site, const std::string& building,
              const std::string& platform) override {
    contract::insertPod(db_, site, building, id, platform);
  }
  void addHost(const std::string& id, const std::string& pod, const std::string& state) override {
    contract::insertHost(db_, id, pod, state, tray_++);
  }
  void addHostEvent(const std::string& host, TimePoint when, const std::string& action, const std::string& from_state,
                    const std::string& to_state) override {
    const std::string from = from_state.empty() ? "NULL" : "'" + from_state + "'";
    db_.query("INSERT INTO host_events (host_id, at, action, from_state, to_state, actor) VALUES ('" + host +
              "', to_timestamp(" + std::to_string(epoch(when)) + "), '" + action + "', " + from + ", '" + to_state +
              "', 'test')");
  }
  void addCandidate(const Interruption& i) override {
    db_.query("INSERT INTO interruptions (id, at, pod, cause, candidate, created_by) VALUES ('" + i.id +
              "', to_timestamp(" + std::to_string(epoch(i.at)) + "), " + (i.pod.empty() ? "NULL" : "'" + i.pod + "'") +
              ", '" + i.cause + "', true, 'system')");
    for (const auto& h : i.hosts)
      db_.query("INSERT INTO interruption_hosts (interruption_id, host_id) VALUES ('" + i.id + "', '" + h + "')");
  }

 private:
  static std::int64_t epoch(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  }

  kiln::testing::TestDatabase db_;
  std::unique_ptr<reliability::ReliabilityStore> store_ = makePgReliabilityStore({db_.url(), 2});
  std::unique_ptr<core::Store> fleet_ = makePgStore({db_.url(), 2});
  int tray_ = 0;
};

using Implementation = contract::Implementation<Harness>;

class ReliabilityStoreContractTest : public ::testing::TestWithParam<Implementation> {
 protected:
  // Two sites; b1 catalina and clemente pods, b2 one catalina pod.
  void SetUp() override {
    h_->addPod("b1-p1", "s1", "b1", "catalina");
    h_->addPod("b1-p2", "s1", "b1", "clemente");
    h_->addPod("b2-p1", "s2", "b2", "catalina");
    for (const char* pod : {"b1-p1", "b1-p2", "b2-p1"})
      for (const char* n : {"-h01", "-h02"}) h_->addHost(std::string(pod) + n, pod, "available");
  }

  static Interruption interruption(const std::string& id, const std::string& when, const std::string& cause,
                                   std::vector<std::string> hosts, const std::string& pod = "") {
    Interruption i;
    i.id = id;
    i.at = at(when);
    i.cause = cause;
    i.hosts = std::move(hosts);
    i.pod = pod;
    return i;
  }
  void record(const Interruption& i) {
    auto r = h_->store().record(i, actor_);
    ASSERT_TRUE(r.ok()) << r.error();
    ASSERT_TRUE(*r) << i.id;
  }
  std::vector<std::string> ids(const TimePoint from, const TimePoint to, const std::string& cause = "",
                               std::optional<bool> candidate = std::nullopt) {
    auto page = h_->store().list(from, to, cause, candidate, {"", 1000});
    EXPECT_TRUE(page.ok()) << page.error();
    std::vector<std::string> out;
    if (page.ok())
      for (const auto& i : page->items) out.push_back(i.id);
    return out;
  }
  LedgerData data(const std::string& from, const std::string& to, const reliability::Scope& scope, int threshold = 0) {
    auto d = h_->store().data(at(from), at(to), scope, threshold);
    EXPECT_TRUE(d.ok()) << d.error();
    return d.ok() ? *d : LedgerData{};
  }
  // data()'s interruption counts as "week cause flag n", sorted (the SQL's GROUP BY has no order).
  static std::vector<std::string> counts(const LedgerData& d) {
    std::vector<std::string> out;
    for (const auto& c : d.interruptions)
      out.push_back(reliability::formatTime(c.week) + " " + c.cause + (c.candidate ? " candidate " : " confirmed ") +
                    std::to_string(c.n));
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<Harness> h_ = GetParam().make();
  core::Actor actor_{"tok-1", "ops"};
};

TEST_P(ReliabilityStoreContractTest, RecordCreatesOnceAndARetryWithTheSameContentIsNotNew) {
  Interruption i = interruption("inc-1", "2026-11-03T10:00:00Z", "hbm", {"b1-p1-h02", "b1-p1-h01"});
  i.job = "77";
  i.job_gpus = 8;
  auto first = h_->store().record(i, actor_);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(*first);
  Interruption retry = i;
  retry.hosts = {"b1-p1-h01", "b1-p1-h02", "b1-p1-h01"};  // the same hosts in another order
  retry.at += std::chrono::milliseconds(200);             // the same second
  auto again = h_->store().record(retry, actor_);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE(*again);
  core::AuditFilter f;
  f.target = "inc-1";
  auto records = h_->audit(f);
  ASSERT_TRUE(records.ok()) << records.error();
  ASSERT_EQ(records->items.size(), 1u) << "a retry writes no audit record";
  EXPECT_EQ(records->items[0].action, "interruption.record");
  EXPECT_EQ(records->items[0].actor, "tok-1");
  EXPECT_EQ(json::parse(records->items[0].details_json), (json{{"cause", "hbm"}, {"hosts", 2}}));
}

TEST_P(ReliabilityStoreContractTest, ATakenIdWithOtherContentIsAConflict) {
  const Interruption i = interruption("inc-1", "2026-11-03T10:00:00Z", "hbm", {"b1-p1-h01"});
  record(i);
  std::vector<Interruption> others(5, i);
  others[0].cause = "thermal";
  others[1].at += std::chrono::seconds(2);
  others[2].hosts = {"b1-p1-h02"};
  others[3].job_gpus = 0;
  others[4].description = "more";
  for (const auto& o : others) {
    auto r = h_->store().record(o, actor_);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kConflict);
    EXPECT_EQ(r.error().details.at("id"), "inc-1");
  }
  auto page = h_->store().list(at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"), "", std::nullopt, {});
  ASSERT_TRUE(page.ok()) << page.error();
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].cause, "hbm");
}

TEST_P(ReliabilityStoreContractTest, UnknownHostsOrPodAreInvalidContentAndRecordNothing) {
  auto host =
      h_->store().record(interruption("inc-1", "2026-11-03T10:00:00Z", "hbm", {"b1-p1-h01", "b9-p1-h01"}), actor_);
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(host.error().details.at("field"), "hosts");
  auto pod = h_->store().record(interruption("inc-2", "2026-11-03T10:00:00Z", "hbm", {}, "b9-p1"), actor_);
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(pod.error().details.at("field"), "pod");
  EXPECT_TRUE(ids(at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z")).empty());
  auto records = h_->audit({});
  ASSERT_TRUE(records.ok()) << records.error();
  EXPECT_TRUE(records->items.empty());
}

TEST_P(ReliabilityStoreContractTest, ListIsNewestFirstThenByIdWithEveryFieldAndSortedHosts) {
  Interruption full = interruption("inc-b", "2026-11-03T10:00:00Z", "hbm", {"b1-p1-h02", "b1-p1-h01"}, "b1-p1");
  full.job = "77";
  full.job_gpus = 16;
  full.owner = "slurm";
  full.description = "NODE_FAIL";
  full.candidate = true;  // not taken: a recorded interruption is confirmed
  record(full);
  record(interruption("inc-a", "2026-11-03T10:00:00Z", "thermal", {"b2-p1-h01"}));
  record(interruption("inc-c", "2026-11-04T10:00:00Z", "hbm", {}, "b1-p2"));
  auto page = h_->store().list(at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"), "", std::nullopt, {});
  ASSERT_TRUE(page.ok()) << page.error();
  EXPECT_FALSE(page->next_cursor.has_value());
  ASSERT_EQ(page->items.size(), 3u);
  EXPECT_EQ(page->items[0].id, "inc-c");
  EXPECT_EQ(page->items[1].id, "inc-a");
  const Interruption& got = page->items[2];
  EXPECT_EQ(got.id, "inc-b");
  EXPECT_EQ(got.at, at("2026-11-03T10:00:00Z"));
  EXPECT_EQ(got.job, "77");
  EXPECT_EQ(got.job_gpus, 16);
  EXPECT_EQ(got.pod, "b1-p1");
  EXPECT_EQ(got.cause, "hbm");
  EXPECT_EQ(got.owner, "slurm");
  EXPECT_EQ(got.description, "NODE_FAIL");
  EXPECT_FALSE(got.candidate);
  EXPECT_EQ(got.hosts, (std::vector<std::string>{"b1-p1-h01", "b1-p1-h02"}));
  EXPECT_FALSE(page->items[1].job_gpus.has_value());
  EXPECT_EQ(page->items[1].pod, "");
}

TEST_P(ReliabilityStoreContractTest, ListTakesTheWindowHalfOpenAndFiltersByCauseAndFlag) {
  record(interruption("inc-1", "2026-11-01T00:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-2", "2026-11-15T00:00:00Z", "thermal", {"b1-p1-h01"}));
  record(interruption("inc-3", "2026-12-01T00:00:00Z", "hbm", {"b1-p1-h01"}));
  h_->addCandidate(interruption("cand-1", "2026-11-20T00:00:00Z", "unknown", {"b1-p1-h02"}, "b1-p1"));
  const TimePoint from = at("2026-11-01T00:00:00Z"), to = at("2026-12-01T00:00:00Z");
  EXPECT_EQ(ids(from, to), (std::vector<std::string>{"cand-1", "inc-2", "inc-1"}));
  EXPECT_EQ(ids(from, to, "hbm"), std::vector<std::string>{"inc-1"});
  EXPECT_EQ(ids(from, to, "", true), std::vector<std::string>{"cand-1"});
  EXPECT_EQ(ids(from, to, "", false), (std::vector<std::string>{"inc-2", "inc-1"}));
  EXPECT_EQ(ids(from, to, "unknown", false), std::vector<std::string>{});
}

TEST_P(ReliabilityStoreContractTest, PagesFollowTheKeysetThroughRowsOfOneInstant) {
  for (const char* id : {"inc-5", "inc-4", "inc-3"})
    record(interruption(id, "2026-11-10T00:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-1", "2026-11-12T00:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-9", "2026-11-02T00:00:00Z", "hbm", {"b1-p1-h01"}));
  core::PageRequest req{"", 2};
  std::vector<std::string> seen;
  int pages = 0;
  for (; pages < 10; ++pages) {
    auto page = h_->store().list(at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"), "", std::nullopt, req);
    ASSERT_TRUE(page.ok()) << page.error();
    for (const auto& i : page->items) seen.push_back(i.id);
    if (!page->next_cursor) break;
    req.cursor = *page->next_cursor;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"inc-1", "inc-3", "inc-4", "inc-5", "inc-9"}));
  EXPECT_EQ(pages, 2);
  req = {"", 5};
  auto exact = h_->store().list(at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"), "", std::nullopt, req);
  ASSERT_TRUE(exact.ok()) << exact.error();
  EXPECT_EQ(exact->items.size(), 5u);
  EXPECT_FALSE(exact->next_cursor.has_value()) << "the last page, though full";
}

TEST_P(ReliabilityStoreContractTest, ACursorTheStoreDidNotWriteIsInvalidArgument) {
  for (const char* cursor : {"x", "12", ".inc-1", "12.", "+12.inc-1", " 12.inc-1", "1x.inc-1"}) {
    auto page =
        h_->store().list(at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"), "", std::nullopt, {cursor, 10});
    ASSERT_FALSE(page.ok()) << cursor;
    EXPECT_EQ(page.error().code, ErrorCode::kInvalidArgument) << cursor;
  }
}

TEST_P(ReliabilityStoreContractTest, CountsByCauseCountConfirmedInterruptionsOnly) {
  record(interruption("inc-1", "2026-11-01T00:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-2", "2025-01-15T00:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-3", "2026-11-01T00:00:00Z", "thermal", {"b1-p1-h01"}));
  h_->addCandidate(interruption("cand-1", "2026-11-20T00:00:00Z", "hbm", {"b1-p1-h02"}));
  auto counts = h_->store().countsByCause();
  ASSERT_TRUE(counts.ok()) << counts.error();
  EXPECT_EQ(*counts, (std::map<std::string, std::int64_t>{{"hbm", 2}, {"thermal", 1}}));
}

TEST_P(ReliabilityStoreContractTest, DataCountsTheScopesInterruptionsByWeekCauseAndFlag) {
  // 2026-11-02 and 2026-11-09 are Mondays.
  record(interruption("inc-1", "2026-11-03T10:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-2", "2026-11-08T23:59:59Z", "hbm", {"b1-p2-h01"}));
  record(interruption("inc-3", "2026-11-09T00:00:00Z", "thermal", {}, "b2-p1"));
  record(interruption("inc-4", "2026-11-10T00:00:00Z", "hbm", {"b1-p1-h01", "b2-p1-h01"}));
  record(interruption("inc-5", "2026-11-20T00:00:00Z", "hbm", {"b1-p1-h01"}));  // after the window
  h_->addCandidate(interruption("cand-1", "2026-11-04T00:00:00Z", "unknown", {"b1-p1-h02"}, "b1-p1"));
  const std::string from = "2026-11-02T00:00:00Z", to = "2026-11-16T00:00:00Z";
  EXPECT_EQ(
      counts(data(from, to, {})),
      (std::vector<std::string>{"2026-11-02T00:00:00Z hbm confirmed 2", "2026-11-02T00:00:00Z unknown candidate 1",
                                "2026-11-09T00:00:00Z hbm confirmed 1", "2026-11-09T00:00:00Z thermal confirmed 1"}));
  EXPECT_EQ(
      counts(data(from, to, {"", "b2", ""})),
      (std::vector<std::string>{"2026-11-09T00:00:00Z hbm confirmed 1", "2026-11-09T00:00:00Z thermal confirmed 1"}))
      << "by the pod or by one of the hosts";
  EXPECT_EQ(counts(data(from, to, {"s1", "", "clemente"})),
            std::vector<std::string>{"2026-11-02T00:00:00Z hbm confirmed 1"});
  EXPECT_EQ(
      counts(data(from, to, {"s1", "", "catalina"})),
      (std::vector<std::string>{"2026-11-02T00:00:00Z hbm confirmed 1", "2026-11-02T00:00:00Z unknown candidate 1",
                                "2026-11-09T00:00:00Z hbm confirmed 1"}));
  EXPECT_TRUE(counts(data(from, to, {"s9", "", ""})).empty());
}

TEST_P(ReliabilityStoreContractTest, DataFindsLemonsAboveTheThresholdWorstFirstInScope) {
  record(interruption("inc-1", "2026-11-03T10:00:00Z", "hbm", {"b1-p1-h01", "b2-p1-h01"}));
  record(interruption("inc-2", "2026-11-04T10:00:00Z", "hbm", {"b1-p1-h01"}));
  record(interruption("inc-3", "2026-11-05T10:00:00Z", "hbm", {"b2-p1-h02"}));
  record(interruption("inc-old", "2026-10-05T10:00:00Z", "hbm", {"b2-p1-h02"}));  // before the window
  h_->addCandidate(interruption("cand-1", "2026-11-06T00:00:00Z", "unknown", {"b2-p1-h01"}));
  h_->addHostEvent("b2-p1-h02", at("2026-11-07T00:00:00Z"), "repair", "failed", "repair");
  h_->addHostEvent("b2-p1-h02", at("2026-11-08T00:00:00Z"), "repair", "failed", "repair");
  h_->addHostEvent("b1-p2-h01", at("2026-11-08T00:00:00Z"), "drain", "available", "draining");
  auto lemons = [](const LedgerData& d) {
    std::vector<std::string> out;
    for (const auto& l : d.lemons)
      out.push_back(l.host + " " + l.pod + " " + l.state + " " + std::to_string(l.interruptions) + "+" +
                    std::to_string(l.repairs));
    return out;
  };
  const std::string from = "2026-11-01T00:00:00Z", to = "2026-11-15T00:00:00Z";
  EXPECT_EQ(lemons(data(from, to, {}, 0)),
            (std::vector<std::string>{"b2-p1-h02 b2-p1 available 1+2", "b1-p1-h01 b1-p1 available 2+0",
                                      "b2-p1-h01 b2-p1 available 2+0"}));
  EXPECT_EQ(lemons(data(from, to, {}, 2)), std::vector<std::string>{"b2-p1-h02 b2-p1 available 1+2"});
  EXPECT_EQ(lemons(data(from, to, {"", "b1", ""}, 0)), std::vector<std::string>{"b1-p1-h01 b1-p1 available 2+0"});
  EXPECT_EQ(lemons(data(from, to, {"s2", "", "catalina"}, 1)),
            (std::vector<std::string>{"b2-p1-h02 b2-p1 available 1+2", "b2-p1-h01 b2-p1 available 2+0"}));
}

TEST_P(ReliabilityStoreContractTest, DataRollsUpHostsInServiceSoTheReportsGpuHoursMatchEveryChange) {
  // b1's hosts: h01 in service from before the window, h02 from mid-window to a failure; b2's
  // host enters service first of all (its building is out of scope below).
  h_->addHostEvent("b2-p1-h01", at("2026-10-30T08:00:00Z"), "validate", "validating", "available");
  h_->addHostEvent("b1-p1-h01", at("2026-10-31T22:15:00Z"), "validate", "validating", "available");
  h_->addHostEvent("b1-p1-h01", at("2026-11-01T03:00:00Z"), "allocate", "available", "allocated");  // still serving
  h_->addHostEvent("b1-p1-h02", at("2026-11-03T10:20:30Z"), "validate", "validating", "available");
  h_->addHostEvent("b1-p1-h02", at("2026-11-03T10:40:00Z"), "fail", "available", "failed");
  h_->addHostEvent("b1-p1-h02", at("2026-11-04T05:00:00Z"), "validate", "validating", "available");
  h_->addHostEvent("b1-p2-h01", at("2026-11-05T12:34:56Z"), "validate", "validating", "available");
  h_->addHostEvent("b1-p2-h01", at("2026-11-05T23:59:59Z"), "drain", "available", "draining");
  const std::vector<std::pair<TimePoint, int>> b1 = {
      {at("2026-10-31T22:15:00Z"), 1}, {at("2026-11-03T10:20:30Z"), 1}, {at("2026-11-03T10:40:00Z"), -1},
      {at("2026-11-04T05:00:00Z"), 1}, {at("2026-11-05T12:34:56Z"), 1}, {at("2026-11-05T23:59:59Z"), -1}};
  // Windows whose ends fall on a midnight, inside a day, and inside an hour.
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z"},
                                                        {"2026-11-01T05:00:00Z", "2026-11-05T18:00:00Z"},
                                                        {"2026-11-03T10:30:00Z", "2026-11-05T12:40:00Z"}}) {
    const LedgerData d = data(from, to, {"s1", "b1", ""});
    const auto rolled = reliability::serviceSeriesFromRollup(
        d.service_level_at_first_day, d.service_days, d.service_hours, d.service_raw_deltas, at(from), at(to), 4);
    const auto exact = reliability::serviceSeries(b1, at(from), at(to), 4);
    EXPECT_NEAR(rolled.gpu_hours, exact.gpu_hours, 1e-6) << from << " " << to;
    EXPECT_GT(rolled.gpu_hours, 0) << from << " " << to;
    ASSERT_TRUE(d.history_start.has_value());
    EXPECT_EQ(*d.history_start, at("2026-10-31T22:15:00Z")) << "the scope's first host entering service";
  }
  const LedgerData whole = data("2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z", {"s1", "b1", ""});
  EXPECT_EQ(whole.service_level_at_first_day, 1);
  ASSERT_EQ(whole.service_days.size(), 3u) << "only the days with a change (the allocation is none)";
  EXPECT_EQ(whole.service_days[0].start, at("2026-11-03T00:00:00Z"));
  EXPECT_EQ(whole.service_days[0].net_hosts, 0);
  EXPECT_EQ(whole.service_days[0].tail_host_us, std::int64_t{1170} * 1'000'000);  // +1 at 10:20:30, -1 at 10:40
  EXPECT_EQ(whole.service_days[1].start, at("2026-11-04T00:00:00Z"));
  EXPECT_TRUE(whole.service_hours.empty());
  EXPECT_TRUE(whole.service_raw_deltas.empty());
  EXPECT_EQ(data("2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z", {}).history_start, at("2026-10-30T08:00:00Z"));
  EXPECT_FALSE(data("2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z", {"s9", "", ""}).history_start.has_value());
}

KILN_CONTRACT_INSTANTIATE(ReliabilityStoreContractTest, Harness, FakeHarness, PgHarness);

}  // namespace
}  // namespace kiln::db
