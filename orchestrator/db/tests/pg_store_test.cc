#include "orchestrator/db/pg_store.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "orchestrator/db/migrations.h"
#include "orchestrator/db/pg_run_store.h"
#include "orchestrator/db/tests/fleet_fixture.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;

core::FleetSpec demoFleet(int pods_per_building = 3) {
  std::vector<core::PodSpec> pods;
  for (int b = 1; b <= 2; ++b) {
    const std::string building = "prn-b0" + std::to_string(b);
    for (int p = 1; p <= pods_per_building; ++p) {
      auto pod = fixture::podSpec("prn", building, building + "-p" + std::to_string(p),
                                  p % 2 ? core::Platform::kClemente : core::Platform::kCatalina);
      pod.labels = {{"row", p % 2 ? "a" : "b"}};
      pod.versions = {{"driver", "570.133.20"}, {"nvswitch", "1.2"}};
      pods.push_back(std::move(pod));
    }
  }
  return fixture::fleetOf(std::move(pods));
}

class PgStoreTest : public ::testing::Test {
 protected:
  kiln::testing::TestDatabase db_;
  std::unique_ptr<core::Store> store_ = makePgStore({db_.url(), 4});
  core::Actor admin_{"test-admin", "test"};
};

TEST_F(PgStoreTest, ImportExpandsPodsWithPlatformGeometry) {
  auto sum = store_->importFleet(demoFleet(), admin_);
  ASSERT_TRUE(sum.ok()) << sum.error();
  EXPECT_EQ(sum->pods_created, 6);
  EXPECT_EQ(sum->racks_created, 4 * 1 + 2 * 2);  // 4 clemente (1 rack) + 2 catalina (2 racks)
  EXPECT_EQ(sum->hosts_created, 6 * 18);
  EXPECT_EQ(sum->gpus_created, 6 * 72);
  EXPECT_EQ(sum->switch_trays_created, 6 * 9);
  EXPECT_EQ(sum->components_created, 6 * 18 + 6 * 9);
  EXPECT_EQ(db_.query("SELECT count(*) FROM gpus"), "432");
  EXPECT_EQ(db_.query("SELECT count(*) FROM host_events WHERE action = 'import'"), "108");
  EXPECT_EQ(db_.query("SELECT count(*) FROM audit_log WHERE action = 'fleet.import'"), "1");
}

TEST_F(PgStoreTest, ImportingTheSameFileTwiceChangesNothing) {
  ASSERT_TRUE(store_->importFleet(demoFleet(), admin_).ok());
  const std::string before = db_.query(
      "SELECT (SELECT count(*) FROM hosts) || '/' || (SELECT count(*) FROM gpus) || '/' ||"
      " (SELECT count(*) FROM components) || '/' || (SELECT count(*) FROM host_events)");
  auto again = store_->importFleet(demoFleet(), admin_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pods_created, 0);
  EXPECT_EQ(again->pods_existing, 6);
  EXPECT_EQ(db_.query("SELECT (SELECT count(*) FROM hosts) || '/' || (SELECT count(*) FROM gpus)"
                      " || '/' || (SELECT count(*) FROM components) || '/' || (SELECT count(*) FROM host_events)"),
            before);
}

// Issue 32: a pod's management block is stored with it, read back with the pod and with each
// of its hosts, and is the one thing a re-import changes on a known pod.
TEST_F(PgStoreTest, ManagementEndpointsAreStoredAndARecurringImportUpdatesThem) {
  auto fleet = demoFleet(1);
  core::ManagementSpec m;
  m.protocol = "redfish";
  m.credential = "tray-bmc";
  m.tray_bmc = "{host}-bmc.mgmt.example";
  fleet.pods[0].management = m;
  ASSERT_TRUE(store_->importFleet(fleet, admin_).ok());
  auto pod = store_->getPod("prn-b01-p1");
  ASSERT_TRUE(pod.ok()) << pod.error();
  EXPECT_EQ(pod->management, m);
  auto host = store_->getHost(pod->hosts[2].id);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->management, m);
  auto other = store_->getPod("prn-b02-p1");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->management.empty());
  EXPECT_EQ(db_.query("SELECT management::text FROM pods WHERE id = 'prn-b02-p1'"), "{}");
  EXPECT_EQ(db_.query("SELECT count(*) FROM pods WHERE management::text LIKE '%password%'"), "0");

  auto again = store_->importFleet(fleet, admin_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->pods_management_updated, 0);
  fleet.pods[0].management.credential = "tray-bmc-2027";
  fleet.pods[1].management = m;
  auto changed = store_->importFleet(fleet, admin_);
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->pods_management_updated, 2);
  EXPECT_EQ(changed->pods_created, 0);
  EXPECT_EQ(store_->getPod("prn-b01-p1")->management.credential, "tray-bmc-2027");
  EXPECT_EQ(store_->getPod("prn-b02-p1")->management.tray_bmc, m.tray_bmc);
}

TEST_F(PgStoreTest, ImportThatMovesAPodIsRefusedAndWritesNothing) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  auto fleet = demoFleet(2);
  fleet.pods[0].platform = core::Platform::kCatalina;  // prn-b01-p1 was clemente
  auto r = store_->importFleet(fleet, admin_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_EQ(r.error().details.at("pod"), "prn-b01-p1");
  EXPECT_EQ(db_.query("SELECT count(*) FROM pods"), "2");  // the new p2 pods were rolled back
}

TEST_F(PgStoreTest, ListPodsPaginatesWithKeysetCursorAndFilters) {
  ASSERT_TRUE(store_->importFleet(demoFleet(5), admin_).ok());
  std::vector<std::string> seen;
  core::PageRequest page{"", 3};
  for (int i = 0; i < 10; ++i) {
    auto r = store_->listPods({}, page);
    ASSERT_TRUE(r.ok()) << r.error();
    for (const auto& p : r->items) seen.push_back(p.id);
    if (!r->next_cursor) break;
    page.cursor = *r->next_cursor;
  }
  EXPECT_EQ(seen.size(), 10u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  auto cat = store_->listPods({.building = "prn-b02", .platform = "catalina"}, {"", 100});
  ASSERT_TRUE(cat.ok());
  ASSERT_EQ(cat->items.size(), 2u);
  EXPECT_EQ(cat->items[0].racks, 2);
  EXPECT_EQ(cat->items[0].healthy_gpus, 72);
  EXPECT_EQ(cat->items[0].state, core::PodState::kInService);
  auto labelled = store_->listPods({.label = "row=b"}, {"", 100});
  ASSERT_TRUE(labelled.ok());
  EXPECT_EQ(labelled->items.size(), 4u);
}

TEST_F(PgStoreTest, HostsOfPodsReadsManyPodsInTrayOrderAndLeavesUnknownOnesOut) {
  ASSERT_TRUE(store_->importFleet(demoFleet(), admin_).ok());
  auto found = store_->hostsOfPods({"prn-b01-p1", "prn-b02-p2", "prn-b09-p9"});
  ASSERT_TRUE(found.ok()) << found.error();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ(found->count("prn-b09-p9"), 0u);
  for (const auto& pod : {"prn-b01-p1", "prn-b02-p2"}) {
    const auto& hosts = found->at(pod);
    ASSERT_EQ(hosts.size(), 18u);
    // The same hosts, in the same order, as getPod gives.
    auto detail = store_->getPod(pod);
    ASSERT_TRUE(detail.ok());
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      EXPECT_EQ(hosts[i].id, detail->hosts[i].id);
      EXPECT_EQ(hosts[i].tray, static_cast<int>(i) + 1);
      EXPECT_EQ(hosts[i].pod, pod);
      EXPECT_EQ(hosts[i].platform, detail->hosts[i].platform);
    }
  }
  auto none = store_->hostsOfPods({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Issue 35: a 8,192-node pre-job check reads its hosts in one query.
TEST_F(PgStoreTest, HostsByIdReadsManyHostsAsGetHostDoesAndLeavesUnknownOnesOut) {
  ASSERT_TRUE(store_->importFleet(demoFleet(), admin_).ok());
  ASSERT_TRUE(store_->transitionHost({"prn-b02-p2-h07", core::HostAction::kFail, std::nullopt, "xid 79"}, admin_).ok());
  auto found = store_->hostsById({"prn-b01-p1-h01", "prn-b02-p2-h07", "no-such-host", "prn-b01-p1-h01"});
  ASSERT_TRUE(found.ok()) << found.error();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ(found->count("no-such-host"), 0u);
  for (const auto& id : {"prn-b01-p1-h01", "prn-b02-p2-h07"}) {
    auto one = store_->getHost(id);
    ASSERT_TRUE(one.ok());
    const auto& h = found->at(id);
    EXPECT_EQ(h.id, one->host.id);
    EXPECT_EQ(h.pod, one->host.pod);
    EXPECT_EQ(h.tray, one->host.tray);
    EXPECT_EQ(h.platform, one->host.platform);
    EXPECT_EQ(h.state, one->host.state);
    EXPECT_EQ(h.state_reason, one->host.state_reason);
  }
  EXPECT_EQ(found->at("prn-b02-p2-h07").state, core::HostState::kFailed);
  auto none = store_->hostsById({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(PgStoreTest, TransitionRecordsEventAuditAndPodState) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  const std::string host = "prn-b01-p1-h03";
  for (auto a : {core::HostAction::kFail, core::HostAction::kRepair}) {
    auto r = store_->transitionHost({host, a, std::nullopt, "xid 79"}, admin_);
    ASSERT_TRUE(r.ok()) << r.error();
  }
  auto host_detail = store_->getHost(host);
  ASSERT_TRUE(host_detail.ok());
  EXPECT_EQ(host_detail->host.state, core::HostState::kRepair);
  EXPECT_EQ(host_detail->allowed_actions, (std::vector<std::string>{"repair_complete", "retire", "override"}));
  auto events = store_->hostEvents(host, {"", 10});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 3u);  // newest first: repair, fail, import
  EXPECT_EQ(events->items[0].action, "repair");
  EXPECT_EQ(events->items[1].from_state, "available");
  EXPECT_EQ(events->items[1].reason, "xid 79");
  EXPECT_EQ(events->items[1].actor, "test-admin");
  EXPECT_EQ(db_.query("SELECT count(*) FROM audit_log WHERE target = 'prn-b01-p1-h03'"), "2");
  // One tray down: the spares still cover a 64-GPU slice.
  EXPECT_EQ(store_->getPod("prn-b01-p1")->pod.state, core::PodState::kInService);
  for (const char* h : {"prn-b01-p1-h01", "prn-b01-p1-h02"})
    ASSERT_TRUE(store_->transitionHost({h, core::HostAction::kFail, std::nullopt, "test"}, admin_).ok());
  EXPECT_EQ(store_->getPod("prn-b01-p1")->pod.state, core::PodState::kDegraded);
}

TEST_F(PgStoreTest, AnUnknownHostStateIsAStoreErrorNotACrash) {
  // As after a rollback to an older kilnd: a state this binary does not know (the hosts table's
  // CHECK dropped to write it).
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  db_.query("ALTER TABLE hosts DROP CONSTRAINT hosts_state_check");
  db_.query("UPDATE hosts SET state = 'levitating' WHERE id = 'prn-b01-p1-h03'");
  auto host = store_->getHost("prn-b01-p1-h03");
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error().code, ErrorCode::kInternal);
  EXPECT_NE(host.error().message.find("unknown host state 'levitating'"), std::string::npos) << host.error();
  auto pod = store_->getPod("prn-b01-p1");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.error().code, ErrorCode::kInternal);
  auto moved = store_->transitionHost({"prn-b01-p1-h03", core::HostAction::kFail, std::nullopt, "x"}, admin_);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code, ErrorCode::kInternal);
  // The other hosts still read.
  auto other = store_->getHost("prn-b01-p1-h04");
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_EQ(other->host.state, core::HostState::kAvailable);
}

TEST_F(PgStoreTest, AnUnknownPodStateIsAStoreErrorNotACrash) {
  // As after a rollback to an older kilnd that a newer one wrote a pod state for.
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  db_.query("UPDATE pods SET state = 'levitating' WHERE id = 'prn-b01-p1'");
  auto pod = store_->getPod("prn-b01-p1");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.error().code, ErrorCode::kInternal);
  EXPECT_NE(pod.error().message.find("unknown pod state 'levitating'"), std::string::npos) << pod.error();
  auto pods = store_->listPods({.building = "prn-b01"}, {"", 100});
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().code, ErrorCode::kInternal);
  auto heatmap = store_->heatmapPods();
  ASSERT_FALSE(heatmap.ok());
  EXPECT_EQ(heatmap.error().code, ErrorCode::kInternal);
  // The other pods still read, and a host transition writes the pod's state anew.
  ASSERT_TRUE(store_->getPod("prn-b02-p1").ok());
  ASSERT_TRUE(store_->transitionHost({"prn-b01-p1-h03", core::HostAction::kFail, std::nullopt, "x"}, admin_).ok());
  auto fixed = store_->getPod("prn-b01-p1");
  ASSERT_TRUE(fixed.ok()) << fixed.error();
  EXPECT_EQ(fixed->pod.state, core::PodState::kInService);
}

TEST_F(PgStoreTest, PodsFilterByState) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  for (const char* h : {"prn-b01-p1-h01", "prn-b01-p1-h02", "prn-b01-p1-h03"})
    ASSERT_TRUE(store_->transitionHost({h, core::HostAction::kFail, std::nullopt, "test"}, admin_).ok());
  auto degraded = store_->listPods({.state = core::PodState::kDegraded}, {"", 100});
  ASSERT_TRUE(degraded.ok()) << degraded.error();
  ASSERT_EQ(degraded->items.size(), 1u);
  EXPECT_EQ(degraded->items[0].id, "prn-b01-p1");
  EXPECT_EQ(degraded->items[0].state, core::PodState::kDegraded);
  auto all = store_->listPods({}, {"", 100});
  ASSERT_TRUE(all.ok()) << all.error();
  auto in_service = store_->listPods({.state = core::PodState::kInService}, {"", 100});
  ASSERT_TRUE(in_service.ok()) << in_service.error();
  EXPECT_EQ(in_service->items.size(), all->items.size() - 1);
}

TEST_F(PgStoreTest, RefusedTransitionChangesNothing) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  auto r = store_->transitionHost({"prn-b01-p1-h01", core::HostAction::kRepairComplete, std::nullopt, ""}, admin_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_EQ(r.error().details.at("state"), "available");
  EXPECT_EQ(db_.query("SELECT count(*) FROM host_events WHERE host_id = 'prn-b01-p1-h01'"), "1");
  EXPECT_EQ(store_->transitionHost({"nope", core::HostAction::kFail, std::nullopt, ""}, admin_).error().code,
            ErrorCode::kNotFound);
}

TEST_F(PgStoreTest, ConcurrentTransitionsOfOneHostSerialise) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      auto r = store_->transitionHost({"prn-b01-p1-h05", core::HostAction::kDrain, std::nullopt, "race"}, admin_);
      (r.ok() ? ok : refused)++;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(refused.load(), 3);
}

// service_days and service_hours (migration 0005) follow host_events whoever writes them: the
// import's COPY, transitions, and an UPDATE or DELETE by hand; a rebuild from host_events gives
// the same rows.
TEST_F(PgStoreTest, ServiceDaysFollowEveryWriterOfHostEvents) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  auto serving = [&](const std::string& building) {
    return db_.query("SELECT coalesce(sum(net_hosts), 0) FROM service_days WHERE building_id = '" + building + "'");
  };
  EXPECT_EQ(serving("prn-b01"), "18");
  EXPECT_EQ(serving("prn-b02"), "18");
  for (auto a : {core::HostAction::kFail, core::HostAction::kRepair, core::HostAction::kRepairComplete})
    ASSERT_TRUE(store_->transitionHost({"prn-b01-p1-h03", a, std::nullopt, "xid 79"}, admin_).ok());
  for (auto a : {core::HostAction::kAllocate, core::HostAction::kRelease, core::HostAction::kDrain})
    ASSERT_TRUE(store_->transitionHost({"prn-b02-p1-h07", a, std::nullopt, "rollout"}, admin_).ok());
  EXPECT_EQ(serving("prn-b01"), "17");
  EXPECT_EQ(serving("prn-b02"), "17");
  // The rows kept by the triggers, then the rows kiln_rebuild_service_days() computes.
  auto kept_and_rebuilt = [&] {
    const std::string rows =
        "SELECT coalesce(string_agg(t, ', ' ORDER BY t), '') FROM ("
        " SELECT day || ' ' || building_id || ' ' || platform || ' ' || net_hosts || ' ' || tail_host_us AS t"
        "   FROM service_days WHERE net_hosts <> 0 OR tail_host_us <> 0"
        " UNION ALL SELECT extract(epoch FROM hour) || ' ' || building_id || ' ' || platform || ' ' || net_hosts || ' ' ||"
        "   tail_host_us FROM service_hours WHERE net_hosts <> 0 OR tail_host_us <> 0) x";
    const std::string kept = db_.query(rows);
    db_.query("SELECT kiln_rebuild_service_days()");
    return std::make_pair(kept, db_.query(rows));
  };
  auto [kept, rebuilt] = kept_and_rebuilt();
  EXPECT_EQ(kept, rebuilt);
  EXPECT_FALSE(kept.empty());
  // By hand (kilnd never does): events moved to another day, an event deleted.
  db_.query("UPDATE host_events SET at = at - interval '30 days' WHERE action = 'import'");
  std::tie(kept, rebuilt) = kept_and_rebuilt();
  EXPECT_EQ(kept, rebuilt);
  EXPECT_EQ(serving("prn-b02"), "17");
  db_.query("DELETE FROM host_events WHERE host_id = 'prn-b02-p1-h07' AND action = 'drain'");
  EXPECT_EQ(serving("prn-b02"), "18");
  std::tie(kept, rebuilt) = kept_and_rebuilt();
  EXPECT_EQ(kept, rebuilt);
}

TEST_F(PgStoreTest, BatchedTransitionsApplyInOrderAndReportRefusedOnesPerHost) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  ASSERT_TRUE(store_->transitionHost({"prn-b01-p1-h02", core::HostAction::kDrain, std::nullopt, "earlier"}, admin_).ok());
  std::vector<core::HostTransition> batch;
  // Given out of id order; h02 is draining already, so its drain is refused and its drained applies.
  for (const char* h : {"prn-b01-p1-h03", "prn-b01-p1-h01", "prn-b01-p1-h02"}) {
    batch.push_back({h, core::HostAction::kDrain, std::nullopt, "drain for upgrade"});
    batch.push_back({h, core::HostAction::kDrained, std::nullopt, "no job on the host"});
  }
  batch.push_back({"nope", core::HostAction::kDrain, std::nullopt, ""});
  auto r = store_->transitionHosts(batch, admin_);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), batch.size());
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u}) ASSERT_TRUE((*r)[i].ok()) << i << ": " << (*r)[i].error();
  EXPECT_EQ(*(*r)[1], core::HostState::kMaintenance);
  EXPECT_EQ(*(*r)[5], core::HostState::kMaintenance);
  ASSERT_FALSE((*r)[4].ok());
  EXPECT_EQ((*r)[4].error().code, ErrorCode::kConflict);
  EXPECT_EQ((*r)[4].error().details.at("host"), "prn-b01-p1-h02");
  ASSERT_FALSE((*r)[6].ok());
  EXPECT_EQ((*r)[6].error().code, ErrorCode::kNotFound);
  // Each applied transition has its host event and audit record; the refused one has neither.
  EXPECT_EQ(db_.query("SELECT count(*) FROM host_events WHERE action IN ('drain', 'drained') AND reason <> 'earlier'"), "5");
  EXPECT_EQ(db_.query("SELECT count(*) FROM audit_log WHERE action IN ('host.drain', 'host.drained')"), "6");
  EXPECT_EQ(store_->getPod("prn-b01-p1")->pod.state, core::PodState::kMaintenance);
  // A host moved twice: its events in the batch's order, each from where the one before left
  // it; its row counts both moves and keeps the last reason.
  EXPECT_EQ(db_.query("SELECT string_agg(action || ':' || from_state || '>' || to_state, ',' ORDER BY id)"
                      " FROM host_events WHERE host_id = 'prn-b01-p1-h03' AND action <> 'import'"),
            "drain:available>draining,drained:draining>maintenance");
  EXPECT_EQ(db_.query("SELECT string_agg(details->>'from' || '>' || (details->>'to'), ',' ORDER BY id)"
                      " FROM audit_log WHERE target = 'prn-b01-p1-h03' AND action LIKE 'host.%'"),
            "available>draining,draining>maintenance");
  EXPECT_EQ(db_.query("SELECT state || ' ' || state_reason FROM hosts WHERE id = 'prn-b01-p1-h03'"),
            "maintenance no job on the host");
  EXPECT_EQ(db_.query("SELECT (SELECT version FROM hosts WHERE id = 'prn-b01-p1-h03') -"
                      " (SELECT version FROM hosts WHERE id = 'prn-b01-p1-h04')"),
            "2");
  // The hosts in service per day, kept by host_events' trigger from the batch's one statement,
  // equal a rebuild from the events (three hosts left service).
  const std::string kept = db_.query("SELECT string_agg(building_id || ' ' || net_hosts || ' ' || tail_host_us, ',')"
                                     " FROM service_days WHERE building_id = 'prn-b01'");
  EXPECT_EQ(db_.query("SELECT sum(net_hosts) FROM service_days WHERE building_id = 'prn-b01'"), "15");
  db_.query("SELECT kiln_rebuild_service_days()");
  EXPECT_EQ(db_.query("SELECT string_agg(building_id || ' ' || net_hosts || ' ' || tail_host_us, ',')"
                      " FROM service_days WHERE building_id = 'prn-b01'"),
            kept);
  // One transaction for the whole batch: every event carries its start time, now().
  std::vector<core::HostTransition> undrain;
  for (int i = 4; i <= 18; ++i) {
    const std::string h = "prn-b01-p1-h" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    undrain.push_back({h, core::HostAction::kDrain, std::nullopt, "x"});
    undrain.push_back({h, core::HostAction::kUndrain, std::nullopt, "x"});
  }
  ASSERT_TRUE(store_->transitionHosts(undrain, admin_).ok());
  EXPECT_EQ(db_.query("SELECT count(*) || '/' || count(DISTINCT at) FROM host_events WHERE reason = 'x'"), "30/1");
  // A host failed while a job ran on it is an interruption candidate, batched or not.
  ASSERT_TRUE(store_->transitionHost({"prn-b01-p1-h04", core::HostAction::kAllocate, std::nullopt, "job"}, admin_).ok());
  auto failed = store_->transitionHosts({{"prn-b01-p1-h04", core::HostAction::kFail, std::nullopt, "xid 79"},
                                         {"prn-b01-p1-h05", core::HostAction::kFail, std::nullopt, "xid 79"}},
                                        admin_);
  ASSERT_TRUE(failed.ok() && (*failed)[0].ok() && (*failed)[1].ok());
  EXPECT_EQ(db_.query("SELECT string_agg(host_id, ',') FROM interruption_hosts"), "prn-b01-p1-h04");
}

TEST_F(PgStoreTest, ConcurrentOverlappingBatchesDoNotDeadlock) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  std::vector<core::HostTransition> forward, backward;
  for (int i = 1; i <= 18; ++i) {
    const std::string h = "prn-b01-p1-h" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    forward.push_back({h, core::HostAction::kFail, std::nullopt, "a"});
  }
  backward.assign(forward.rbegin(), forward.rend());
  std::atomic<int> applied{0}, failed_batches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto r = store_->transitionHosts(t % 2 ? backward : forward, admin_);
      if (!r.ok()) {
        ++failed_batches;
        return;
      }
      for (const auto& o : *r) applied += o.ok();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed_batches.load(), 0);
  EXPECT_EQ(applied.load(), 18);  // each host failed exactly once
  EXPECT_EQ(store_->getPod("prn-b01-p1")->pod.state, core::PodState::kDown);
}

TEST_F(PgStoreTest, RunStatesReadsManyRunsInOneQuery) {
  auto runs = makePgRunStore({db_.url(), 2});
  db_.query("INSERT INTO workflow_versions (name, hash, yaml, source, created_by) VALUES ('w', 'h', '', 'test', 't')");
  for (const char* st : {"running", "passed", "failed"})
    db_.query(std::string("INSERT INTO workflow_runs (id, workflow, workflow_hash, scope, purpose, params, state, created_by)"
                          " VALUES ('r-") + st + "', 'w', 'h', 'host', 'manual', '{}', '" + st + "', 't')");
  auto states = runs->runStates({"r-running", "r-passed", "r-failed", "r-missing"});
  ASSERT_TRUE(states.ok()) << states.error();
  EXPECT_EQ(*states, (std::map<std::string, std::string>{{"r-running", "running"}, {"r-passed", "passed"}, {"r-failed", "failed"}}));
  EXPECT_TRUE(runs->runStates({})->empty());
}

TEST_F(PgStoreTest, TokensAreStoredAsHashesAndRevocable) {
  ASSERT_TRUE(store_->importFleet(demoFleet(1), admin_).ok());
  auto t = store_->createToken(core::Role::kOperator, "ci", "", admin_);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(db_.query("SELECT count(*) FROM tokens WHERE secret_hash LIKE '%" +
                      core::parseBearerToken(t->secret)->secret + "%'"),
            "0");
  auto found = store_->findToken(t->info.id);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->info.role, core::Role::kOperator);
  ASSERT_TRUE(store_->revokeToken(t->info.id, admin_).ok());
  EXPECT_EQ(store_->revokeToken(t->info.id, admin_).error().code, ErrorCode::kConflict);
  EXPECT_TRUE((*store_->findToken(t->info.id))->info.revoked_at.has_value());
  EXPECT_FALSE(store_->createToken(core::Role::kAgent, "a", "", admin_).ok());
  EXPECT_FALSE(store_->createToken(core::Role::kAgent, "a", "no-such-host", admin_).ok());
  EXPECT_TRUE(store_->createToken(core::Role::kAgent, "a", "prn-b01-p1-h01", admin_).ok());
}

TEST_F(PgStoreTest, MigrationsAreIdempotentAndRefuseNewerSchema) {
  auto again = applyMigrations(db_.url());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->applied.empty());
  db_.query("INSERT INTO schema_migrations (version, name) VALUES (9999, 'future') RETURNING 1");
  auto newer = applyMigrations(db_.url());
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().code, ErrorCode::kConflict);
  EXPECT_NE(newer.error().message.find("9999"), std::string::npos);
}

TEST_F(PgStoreTest, ConcurrentMigrationsApplyOnce) {
  kiln::testing::TestDatabase fresh;  // already migrated once by its constructor
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] { failures += !applyMigrations(fresh.url()).ok(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fresh.query("SELECT count(*) FROM schema_migrations"),
            std::to_string(embeddedMigrations().size()));
}

}  // namespace
}  // namespace kiln::db
