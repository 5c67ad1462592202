// The rollout store's guarantees that only a real PostgreSQL can show: an operator's pod verb
// and the controller's completion of the rollout are serialised on the rollout's row, so a
// retried pod can never be left pending in a rollout that is already completed.

#include "orchestrator/db/pg_rollout_store.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/db/tests/fleet_fixture.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using rollouts::PodPhase;
using rollouts::PodUpdate;

class PgRolloutStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<core::PodSpec> pods;
    for (const char* pod : {"prn-b01-p1", "prn-b01-p2"})
      pods.push_back(fixture::podSpec("prn", "prn-b01", pod, core::Platform::kCatalina));
    ASSERT_TRUE(fleet_->importFleet(fixture::fleetOf(pods), admin_).ok());
    rollouts::Bundle bundle;
    bundle.name = "fw";
    bundle.version = "2";
    bundle.platforms = {"catalina"};
    bundle.components = {{"driver", "580.1", "https://a/d.run", std::string(64, 'a')}};
    auto put = store_->putBundle(bundle, admin_, std::nullopt);
    ASSERT_TRUE(put.ok()) << put.error();
    bundle_ = put->first.bundle.id;
  }

  // A running rollout over both pods: p1 succeeded, p2 failed; every pod finished.
  std::string finishedButRunning() {
    auto id = store_->nextRolloutId();
    EXPECT_TRUE(id.ok());
    rollouts::RolloutRow row;
    row.id = *id;
    row.bundle_id = bundle_;
    row.selector.pods = {"prn-b01-p1", "prn-b01-p2"};
    row.policy.max_concurrent_pods = 3;
    row.plan = json::object();
    std::vector<rollouts::RolloutPodRow> pods(2);
    pods[0].pod = "prn-b01-p1";
    pods[1].pod = "prn-b01-p2";
    pods[1].position = 1;
    EXPECT_TRUE(store_->createRollout(row, pods, admin_).ok());
    EXPECT_TRUE(store_->transition(*id, {rollouts::RolloutState::kCreated}, rollouts::RolloutState::kRunning, "", admin_).ok());
    EXPECT_TRUE(store_->updatePods(*id, {PodUpdate{"prn-b01-p1", PodPhase::kPending, PodPhase::kSucceeded},
                                         PodUpdate{"prn-b01-p2", PodPhase::kPending, PodPhase::kFailed}},
                                   {})
                    .ok());
    return *id;
  }

  PodUpdate retry(const std::string& pod) {
    PodUpdate u{pod, PodPhase::kFailed, PodPhase::kPending};
    u.only_while = {rollouts::RolloutState::kRunning, rollouts::RolloutState::kPaused, rollouts::RolloutState::kHalted};
    return u;
  }

  std::string phase(const std::string& id, const std::string& pod) {
    return db_.query("SELECT phase FROM rollout_pods WHERE rollout_id = '" + id + "' AND pod_id = '" + pod + "'");
  }

  kiln::testing::TestDatabase db_;
  std::unique_ptr<core::Store> fleet_ = makePgStore({db_.url(), 4});
  std::unique_ptr<rollouts::RolloutStore> store_ = makePgRolloutStore({db_.url(), 4});
  core::Actor admin_{"test-admin", "test"};
  std::string bundle_;
};

TEST_F(PgRolloutStoreTest, ASignedBundlesChecksumsAndSignatureComeBack) {
  rollouts::Bundle b;
  b.name = "fw-signed";
  b.version = "1";
  b.platforms = {"catalina"};
  b.components = {{"driver", "580.1", "https://a/d.run", std::string(64, 'b')}};
  b.checksums = std::string(64, 'b') + "  d.run\n";
  b.signature = "-----BEGIN PGP SIGNATURE-----\nx\n-----END PGP SIGNATURE-----\n";
  auto put = store_->putBundle(b, admin_, std::nullopt);
  ASSERT_TRUE(put.ok()) << put.error();
  auto got = store_->getBundle(put->first.bundle.id);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->bundle.checksums, b.checksums);
  EXPECT_EQ((*got)->bundle.signature, b.signature);
  b.id = put->first.bundle.id;
  EXPECT_EQ((*got)->bundle, b);
}

TEST_F(PgRolloutStoreTest, TheSelectorAndPolicyComeBackAsTheValuesThatWereStored) {
  const std::string id = finishedButRunning();
  auto row = store_->getRollout(id);
  ASSERT_TRUE(row.ok()) << row.error();
  EXPECT_EQ(row->selector.pods, (std::vector<std::string>{"prn-b01-p1", "prn-b01-p2"}));
  rollouts::Policy expected;
  expected.max_concurrent_pods = 3;
  EXPECT_EQ(row->policy, expected);
  // A policy edited by hand into something that no longer parses fails the read, whole.
  db_.query("UPDATE rollouts SET policy = '{\"max_concurrent_pods\": 0}' WHERE id = '" + id + "'");
  auto broken = store_->getRollout(id);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("stored policy does not parse"), std::string::npos) << broken.error().message;
}

TEST_F(PgRolloutStoreTest, PodSnapshotsReadThePodStateAndAnUnknownOneIsAStoreError) {
  auto snaps = store_->podSnapshots({});
  ASSERT_TRUE(snaps.ok()) << snaps.error();
  ASSERT_EQ(snaps->size(), 2u);
  EXPECT_EQ((*snaps)[0].state, core::PodState::kInService);
  db_.query("UPDATE pods SET state = 'levitating' WHERE id = 'prn-b01-p2'");
  snaps = store_->podSnapshots({});
  ASSERT_FALSE(snaps.ok());
  EXPECT_EQ(snaps.error().code, ErrorCode::kInternal);
  EXPECT_NE(snaps.error().message.find("unknown pod state 'levitating'"), std::string::npos) << snaps.error();
}

TEST_F(PgRolloutStoreTest, CompletionIsRefusedWhileAPodIsUnfinishedAndAbortWhileOneIsInFlight) {
  const std::string id = finishedButRunning();
  ASSERT_TRUE(store_->updatePods(id, {retry("prn-b01-p2")}, {}).ok());
  auto done = store_->transition(id, {rollouts::RolloutState::kRunning}, rollouts::RolloutState::kCompleted, "every pod finished", admin_);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().code, ErrorCode::kConflict);
  EXPECT_NE(done.error().message.find("1 unfinished pod"), std::string::npos) << done.error().message;
  EXPECT_EQ(db_.query("SELECT state FROM rollouts WHERE id = '" + id + "'"), "running");

  // Aborting with a pending pod may end (the pod never starts); with one draining it may not.
  ASSERT_TRUE(store_->transition(id, {rollouts::RolloutState::kRunning}, rollouts::RolloutState::kAborting, "", admin_).ok());
  ASSERT_TRUE(store_->updatePods(id, {PodUpdate{"prn-b01-p2", PodPhase::kPending, PodPhase::kDraining}}, {}).ok());
  EXPECT_FALSE(store_->transition(id, {rollouts::RolloutState::kAborting}, rollouts::RolloutState::kAborted, "", admin_).ok());
  ASSERT_TRUE(store_->updatePods(id, {PodUpdate{"prn-b01-p2", PodPhase::kDraining, PodPhase::kAborted}}, {}).ok());
  EXPECT_TRUE(store_->transition(id, {rollouts::RolloutState::kAborting}, rollouts::RolloutState::kAborted, "", admin_).ok());
}

TEST_F(PgRolloutStoreTest, AVerbsUpdateIsRefusedWholeInAFinishedRolloutOrWhenThePodMovedOn) {
  const std::string id = finishedButRunning();
  // The controller's own update of a pod that moved on is skipped quietly; a verb's is a 409.
  EXPECT_TRUE(store_->updatePods(id, {PodUpdate{"prn-b01-p1", PodPhase::kFailed, PodPhase::kPending}}, {}).ok());
  auto moved = store_->updatePods(id, {retry("prn-b01-p1")}, {{"prn-b01-p1", "retry", "retry by test"}});
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code, ErrorCode::kConflict);
  EXPECT_EQ(phase(id, "prn-b01-p1"), "succeeded");

  ASSERT_TRUE(store_->transition(id, {rollouts::RolloutState::kRunning}, rollouts::RolloutState::kCompleted, "every pod finished", admin_).ok());
  const std::string events = db_.query("SELECT count(*) FROM rollout_events WHERE rollout_id = '" + id + "'");
  auto late = store_->updatePods(id, {retry("prn-b01-p2")}, {{"prn-b01-p2", "retry", "retry by test"}});
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kConflict);
  EXPECT_NE(late.error().message.find("is completed"), std::string::npos) << late.error().message;
  EXPECT_EQ(phase(id, "prn-b01-p2"), "failed");
  EXPECT_EQ(db_.query("SELECT count(*) FROM rollout_events WHERE rollout_id = '" + id + "'"), events)
      << "a refused verb writes no event";
}

TEST_F(PgRolloutStoreTest, ARetryRacingTheCompletionNeverLeavesAPendingPodInACompletedRollout) {
  int retried = 0, completed = 0;
  for (int round = 0; round < 40; ++round) {
    const std::string id = finishedButRunning();
    bool retry_ok = false, complete_ok = false;
    std::thread verb([&] { retry_ok = store_->updatePods(id, {retry("prn-b01-p2")}, {}).ok(); });
    std::thread controller(
        [&] { complete_ok = store_->transition(id, {rollouts::RolloutState::kRunning}, rollouts::RolloutState::kCompleted, "every pod finished", admin_).ok(); });
    verb.join();
    controller.join();
    const std::string state = db_.query("SELECT state FROM rollouts WHERE id = '" + id + "'");
    const std::string p2 = phase(id, "prn-b01-p2");
    ASSERT_NE(retry_ok, complete_ok) << "round " << round << ": exactly one of the two wins";
    if (retry_ok) {
      EXPECT_EQ(state, "running") << "round " << round;
      EXPECT_EQ(p2, "pending") << "round " << round;
      ++retried;
    } else {
      EXPECT_EQ(state, "completed") << "round " << round;
      EXPECT_EQ(p2, "failed") << "round " << round;
      ++completed;
    }
    // Both pods leave the way free for the next round's rollout.
    db_.query("UPDATE rollouts SET state = 'aborted' WHERE id = '" + id + "'");
  }
  std::printf("retry won %d rounds, completion %d\n", retried, completed);
}

}  // namespace
}  // namespace kiln::db
