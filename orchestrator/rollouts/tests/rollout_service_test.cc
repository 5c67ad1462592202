// RolloutController's pass (tick) against the in-memory fakes: what it reads and writes
// per pod, and the decisions it records.

#include "orchestrator/rollouts/rollout_service.h"

#include <gtest/gtest.h>

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/rollouts/testing/fake_rollout_store.h"
#include "orchestrator/rollouts/testing/rollouts_under_test.h"
#include "orchestrator/rollouts/rollout_internal.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/runs/testing/fake_run_store.h"
#include "orchestrator/scheduler/testing/fake_driver.h"

namespace kiln::rollouts {
namespace {

using nlohmann::json;
using core::testing::FakeFleet;
using runs::testing::FakeRunStore;

class RolloutServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bundle_.id = "b-1";
    bundle_.name = "fw";
    bundle_.version = "2";
    bundle_.platforms = {"catalina"};
    bundle_.workflow = "upgrade";
    bundle_.components = {{"driver", "580.1", "https://a/d.run", std::string(64, 'a')}};
    for (int i = 1; i <= 4; ++i) fleet_.addPod("b1-p" + std::to_string(i), "b1");
  }
  testing::RolloutsUnderTest& service(ControllerOptions o = {}) {
    o.validation_workflow = "validate";
    service_ = std::make_unique<testing::RolloutsUnderTest>(fleet_, rollouts_, runs_, clock_, std::move(o));
    return *service_;
  }
  // Nothing but max_concurrent_pods limits admission.
  static Policy policy(int max_concurrent) { return testing::onlyConcurrencyLimits(max_concurrent); }
  PodPhase phase(const std::string& pod) { return rollouts_.pod("ro-1", pod).phase; }

  Bundle bundle_;
  FakeFleet fleet_;
  testing::FakeRolloutStore rollouts_{fleet_};
  FakeRunStore run_store_;
  core::FakeClock clock_;
  runs::RunsRoom room_{fleet_, run_store_, clock_, {}, [](const std::string&) {}};
  runs::RunService& runs_ = room_.runs;
  std::unique_ptr<testing::RolloutsUnderTest> service_;
};

TEST_F(RolloutServiceTest, InstallParamsNameArtifactsWithTheirSha256AndCarryTheBundlesSignature) {
  const std::string hmc(64, 'a'), nic(64, 'b');
  Bundle b = bundle_;
  b.components = {{"hmc_bundle", "1.4.0", "https://fw.example/hmc.fwpkg", hmc},
                  {"nic", "28.44", "/opt/kiln/fw/cx7.bin", nic},
                  {"driver", "580.1", "https://a/d.run", std::string(64, 'c')}};
  b.checksums = hmc + "  hmc.fwpkg\n" + nic + "  cx7.bin\n";
  b.signature = "SIG";
  const json p = installParams(b, {"tray_package", "nic_image", "artifact_checksums", "artifact_signature",
                                   "target_hmc_bundle", "driver_artifact"});
  EXPECT_EQ(p, (json{{"tray_package", "https://fw.example/hmc.fwpkg#sha256=" + hmc},
                     {"nic_image", "/opt/kiln/fw/cx7.bin#sha256=" + nic},
                     {"artifact_checksums", b.checksums},
                     {"artifact_signature", "SIG"},
                     {"target_hmc_bundle", "1.4.0"},
                     {"driver_artifact", "https://a/d.run"}}));
  // Only what the workflow declares; an unsigned bundle's are empty.
  b.checksums = b.signature = "";
  EXPECT_EQ(installParams(b, {"nic_image", "artifact_signature"}),
            (json{{"nic_image", "/opt/kiln/fw/cx7.bin#sha256=" + nic}, {"artifact_signature", ""}}));
  EXPECT_EQ(installParams(b, {"target_nic"}), (json{{"target_nic", "28.44"}}));
  // A BMC image, as tray-bmc-firmware takes it (issue 32): the artifact, its sha256 and version.
  b.components.push_back({"bmc", "25.09-1", "https://fw.example/bmc.fwpkg", std::string(64, 'd')});
  EXPECT_EQ(installParams(b, {"bmc_image", "bmc_sha256", "bmc_version"}),
            (json{{"bmc_image", "https://fw.example/bmc.fwpkg#sha256=" + std::string(64, 'd')},
                  {"bmc_sha256", std::string(64, 'd')},
                  {"bmc_version", "25.09-1"}}));
  // Switch-tray firmware, as switch-tray-firmware takes it.
  b.components.push_back({"nvswitch", "36.2601.0001", "https://fw.example/nvsw.fwpkg", std::string(64, 'e')});
  EXPECT_EQ(installParams(b, {"nvswitch_image", "nvswitch_sha256", "nvswitch_version"}),
            (json{{"nvswitch_image", "https://fw.example/nvsw.fwpkg#sha256=" + std::string(64, 'e')},
                  {"nvswitch_sha256", std::string(64, 'e')},
                  {"nvswitch_version", "36.2601.0001"}}));
}

TEST_F(RolloutServiceTest, AnUploadedBundleMustPassTheTrustRuleOrNothingIsStored) {
  const core::Actor admin{"t-1", "test"};
  int verified = 0;
  SignatureCheck verify = [&](const std::string& data, const std::string& sig) -> Status {
    ++verified;
    if (sig != "good signature of " + data) return invalidContent("gpgv: BAD signature");
    return okStatus();
  };
  RolloutService keyed(fleet_, rollouts_, runs_, clock_, RolloutServiceOptions{nullptr, verify});
  Bundle b = bundle_;
  b.id.clear();
  auto unsigned_put = keyed.putBundle(b, admin);
  ASSERT_FALSE(unsigned_put.ok());
  EXPECT_EQ(unsigned_put.error().code, ErrorCode::kInvalidContent);
  EXPECT_NE(unsigned_put.error().message.find("bundle fw@2: not signed"), std::string::npos) << unsigned_put.error();

  b.checksums = std::string(64, 'f') + "  other.bin\n";  // does not list the driver
  b.signature = "good signature of " + b.checksums;
  auto missing = keyed.putBundle(b, admin);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("is not in the signed checksums"), std::string::npos) << missing.error();

  b.checksums = std::string(64, 'a') + "  d.run\n";
  b.signature = "a forged signature";
  auto forged = keyed.putBundle(b, admin);
  ASSERT_FALSE(forged.ok());
  EXPECT_NE(forged.error().message.find("does not verify"), std::string::npos) << forged.error();
  auto listed = keyed.listBundles();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty()) << "nothing stored for a refused bundle";

  b.signature = "good signature of " + b.checksums;
  auto good = keyed.putBundle(b, admin);
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->row.bundle.checksums, b.checksums);
  EXPECT_EQ(verified, 2);

  // Without trusted keys an unsigned bundle is stored as before.
  RolloutService open(fleet_, rollouts_, runs_, clock_, RolloutServiceOptions{});
  Bundle plain = bundle_;
  plain.version = "3";
  EXPECT_TRUE(open.putBundle(plain, admin).ok());
}

TEST_F(RolloutServiceTest, EachStepMovesAPodsHostsInOneBatchAndReadsRunStatusOnlyOnceARunFinished) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(2));
  auto& svc = service();
  svc.tick();  // admits both pods
  ASSERT_EQ(phase("b1-p1"), PodPhase::kDraining);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kDraining);
  EXPECT_EQ(rollouts_.update_pods_calls, 1);  // both admissions in one write
  EXPECT_EQ(rollouts_.pod("ro-1", "b1-p1").before_versions, (json{{"driver", {{"570.1", 18}}}}));

  const int get_pods = fleet_.get_pod_calls, hosts_of_pods = fleet_.hosts_of_pods_calls;
  svc.tick();  // drains: one batch per pod for 18 x (drain + drained)
  // Per pod one read by the controller, and one read of its hosts by startRun (once per pod,
  // not per host).
  EXPECT_EQ(fleet_.get_pod_calls - get_pods, 2);
  EXPECT_EQ(fleet_.hosts_of_pods_calls - hosts_of_pods, 2);
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kUpgrading);
  EXPECT_EQ(fleet_.transition_batches, 2);
  EXPECT_EQ(fleet_.transitions_applied, 2 * 36);
  EXPECT_EQ(fleet_.state("b1-p1-h07"), core::HostState::kMaintenance);

  // Runs in flight: one state query per pass, no run or group read.
  const int get_runs = run_store_.get_run_calls, groups = run_store_.run_groups_calls;
  const int states = run_store_.run_states_calls;
  for (int i = 0; i < 5; ++i) svc.tick();
  EXPECT_EQ(run_store_.run_states_calls, states + 5);
  EXPECT_EQ(run_store_.get_run_calls, get_runs);
  EXPECT_EQ(run_store_.run_groups_calls, groups);

  // p1's upgrade finishes with one host failed: one batch (validation_fail + 17 maintenance_done).
  const std::string upgrade = rollouts_.pod("ro-1", "b1-p1").run_id;
  run_store_.finishRun(upgrade, {"b1-p1-h03"});
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  EXPECT_EQ(phase("b1-p2"), PodPhase::kUpgrading);
  EXPECT_EQ(fleet_.transition_batches, 3);
  EXPECT_EQ(fleet_.state("b1-p1-h03"), core::HostState::kFailed);
  EXPECT_EQ(fleet_.state("b1-p1-h04"), core::HostState::kValidating);

  // Validation passes: one batch (17 validation_pass + repair of the failed host).
  run_store_.finishRun(rollouts_.pod("ro-1", "b1-p1").validation_run_id);
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(fleet_.transition_batches, 4);
  EXPECT_EQ(fleet_.state("b1-p1-h03"), core::HostState::kRepair);
  EXPECT_EQ(fleet_.state("b1-p1-h04"), core::HostState::kAvailable);
  EXPECT_EQ(rollouts_.pod("ro-1", "b1-p1").message, "17 hosts back in service (68 GPUs); spares cover 1 hosts sent to repair");
}

TEST_F(RolloutServiceTest, APassReplayedAfterACrashRefusesTheMovesItAlreadyMadeAndCarriesOn) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  run_store_.finishRun(rollouts_.pod("ro-1", "b1-p1").run_id);
  // A kilnd killed after the hosts moved to validating but before the pod row changed: the
  // next pass finds the pod still upgrading with every host moved already.
  for (auto& h : fleet_.pods_.at("b1-p1").hosts) h.state = core::HostState::kValidating;
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  EXPECT_EQ(run_store_.runsOf("validate").size(), 1u);
  run_store_.finishRun(rollouts_.pod("ro-1", "b1-p1").validation_run_id);
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(fleet_.state("b1-p1-h18"), core::HostState::kAvailable);
}

TEST_F(RolloutServiceTest, AResumedPodWhoseHostsAreStillInRepairWaitsInsteadOfFailingAgain) {
  Policy pol = policy(1);
  pol.failure_budget_percent.reset();
  pol.failure_budget_pods = 0;
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, pol);
  auto& svc = service();
  svc.tick();
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  // Three hosts fail the upgrade: 15 of 18 serve, below a 64-GPU slice; they go to repair.
  run_store_.finishRun(rollouts_.pod("ro-1", "b1-p1").run_id, {"b1-p1-h01", "b1-p1-h02", "b1-p1-h03"});
  svc.tick();
  run_store_.finishRun(rollouts_.pod("ro-1", "b1-p1").validation_run_id);
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kFailed);
  EXPECT_EQ(fleet_.state("b1-p1-h02"), core::HostState::kRepair);
  svc.tick();
  ASSERT_EQ(rollouts_.rollouts_.at("ro-1").state, RolloutState::kHalted);

  // Resumed while the three hosts are still in repair: the pod waits; the rollout goes on.
  ASSERT_TRUE(svc.verb("ro-1", "resume", {"t-1", "sre"}).ok());
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending);
  for (int i = 0; i < 3; ++i) svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending);
  EXPECT_EQ(rollouts_.pod("ro-1", "b1-p1").waiting_reason,
            "repair: 3 hosts in repair; the pod needs 16 of 18 to serve 64 GPUs");
  EXPECT_EQ(rollouts_.rollouts_.at("ro-1").state, RolloutState::kRunning);
  EXPECT_TRUE(inFlight(phase("b1-p2")));  // p1 holds no slot
  EXPECT_EQ(rollouts_.pod("ro-1", "b1-p1").attempt, 1);

  // Repair and quarantine validation give two hosts back: 17 can serve, the pod starts again.
  fleet_.setState("b1-p1-h01", core::HostState::kAvailable);
  fleet_.setState("b1-p1-h02", core::HostState::kAvailable);
  rollouts_.pod("ro-1", "b1-p2").phase = PodPhase::kSucceeded;  // frees the slot
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kDraining);
  EXPECT_EQ(rollouts_.pod("ro-1", "b1-p1").attempt, 2);
  EXPECT_EQ(rollouts_.pod("ro-1", "b1-p1").waiting_reason, "");
}

// The fake scheduler driver takes asks and answers only when the test says so, as a slow or
// hung scheduler would: the pass that asks must not wait for it.

TEST_F(RolloutServiceTest, TheSchedulerHookIsAskedWithoutWaitingAndItsAnswerIsLearnedOnALaterPass) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(1));
  for (int i = 1; i <= 16; ++i) fleet_.setState("b1-p1-h" + std::string(i < 10 ? "0" : "") + std::to_string(i), core::HostState::kAllocated);
  scheduler::testing::FakeDriver scheduler;
  ControllerOptions o;
  o.scheduler = &scheduler;
  auto& svc = service(o);

  svc.tick();
  ASSERT_EQ(scheduler.asks().size(), 1u);
  EXPECT_EQ(scheduler.asks()[0].request.pod, "b1-p1");
  EXPECT_EQ(scheduler.asks()[0].request.rollout, "ro-1");
  EXPECT_EQ(scheduler.asks()[0].request.hosts.size(), 16u);
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending);
  EXPECT_NE(rollouts_.pod("ro-1", "b1-p1").waiting_reason.find("allocated"), std::string::npos);
  // p1 holds the one slot while the scheduler answers.
  EXPECT_EQ(phase("b1-p2"), PodPhase::kPending);
  EXPECT_TRUE(rollouts_.eventsOf("release").empty());  // nothing is known yet

  // No answer: passes go on and do not ask again, even past the retry and repeat times.
  for (int i = 0; i < 3; ++i) {
    clock_.advance(std::chrono::minutes(6));
    svc.tick();
  }
  EXPECT_EQ(scheduler.asks().size(), 1u);

  // The scheduler could not be told: the next pass records it, and asks again 15 s after the ask.
  scheduler.answer(0, false);
  svc.tick();
  EXPECT_EQ(rollouts_.eventsOf("release"),
            (std::vector<std::string>{"b1-p1: the job scheduler could not be reached; asking again in 15 s"}));
  EXPECT_EQ(scheduler.asks().size(), 2u);  // the first ask is long past 15 s: asked again at once

  // Told: asked again only every 5 minutes while the pod stays allocated.
  scheduler.answer(1, true);
  svc.tick();
  EXPECT_EQ(rollouts_.eventsOf("release").back(), "b1-p1: asked the job scheduler to release 16 allocated hosts");
  clock_.advance(std::chrono::seconds(299));
  svc.tick();
  EXPECT_EQ(scheduler.asks().size(), 2u);
  clock_.advance(std::chrono::seconds(1));
  svc.tick();
  EXPECT_EQ(scheduler.asks().size(), 3u);

  // The job leaves: the pod drains. A late answer to the last ask is still recorded.
  for (auto& h : fleet_.pods_.at("b1-p1").hosts) h.state = core::HostState::kAvailable;
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kDraining);
  scheduler.answer(2, true);
  svc.tick();
  EXPECT_EQ(rollouts_.eventsOf("release").size(), 3u);
}

TEST_F(RolloutServiceTest, AnAnswerArrivingAfterTheServiceIsGoneIsHarmless) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  fleet_.setState("b1-p1-h01", core::HostState::kAllocated);
  scheduler::testing::FakeDriver scheduler;
  ControllerOptions o;
  o.scheduler = &scheduler;
  service(o).tick();
  ASSERT_EQ(scheduler.asks().size(), 1u);
  service_.reset();
  scheduler.answer(0, true);  // from the hook's thread, in kilnd, during shutdown
}

}  // namespace
}  // namespace kiln::rollouts
