// The fakes keep the promises of the interfaces they stand for (rollout_store.h, core/store.h,
// runs/run_store.h), so that the service's and the controller's tests mean what PostgreSQL
// would. The run store's report path is held to PgRunStore's by
// orchestrator/db/tests/run_store_contract_test.cc.

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/rollouts/testing/fake_bundle_catalog.h"
#include "orchestrator/rollouts/testing/fake_rollout_store.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/runs/testing/fake_run_store.h"

#include <gtest/gtest.h>

namespace kiln::rollouts::testing {
namespace {

using core::testing::FakeFleet;
using nlohmann::json;
using runs::testing::FakeRunStore;
using Outcome = BundleCatalog::PutOutcome;

const core::Actor kAdmin{"t-1", "admin"};

Bundle fw(const std::string& version, const std::string& driver = "580.1") {
  Bundle b;
  b.name = "fw";
  b.version = version;
  b.platforms = {"catalina"};
  b.workflow = "upgrade";
  b.components = {{"driver", driver, "https://a/d.run", std::string(64, 'a')}};
  return b;
}

TEST(FakeBundleCatalogTest, PutCreatesUpdatesOrKeepsAndAUsedBundleNoLongerChanges) {
  core::FakeClock clock;
  FakeBundleCatalog catalog(&clock);
  auto created = catalog.putBundle(fw("1"), kAdmin, std::nullopt);
  ASSERT_TRUE(created.ok()) << created.error();
  EXPECT_EQ(created->second, Outcome::kCreated);
  EXPECT_EQ(created->first.bundle.id, "b-1");
  EXPECT_EQ(created->first.created_by, "t-1");
  EXPECT_EQ(catalog.putBundle(fw("1"), kAdmin, std::nullopt)->second, Outcome::kUnchanged);
  EXPECT_EQ(catalog.putBundle(fw("1", "580.2"), kAdmin, std::nullopt)->second, Outcome::kUpdated);
  EXPECT_EQ((*catalog.getBundle("fw@1"))->bundle.components[0].version, "580.2");
  EXPECT_EQ((*catalog.getBundle("b-1"))->bundle.name, "fw");
  EXPECT_FALSE(catalog.getBundle("fw@9")->has_value());

  catalog.markUsed("b-1");
  auto changed = catalog.putBundle(fw("1", "580.3"), kAdmin, std::nullopt);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().code, ErrorCode::kConflict);
  EXPECT_EQ(changed.error().details.at("bundle"), "b-1");
  EXPECT_EQ(catalog.putBundle(fw("1", "580.2"), kAdmin, std::nullopt)->second, Outcome::kUnchanged);

  clock.advance(std::chrono::seconds(1));
  ASSERT_TRUE(catalog.putBundle(fw("2"), kAdmin, std::nullopt).ok());
  auto all = catalog.listBundles();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].bundle.id, "b-2");  // newest first
  EXPECT_TRUE((*all)[1].used);
}

TEST(FakeBundleCatalogTest, IfMatchNeedsTheCurrentVersionsEtag) {
  FakeBundleCatalog catalog;
  core::IfMatch any{.any = true};
  auto none = catalog.putBundle(fw("1"), kAdmin, any);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kPreconditionFailed);
  auto created = catalog.putBundle(fw("1"), kAdmin, std::nullopt);
  ASSERT_TRUE(created.ok());
  core::IfMatch stale{.etags = {"\"nope\""}};
  EXPECT_EQ(catalog.putBundle(fw("1", "580.2"), kAdmin, stale).error().code, ErrorCode::kPreconditionFailed);
  core::IfMatch current{.etags = {bundleEtag(created->first.bundle)}};
  auto updated = catalog.putBundle(fw("1", "580.2"), kAdmin, current);
  ASSERT_TRUE(updated.ok()) << updated.error();
  EXPECT_EQ(updated->second, Outcome::kUpdated);
}

class FakeRolloutStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 3; ++i) fleet_.addPod("b1-p" + std::to_string(i), "b1");
  }
  std::string create(const std::vector<std::string>& pods) {
    auto id = store_.nextRolloutId();
    EXPECT_TRUE(id.ok());
    RolloutRow row;
    row.id = *id;
    row.bundle_id = "b-1";
    std::vector<RolloutPodRow> rows;
    for (const auto& p : pods) {
      RolloutPodRow r;
      r.pod = p;
      r.position = static_cast<int>(rows.size());
      rows.push_back(r);
    }
    auto created = store_.createRollout(row, rows, kAdmin);
    EXPECT_TRUE(created.ok()) << created.error();
    return *id;
  }
  void finish(const std::string& id, const std::string& pod, PodPhase phase) {
    PodUpdate u{pod, PodPhase::kPending, phase};
    u.set_started = u.set_finished = true;
    ASSERT_TRUE(store_.updatePods(id, {u}, {{pod, podPhaseName(phase), "done"}}).ok());
  }

  core::FakeClock clock_;
  FakeFleet fleet_;
  FakeRolloutStore store_{fleet_, &clock_};
};

TEST_F(FakeRolloutStoreTest, ListsPageNewestFirstAndFilterByState) {
  for (int i = 0; i < 3; ++i) create({"b1-p" + std::to_string(i + 1)});
  ASSERT_TRUE(store_.transition("ro-2", {RolloutState::kCreated}, RolloutState::kRunning, "", kAdmin).ok());
  auto first = store_.listRollouts(std::nullopt, {"", 2});
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(first->items[0].id, "ro-3");
  EXPECT_EQ(first->items[1].id, "ro-2");
  ASSERT_TRUE(first->next_cursor);
  auto second = store_.listRollouts(std::nullopt, {*first->next_cursor, 2});
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->items.size(), 1u);
  EXPECT_EQ(second->items[0].id, "ro-1");
  EXPECT_FALSE(second->next_cursor);
  auto running = store_.listRollouts(RolloutState::kRunning, {"", 10});
  ASSERT_EQ(running->items.size(), 1u);
  EXPECT_EQ(running->items[0].id, "ro-2");
  EXPECT_EQ(store_.listRollouts(std::nullopt, {"x", 10}).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(FakeRolloutStoreTest, EventsAreThisRolloutsNewestFirst) {
  const auto a = create({"b1-p1"});
  const auto b = create({"b1-p2"});
  ASSERT_TRUE(store_.transition(a, {RolloutState::kCreated}, RolloutState::kRunning, "", kAdmin).ok());
  ASSERT_TRUE(store_.transition(a, {RolloutState::kRunning}, RolloutState::kPaused, "lunch", kAdmin).ok());
  auto events = store_.rolloutEvents(a, 2);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].event.kind, "paused");
  EXPECT_EQ((*events)[0].event.message, "lunch");
  EXPECT_EQ((*events)[1].event.message, "created -> running");  // no reason: the move, as the SQL writes it
  EXPECT_GT((*events)[0].id, (*events)[1].id);
  EXPECT_EQ(store_.rolloutEvents(b, 10)->size(), 1u);
}

TEST_F(FakeRolloutStoreTest, CountsAndMetricsLeaveOutFinishedRolloutsPods) {
  const auto done = create({"b1-p1"});
  ASSERT_TRUE(store_.transition(done, {RolloutState::kCreated}, RolloutState::kRunning, "", kAdmin).ok());
  finish(done, "b1-p1", PodPhase::kSucceeded);
  ASSERT_TRUE(store_.transition(done, {RolloutState::kRunning}, RolloutState::kCompleted, "", kAdmin).ok());
  clock_.advance(std::chrono::hours(2));
  const auto open = create({"b1-p2", "b1-p3"});
  auto counts = store_.counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->first, (std::map<RolloutState, int>{{RolloutState::kCompleted, 1}, {RolloutState::kCreated, 1}}));
  EXPECT_EQ(counts->second, (std::map<PodPhase, int>{{PodPhase::kPending, 2}}));
  auto recent = store_.metricRollouts(clock_.now() - std::chrono::hours(3));
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 2u);
  EXPECT_EQ((*recent)[0].id, done);  // oldest first
  EXPECT_EQ((*recent)[1].pods.size(), 2u);
  EXPECT_EQ((*recent)[1].pods[0].platform, "catalina");
  auto now = store_.metricRollouts(clock_.now() - std::chrono::hours(1));
  ASSERT_EQ(now->size(), 1u);
  EXPECT_EQ((*now)[0].id, open);
}

TEST_F(FakeRolloutStoreTest, LaterChangesNameTheNewestRolloutThatChangedAPodSince) {
  const auto first = create({"b1-p1", "b1-p2"});
  finish(first, "b1-p1", PodPhase::kSucceeded);
  finish(first, "b1-p2", PodPhase::kSucceeded);
  ASSERT_TRUE(store_.transition(first, {RolloutState::kCreated}, RolloutState::kAborted, "", kAdmin).ok());
  clock_.advance(std::chrono::minutes(1));
  const auto second = create({"b1-p1", "b1-p2"});
  PodUpdate started{"b1-p2", PodPhase::kPending, PodPhase::kUpgrading};
  started.run_id = "r-1";
  ASSERT_TRUE(store_.updatePods(second, {started}, {}).ok());
  auto later = store_.laterChanges(first, {"b1-p1", "b1-p2"});
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(*later, (std::map<std::string, std::string>{{"b1-p2", second}}));  // p1 not touched yet
  EXPECT_TRUE(store_.laterChanges(second, {"b1-p1", "b1-p2"})->empty());
}

TEST_F(FakeRolloutStoreTest, BuildingLoadsCountPodsOutOfServiceAndInFlight) {
  for (int h = 1; h <= 3; ++h) fleet_.setState("b1-p3-h0" + std::to_string(h), core::HostState::kFailed);
  EXPECT_EQ(fleet_.pods_.at("b1-p3").pod.state, core::PodState::kDegraded);
  const auto id = create({"b1-p1"});
  ASSERT_TRUE(store_.updatePods(id, {PodUpdate{"b1-p1", PodPhase::kPending, PodPhase::kDraining}}, {}).ok());
  auto loads = store_.buildingLoads({"b1"});
  ASSERT_TRUE(loads.ok());
  // b1-p3 degraded still serves (in service); b1-p1 drains.
  EXPECT_EQ(loads->at("b1").pods, 3);
  EXPECT_EQ(loads->at("b1").down, 1);
  EXPECT_EQ(loads->at("b1").upgrading, 1);
  for (int h = 1; h <= 18; ++h) {
    const std::string host = "b1-p2-h" + std::string(h < 10 ? "0" : "") + std::to_string(h);
    fleet_.setState(host, core::HostState::kFailed);
  }
  EXPECT_EQ(fleet_.pods_.at("b1-p2").pod.state, core::PodState::kDown);
  EXPECT_EQ(store_.buildingLoads({"b1"})->at("b1").down, 2);
}

TEST_F(FakeRolloutStoreTest, AVerbsUpdateOfAPodNotInTheRolloutIsAConflictAndTheControllersIsSkipped) {
  const auto id = create({"b1-p1"});
  PodUpdate verb{"b1-p9", PodPhase::kFailed, PodPhase::kPending};
  verb.only_while = {RolloutState::kCreated};
  EXPECT_EQ(store_.updatePods(id, {verb}, {}).error().code, ErrorCode::kConflict);
  EXPECT_TRUE(store_.updatePods(id, {PodUpdate{"b1-p9", PodPhase::kPending, PodPhase::kDraining}}, {}).ok());
}

TEST(FakeFleetTest, RecordsWhatIsAudited) {
  FakeFleet fleet;
  ASSERT_TRUE(fleet.audit(kAdmin, "rollout.rollback", "ro-1", R"({"reason":"x"})").ok());
  auto audits = fleet.audits();
  ASSERT_EQ(audits.size(), 1u);
  EXPECT_EQ(audits[0].actor, "t-1");
  EXPECT_EQ(audits[0].action, "rollout.rollback");
  EXPECT_EQ(audits[0].target, "ro-1");
  EXPECT_EQ(audits[0].details_json, R"({"reason":"x"})");
}

TEST(FakeFleetTest, ATransitionIsCheckedStampedAndAuditedAndARefusedOneLeavesTheOthers) {
  core::FakeClock clock;
  FakeFleet fleet(&clock);
  fleet.addPod("b1-p1", "b1");
  auto out = fleet.transitionHosts({{"b1-p1-h01", core::HostAction::kDrain, std::nullopt, "rollout ro-1"},
                                    {"b1-p1-h02", core::HostAction::kDrained, std::nullopt, "not draining"},
                                    {"b1-p1-h01", core::HostAction::kDrained, std::nullopt, "no job left"}},
                                   kAdmin);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].value(), core::HostState::kDraining);
  ASSERT_FALSE((*out)[1].ok());
  EXPECT_EQ((*out)[1].error().code, ErrorCode::kConflict);
  EXPECT_EQ((*out)[2].value(), core::HostState::kMaintenance);
  EXPECT_EQ(fleet.state("b1-p1-h02"), core::HostState::kAvailable);
  EXPECT_EQ(fleet.host("b1-p1-h01")->state_reason, "no job left");
  EXPECT_EQ(fleet.host("b1-p1-h01")->state_since, clock.now());
  auto audits = fleet.audits();
  ASSERT_EQ(audits.size(), 2u);
  EXPECT_EQ(audits[0].action, "host.drain");
  EXPECT_EQ(json::parse(audits[1].details_json), (json{{"from", "draining"}, {"to", "maintenance"}, {"reason", "no job left"}}));
  auto pod = fleet.getPod("b1-p1");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->pod.hosts_by_state.at("available"), 17);
  EXPECT_EQ(pod->pod.healthy_gpus, 17 * 4);
  auto detail = fleet.getHost("b1-p1-h01");
  ASSERT_TRUE(detail.ok());
  std::vector<std::string> allowed;
  for (auto a : core::allowedActions(core::HostState::kMaintenance)) allowed.emplace_back(core::hostActionName(a));
  EXPECT_FALSE(allowed.empty());
  EXPECT_EQ(detail->allowed_actions, allowed) << "what an operator may do next, as the store answers it";
}

TEST(FakeFleetTest, ListsHostsFilteredAndSortedInKeysetPagesThatNeitherSplitNorRepeat) {
  core::FakeClock clock;
  FakeFleet fleet(&clock);
  fleet.addPod("b1-p1", "b1");
  fleet.addPod("b2-p1", "b2");
  fleet.pods_.at("b2-p1").pod.labels["tier"] = "gold";
  for (int i : {3, 1, 2}) {
    clock.advance(std::chrono::seconds(1));
    ASSERT_TRUE(fleet.transitionHosts({{"b1-p1-h0" + std::to_string(i), core::HostAction::kFail, std::nullopt,
                                        "GPU " + std::to_string(i) + " fell off the BUS"}},
                                      kAdmin)
                    ->at(0)
                    .ok());
  }
  auto collect = [&](core::HostFilter f, int limit) {
    std::vector<std::string> ids;
    core::PageRequest page{"", limit};
    for (;;) {
      auto got = fleet.listHosts(f, page);
      EXPECT_TRUE(got.ok()) << got.error();
      if (!got.ok()) return ids;
      for (const auto& h : got->items) ids.push_back(h.id);
      if (!got->next_cursor) return ids;
      page.cursor = *got->next_cursor;
    }
  };
  auto all = collect({}, 5);
  ASSERT_EQ(all.size(), 36u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 36u);

  core::HostFilter failed;
  failed.state = "failed";
  failed.sort = {core::HostSortKey::kStateSince, true};
  EXPECT_EQ(collect(failed, 1), (std::vector<std::string>{"b1-p1-h02", "b1-p1-h01", "b1-p1-h03"}));  // newest first
  core::HostFilter reason;
  reason.reason = "bus";
  reason.id_prefix = "B1-P1-H0";
  EXPECT_EQ(collect(reason, 2).size(), 3u);
  core::HostFilter gold;
  gold.label = "tier=gold";
  EXPECT_EQ(collect(gold, 100).size(), 18u);
  gold.label = "tier";
  EXPECT_EQ(fleet.listHosts(gold, {}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(fleet.listHosts(failed, {"b1-p1-h02", 10}).error().code, ErrorCode::kInvalidArgument)
      << "another sort's cursor is not an id";
}

// The run store under the run service, as kilnd uses it.
class FakeRunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { fleet_.addPod("b1-p1", "b1"); }
  Result<runs::RunView> start(std::vector<std::string> hosts, const std::string& purpose = "manual",
                              const std::string& workflow = "check") {
    runs::StartRequest req;
    req.workflow = workflow;
    req.hosts = std::move(hosts);
    req.purpose = purpose;
    return runs_.startRun(req, kAdmin);
  }
  std::vector<Result<runs::ReportAnswer>> report(const protocol::Assignment& a, const std::string& host, int exit_code) {
    return room_.agent_work.reportBatch({{a.id, host,
                                          json{{"lease", a.lease},
                                               {"host", host},
                                               {"started", true},
                                               {"exit_code", exit_code},
                                               {"duration_ms", 3},
                                               {"ready", true}},
                                          ""}});
  }

  core::FakeClock clock_;
  FakeFleet fleet_{&clock_};
  FakeRunStore store_{&fleet_, &clock_};
  runs::RunsRoom room_{fleet_, store_, clock_, {}, nullptr};
  runs::RunService& runs_ = room_.runs;
};

TEST_F(FakeRunStoreTest, ClaimsHandOutEachStepOnceWithALeaseAndReportsFinishTheRun) {
  auto run = start({"b1-p1-h01", "b1-p1-h02"});
  ASSERT_TRUE(run.ok()) << run.error();
  EXPECT_EQ(store_.hostsWithOpenWork().value(), (std::vector<std::string>{"b1-p1-h01", "b1-p1-h02"}));
  auto claimed = room_.agent_work.claimBatch({"b1-p1-h01", "b1-p1-h02", "b1-p1-h03"});
  ASSERT_TRUE(claimed.ok()) << claimed.error();
  ASSERT_EQ(claimed->size(), 2u);
  const protocol::Assignment a = claimed->at("b1-p1-h01").assignment;
  EXPECT_EQ(claimed->at("b1-p1-h01").group, "b1-p1-h01") << "a host-scope run's group is its host";
  EXPECT_EQ(a.lease, 1);
  EXPECT_EQ(store_.assignment(a.id).value()->state, "dispatched");
  // An answer the agent never got: the same step and lease again.
  auto again = room_.agent_work.claimWork("b1-p1-h01");
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->id, a.id);
  EXPECT_EQ((*again)->lease, 1);

  auto first = report(a, "b1-p1-h01", 0);
  ASSERT_TRUE(first[0].ok()) << first[0].error();
  EXPECT_EQ(first[0]->outcome, runs::ReportOutcome::kAccepted);
  EXPECT_EQ(report(a, "b1-p1-h01", 0)[0]->outcome, runs::ReportOutcome::kDuplicate);
  EXPECT_EQ(report(a, "b1-p1-h02", 0)[0].error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(report(claimed->at("b1-p1-h02").assignment, "b1-p1-h02", 1)[0]->outcome, runs::ReportOutcome::kAccepted);
  EXPECT_TRUE(store_.hostsWithOpenWork()->empty());

  EXPECT_EQ(room_.timers.tick(), 1);  // the verdict
  EXPECT_EQ(store_.runs_.at(run->row.id).state, "failed");
  EXPECT_EQ(store_.runs_.at(run->row.id).summary["healthy"], 1);
}

TEST_F(FakeRunStoreTest, ALeaseThatRanOutLosesItsStepThroughTheEngine) {
  auto run = start({"b1-p1-h01"});
  ASSERT_TRUE(run.ok()) << run.error();
  auto a = room_.agent_work.claimWork("b1-p1-h01");
  ASSERT_TRUE(a.ok() && a->has_value());
  clock_.advance(std::chrono::seconds(60 + 30 + 1));  // the step's timeout and the lease grace
  room_.timers.tick();
  EXPECT_EQ(store_.assignment((*a)->id).value()->state, "lost");
  EXPECT_EQ(store_.runs_.at(run->row.id).state, "failed");
  EXPECT_EQ(report(**a, "b1-p1-h01", 0)[0]->outcome, runs::ReportOutcome::kStale);
}

TEST_F(FakeRunStoreTest, RunTransitionsMoveTheFleetsHostsAndQuarantineReadsThem) {
  fleet_.setState("b1-p1-h01", core::HostState::kIncoming);
  ASSERT_TRUE(start({"b1-p1-h01"}, "burn_in").ok());
  EXPECT_EQ(fleet_.state("b1-p1-h01"), core::HostState::kBurnIn);

  // A host sent to repair twice, back in quarantine: the queue shows both and its validation.
  for (auto action : {core::HostAction::kFail, core::HostAction::kRepair, core::HostAction::kRepairComplete,
                      core::HostAction::kQuarantineFail, core::HostAction::kRepairComplete})
    ASSERT_TRUE(fleet_.transitionHosts({{"b1-p1-h05", action, std::nullopt, "xid 79"}}, kAdmin)->at(0).ok());
  auto validation = start({"b1-p1-h05"}, "quarantine", "quarantine-validation");
  ASSERT_TRUE(validation.ok()) << validation.error();
  auto queue = runs_.quarantineView();
  ASSERT_TRUE(queue.ok()) << queue.error();
  ASSERT_EQ(queue->size(), 1u);
  EXPECT_EQ((*queue)[0].row.host.id, "b1-p1-h05");
  EXPECT_EQ((*queue)[0].row.repairs, 2);
  EXPECT_EQ((*queue)[0].row.last_failure, "xid 79");
  EXPECT_EQ((*queue)[0].row.run_id, validation->row.id);
  EXPECT_EQ((*queue)[0].row.progress["pass"], 1);

  auto a = room_.agent_work.claimWork("b1-p1-h05");
  ASSERT_TRUE(a.ok() && a->has_value());
  ASSERT_TRUE(report(**a, "b1-p1-h05", 0)[0].ok());
  EXPECT_EQ(fleet_.state("b1-p1-h05"), core::HostState::kAvailable) << "quarantine validation passed";
  EXPECT_EQ(fleet_.audits().back().actor, "agent:b1-p1-h05");
}

TEST_F(FakeRunStoreTest, ListsRunsNewestFirstInPagesAndByHost) {
  for (const auto* h : {"b1-p1-h01", "b1-p1-h02", "b1-p1-h01"}) ASSERT_TRUE(start({h}).ok());
  auto first = runs_.listRuns({}, {"", 2});
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_EQ(first->items.size(), 2u);
  EXPECT_EQ(first->items[0].id, "r-3");
  EXPECT_EQ(first->items[0].pods, (std::vector<std::string>{"b1-p1"}));
  ASSERT_TRUE(first->next_cursor);
  auto second = runs_.listRuns({}, {*first->next_cursor, 2});
  ASSERT_EQ(second->items.size(), 1u);
  EXPECT_EQ(second->items[0].id, "r-1");
  EXPECT_FALSE(second->next_cursor);
  runs::RunFilter by_host;
  by_host.host = "b1-p1-h01";
  EXPECT_EQ(runs_.listRuns(by_host, {})->items.size(), 2u);
  EXPECT_EQ(runs_.listRuns({}, {"r-2", 10}).error().code, ErrorCode::kInvalidArgument);
}

TEST_F(FakeRunStoreTest, APutWorkflowIsListedAndIfMatchNeedsTheCurrentVersion) {
  const std::string yaml = std::string(FakeRunStore::kWorkflow).replace(6, 4, "burn");
  auto put = room_.workflows.putWorkflow("burn", yaml, kAdmin);
  ASSERT_TRUE(put.ok()) << put.error();
  auto listed = room_.workflows.listWorkflows();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].row.name, "burn");
  core::IfMatch stale{.etags = {"\"nope\""}};
  EXPECT_EQ(room_.workflows.putWorkflow("burn", yaml, kAdmin, stale).error().code, ErrorCode::kPreconditionFailed);
  core::IfMatch current{.etags = {runs::workflowEtag(put->hash)}};
  EXPECT_TRUE(room_.workflows.putWorkflow("burn", yaml, kAdmin, current).ok());
}

TEST_F(FakeRunStoreTest, HostsThatStoppedPollingAreMarkedUnreachableOnce) {
  ASSERT_TRUE(store_.recordHeartbeats({{"b1-p1-h01", "boot-1", clock_.now()}, {"b1-p1-h02", "boot-2", clock_.now()}}).ok());
  clock_.advance(std::chrono::seconds(100));
  ASSERT_TRUE(store_.recordHeartbeats({{"b1-p1-h02", "boot-2", clock_.now()}}).ok());
  EXPECT_EQ(fleet_.host("b1-p1-h02")->last_seen, clock_.now());
  const auto cutoff = clock_.now() - std::chrono::seconds(90);
  EXPECT_EQ(store_.markUnreachable(cutoff).value(), (std::vector<std::string>{"b1-p1-h01"}));
  EXPECT_TRUE(store_.markUnreachable(cutoff)->empty());
}

}  // namespace
}  // namespace kiln::rollouts::testing
