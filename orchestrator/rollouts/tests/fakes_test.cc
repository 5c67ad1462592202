// The rollout fakes keep the promises of the interfaces they stand for (rollout_store.h,
// core/store.h), so that the service's and the controller's tests mean what PostgreSQL would.

#include "orchestrator/rollouts/tests/fakes.h"

#include <gtest/gtest.h>

namespace kiln::rollouts::testing {
namespace {

using nlohmann::json;
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
  EXPECT_EQ((*events)[0]["kind"], "paused");
  EXPECT_EQ((*events)[0]["message"], "lunch");
  EXPECT_EQ((*events)[1]["message"], "created -> running");  // no reason: the move, as the SQL writes it
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

}  // namespace
}  // namespace kiln::rollouts::testing
