// The rollout controller (RolloutController::tick, with RolloutService's verbs) driven through whole pod
// lifecycles against the in-memory fakes, time moved only by a FakeClock: the failure budget's
// halt, pause and resume, abort, retry, skip, rollback, spares covering failed hosts, soak
// between waves, and the durations and ETA of the view.

#include "orchestrator/rollouts/consistency.h"
#include "orchestrator/rollouts/rollout_service.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/rollouts/testing/fake_rollout_store.h"
#include "orchestrator/rollouts/testing/rollouts_under_test.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/runs/testing/fake_run_store.h"
#include "orchestrator/scheduler/testing/fake_driver.h"

namespace kiln::rollouts {
namespace {

using core::testing::FakeFleet;
using nlohmann::json;
using runs::testing::FakeRunStore;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const core::Actor kSre{"t-1", "sre"};

// Each test runs with the pods in flight reconciled one after another and on four threads.
class RolloutControllerTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    bundle_ = bundle("b-2", "2", "580.1");
    for (int i = 1; i <= 5; ++i) fleet_.addPod("b1-p" + std::to_string(i), "b1");
  }

  // A driver bundle installed by the "upgrade" workflow.
  static Bundle bundle(const std::string& id, const std::string& version, const std::string& driver) {
    Bundle b;
    b.id = id;
    b.name = "fw";
    b.version = version;
    b.platforms = {"catalina"};
    b.workflow = "upgrade";
    b.components = {{"driver", driver, "https://a/d-" + driver + ".run", std::string(64, 'a')}};
    return b;
  }
  testing::RolloutsUnderTest& service(scheduler::testing::FakeDriver::Gate gate = nullptr) {
    ControllerOptions o;
    o.validation_workflow = "validate";
    if (gate) {
      scheduler_.setGate(std::move(gate));
      o.scheduler = &scheduler_;
    }
    o.log = &log_;
    o.reconcile_threads = GetParam();
    service_ = std::make_unique<testing::RolloutsUnderTest>(fleet_, rollouts_, runs_, clock_, std::move(o));
    return *service_;
  }
  // One wave, no soak; only max_concurrent_pods limits admission, unless `change` says more.
  static Policy policy(int max_concurrent, const std::function<void(Policy&)>& change = {}) {
    Policy p = testing::onlyConcurrencyLimits(max_concurrent);
    if (change) change(p);
    return p;
  }
  static void budgetPods(Policy& p, int pods) {
    p.failure_budget_percent.reset();
    p.failure_budget_pods = pods;
  }

  RolloutPodRow& pod(const std::string& p, const std::string& rollout = "ro-1") { return rollouts_.pod(rollout, p); }
  PodPhase phase(const std::string& p, const std::string& rollout = "ro-1") { return pod(p, rollout).phase; }
  std::string state(const std::string& rollout = "ro-1") {
    return rolloutStateName(rollouts_.rollouts_.at(rollout).state);
  }

  static std::string host(const std::string& pod, int tray) {
    return pod + "-h" + (tray < 10 ? "0" : "") + std::to_string(tray);
  }
  static std::set<std::string> hosts(const std::string& pod, const std::set<int>& trays) {
    std::set<std::string> out;
    for (int t : trays) out.insert(host(pod, t));
    return out;
  }
  static std::set<int> everyTray() {
    std::set<int> out;
    for (int t = 1; t <= 18; ++t) out.insert(t);
    return out;
  }
  int hostsIn(const std::string& pod, core::HostState host_state) {
    int n = 0;
    for (const auto& h : fleet_.pods_.at(pod).hosts) n += h.state == host_state;
    return n;
  }

  // The pod's upgrade (or validation) run ends: the hosts of `failed_trays` fail, the others pass.
  void finishUpgrade(const std::string& p, const std::set<int>& failed_trays = {}) {
    run_store_.finishRun(pod(p).run_id, hosts(p, failed_trays));
  }
  void finishValidation(const std::string& p, const std::set<int>& failed_trays = {}) {
    run_store_.finishRun(pod(p).validation_run_id, hosts(p, failed_trays));
  }
  // Rollout ro-0 of bundle b-1 (driver 570.1) upgraded `pods` a day ago.
  void upgradedADayAgo(const std::vector<std::string>& pods) {
    rollouts_.addRollout("ro-0", bundle("b-1", "1", "570.1"), pods, policy(4), "completed");
    for (auto& p : rollouts_.pods_.at("ro-0")) {
      p.phase = PodPhase::kSucceeded;
      p.started_at = p.finished_at = clock_.now();
    }
    clock_.advance(std::chrono::hours(24));
  }
  bool everyGroupStopping(const std::string& run) {
    const auto& groups = run_store_.groupsOf(run);
    return !groups.empty() &&
           std::all_of(groups.begin(), groups.end(), [](const runs::GroupState& g) { return g.stopping; });
  }

  Bundle bundle_;
  FakeFleet fleet_;
  core::FakeClock clock_;
  testing::FakeRolloutStore rollouts_{fleet_, &clock_};
  FakeRunStore run_store_;
  runs::RunsRoom room_{fleet_, run_store_, clock_, {}, [](const std::string&) {}};
  runs::RunService& runs_ = room_.runs;
  scheduler::testing::FakeDriver scheduler_;  // before the service, which holds it
  std::unique_ptr<testing::RolloutsUnderTest> service_;
  RecordingLogger log_;
};

// ---- writes the pass cannot make ----

TEST_P(RolloutControllerTest, AWriteThePassCannotMakeIsLoggedOnceAMinuteAndTheNextPassTriesAgain) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  rollouts_.fail_update_pods = unavailable("connection to the database lost");
  svc.tick();
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending) << "nothing was admitted";
  EXPECT_EQ(log_.count(LogLevel::kError, "rollout ro-1: admitting 1 pods: connection to the database lost"), 1)
      << "the same failure twice within a minute is one line";
  clock_.advance(minutes(2));
  svc.tick();
  EXPECT_EQ(log_.count(LogLevel::kError, "rollout ro-1: admitting 1 pods"), 2);

  rollouts_.fail_update_pods.reset();
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kDraining) << "the database is back: the next pass admits it";

  // A conflict (the state moved on under the pass) is news, not an error.
  rollouts_.fail_update_pods = conflict("pod b1-p1 moved on");
  svc.tick();
  EXPECT_EQ(log_.count(LogLevel::kInfo, "rollout ro-1: b1-p1 to upgrading: pod b1-p1 moved on"), 1);
  EXPECT_EQ(log_.count(LogLevel::kError, "moved on"), 0);
}

// ---- staging (issue 31) ----

// A bundle whose ConnectX image the stage workflow fetches: its run comes before any drain, the
// pod's waiting reason names it, each pass finds the same run, and the drain starts only once
// every host has the file; a host that could not get it fails the pod with no host drained.
class StagingTest : public RolloutControllerTest {
 protected:
  void SetUp() override {
    RolloutControllerTest::SetUp();
    bundle_.components.push_back(
        {"nic", "28.45.1200", "https://a/fw-ConnectX7-rel-28_45_1200.bin", std::string(64, 'b')});
    auto put =
        room_.workflows.putWorkflow("artifact-stage",
                                    "name: artifact-stage\nversion: \"1\"\ndescription: t\nscope: host\n"
                                    "params:\n  nic_image: {type: artifact, default: \"\"}\n"
                                    "steps:\n  - id: stage\n    run: [true, \"{{nic_image}}\"]\n    timeout: 1h\n",
                                    kSre);
    ASSERT_TRUE(put.ok()) << put.error();
  }
  std::string stageRun(const std::string& p) {
    auto ids = run_store_.runsOf("artifact-stage");
    for (const auto& id : ids)
      if (run_store_.runs_.at(id).owner == "ro-1/" + p + "/stage/1") return id;
    return "";
  }
};

TEST_P(StagingTest, ThePodsArtifactsAreStagedBeforeAnyHostDrains) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kDraining);
  const std::string stage = stageRun("b1-p1");
  ASSERT_FALSE(stage.empty());
  EXPECT_EQ(run_store_.runsOf("artifact-stage").size(), 1u) << "each pass finds the same run";
  EXPECT_EQ(pod("b1-p1").waiting_reason,
            "staging artifacts on 18 hosts before the drain (artifact-stage " + stage + ")");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18) << "jobs keep running while the files arrive";
  EXPECT_TRUE(pod("b1-p1").run_id.empty());
  EXPECT_EQ(run_store_.runs_.at(stage).params.value("nic_image", ""),
            "https://a/fw-ConnectX7-rel-28_45_1200.bin#sha256=" + std::string(64, 'b'));

  run_store_.finishRun(stage);
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kMaintenance), 18);
  EXPECT_EQ(run_store_.runsOf("artifact-stage").size(), 1u);
}

TEST_P(StagingTest, AHostThatCannotGetItsFilesFailsThePodBeforeAnyDrain) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  const std::string stage = stageRun("b1-p1");
  ASSERT_FALSE(stage.empty());
  run_store_.finishRun(stage, {host("b1-p1", 7)});
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kFailed);
  EXPECT_NE(pod("b1-p1").message.find("staging failed on " + host("b1-p1", 7)), std::string::npos)
      << pod("b1-p1").message;
  EXPECT_NE(pod("b1-p1").message.find("no host was drained"), std::string::npos);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18);
}

TEST_P(StagingTest, ABundleWithoutFilesTheStageTakesIsNotStaged) {
  rollouts_.addRollout("ro-1", bundle("b-3", "3", "590.1"), {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  EXPECT_TRUE(run_store_.runsOf("artifact-stage").empty());
}

INSTANTIATE_TEST_SUITE_P(Threads, StagingTest, ::testing::Values(1, 4));

// ---- failure budget ----

TEST_P(RolloutControllerTest, MoreFailedPodsThanTheBudgetHaltTheRolloutWhilePodsInFlightFinish) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3", "b1-p4", "b1-p5"},
                       policy(3, [](Policy& p) { budgetPods(p, 1); }));
  auto& svc = service();
  svc.tick();  // admits p1..p3
  svc.tick();  // drains them and starts their upgrades
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p3"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p4"), PodPhase::kPending);

  // p1: three hosts fail the flash; 15 of 18 serve, short of a 64-GPU slice.
  finishUpgrade("b1-p1", {1, 2, 3});
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kFailed);
  EXPECT_EQ(pod("b1-p1").message, "only 60 healthy GPUs after the upgrade (a slice needs 64)");
  // One failed pod is within a budget of one: the rollout goes on and p4 takes p1's slot.
  EXPECT_EQ(state(), "running");
  EXPECT_EQ(phase("b1-p4"), PodPhase::kDraining);
  svc.tick();
  ASSERT_EQ(phase("b1-p4"), PodPhase::kUpgrading);

  // p2: the flash fails on every host. Two failed pods are more than the budget: the pass that
  // sees it halts the rollout by itself, and admits nothing.
  finishUpgrade("b1-p2", everyTray());
  svc.tick();
  ASSERT_EQ(phase("b1-p2"), PodPhase::kFailed);
  EXPECT_EQ(pod("b1-p2").message, "the upgrade failed on every host: flash failed");
  EXPECT_EQ(state(), "halted");
  EXPECT_EQ(rollouts_.eventsOf("halted"), (std::vector<std::string>{": 2 pods failed; the failure budget allows 1"}));
  auto view = svc.view("ro-1");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->row.state, RolloutState::kHalted);
  EXPECT_EQ(view->row.halt_reason, "2 pods failed; the failure budget allows 1");

  // Halted: p5 is never admitted, however many passes go by...
  for (int i = 0; i < 3; ++i) {
    clock_.advance(minutes(10));
    svc.tick();
  }
  EXPECT_EQ(phase("b1-p5"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p5").waiting_reason, "budget: the rollout is halted (failure budget)");

  // ...while p3 and p4, in flight when it halted, finish and return to service.
  finishUpgrade("b1-p3");
  finishUpgrade("b1-p4");
  svc.tick();
  finishValidation("b1-p3");
  finishValidation("b1-p4");
  svc.tick();
  EXPECT_EQ(phase("b1-p3"), PodPhase::kSucceeded);
  EXPECT_EQ(phase("b1-p4"), PodPhase::kSucceeded);
  EXPECT_EQ(hostsIn("b1-p4", core::HostState::kAvailable), 18);
  svc.tick();
  EXPECT_EQ(state(), "halted");
  EXPECT_EQ(phase("b1-p5"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p5").attempt, 0);
  EXPECT_EQ(hostsIn("b1-p5", core::HostState::kAvailable), 18);
  EXPECT_EQ(run_store_.runsOf("upgrade").size(), 4u);  // none for p5
}

// ---- the job scheduler's drain gate (--scheduler slurm) ----

TEST_P(RolloutControllerTest, ADrainedHostGoesToMaintenanceOnlyWhenTheSchedulersGateOpens) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  std::set<std::string> busy = {host("b1-p1", 3)};  // Slurm still runs a job there
  std::vector<std::string> reasons;
  auto& svc = service([&](const core::HostSummary& h, const std::string& reason) -> std::optional<std::string> {
    reasons.push_back(reason);
    if (busy.count(h.id))
      return "slurm node " + h.id + " is ALLOCATED+DRAIN (job 42 running): waiting for its jobs to leave";
    return std::nullopt;
  });
  svc.tick();  // admits p1
  svc.tick();  // drains it
  EXPECT_EQ(phase("b1-p1"), PodPhase::kDraining);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kMaintenance), 17);
  EXPECT_EQ(fleet_.state(host("b1-p1", 3)), core::HostState::kDraining);
  EXPECT_EQ(pod("b1-p1").waiting_reason,
            "slurm node b1-p1-h03 is ALLOCATED+DRAIN (job 42 running): waiting for its jobs to leave");
  EXPECT_TRUE(run_store_.runsOf("upgrade").empty());  // nothing touches the pod while a job runs on it
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons.front(), "kiln: ro-1 upgrade fw 2");
  svc.tick();
  EXPECT_TRUE(run_store_.runsOf("upgrade").empty());

  busy.clear();  // the job left; Slurm shows the node drained and empty
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kMaintenance), 18);
  EXPECT_EQ(run_store_.runsOf("upgrade").size(), 1u);
}

// ---- pods in flight at once ----

TEST_P(RolloutControllerTest, PodsInFlightTakeAPasssStepsAtOnceOnTheReconcileThreadsAndAdmissionWaitsForThem) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3"}, policy(2));
  const bool threads = GetParam() > 1;
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> asked;  // pods whose hosts the gate was asked about
  int inside = 0, most = 0;
  // The first host of each pod waits (on the reconcile threads, real time) until the other
  // pod's drain asks too: only a pass that drains both pods at once gets past it at once.
  auto& svc = service([&](const core::HostSummary& h, const std::string&) -> std::optional<std::string> {
    std::unique_lock lock(mu);
    const bool first = asked.insert(h.pod).second;
    most = std::max(most, ++inside);
    cv.notify_all();
    if (first && threads) cv.wait_for(lock, std::chrono::seconds(10), [&] { return asked.size() >= 2; });
    --inside;
    return std::nullopt;
  });
  svc.tick();  // admits p1 and p2
  svc.tick();  // drains both and starts their upgrades
  EXPECT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  EXPECT_EQ(phase("b1-p2"), PodPhase::kUpgrading);
  EXPECT_EQ(hostsIn("b1-p2", core::HostState::kMaintenance), 18);
  EXPECT_EQ(most, threads ? 2 : 1) << "pods whose drains asked the gate at the same time";
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending) << "two at once: the third waits";

  // Both finish in one pass: the pass admits p3 only after both pods' steps are done, and
  // never more than two are in flight.
  finishUpgrade("b1-p1");
  finishUpgrade("b1-p2");
  svc.tick();
  finishValidation("b1-p1");
  finishValidation("b1-p2");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(phase("b1-p2"), PodPhase::kSucceeded);
  EXPECT_EQ(phase("b1-p3"), PodPhase::kDraining);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18);
  EXPECT_EQ(hostsIn("b1-p2", core::HostState::kAvailable), 18);
}

// ---- pause, resume and verbs in the wrong state ----

TEST_P(RolloutControllerTest, PauseStartsNoNewPodWhilePodsInFlightFinishAndResumeAdmitsAgain) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3"}, policy(2));
  auto& svc = service();
  svc.tick();
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kUpgrading);

  auto paused = svc.verb("ro-1", "pause", kSre);
  ASSERT_TRUE(paused.ok()) << paused.error();
  EXPECT_EQ(paused->row.state, RolloutState::kPaused);
  EXPECT_EQ(rollouts_.eventsOf("paused"), (std::vector<std::string>{": paused by t-1"}));

  // p1 finishes while paused; its slot stays empty.
  finishUpgrade("b1-p1");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18);
  for (int i = 0; i < 3; ++i) {
    clock_.advance(minutes(30));
    svc.tick();
  }
  EXPECT_EQ(state(), "paused");
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p3").waiting_reason, "paused");
  EXPECT_EQ(pod("b1-p3").attempt, 0);

  auto resumed = svc.verb("ro-1", "resume", kSre);
  ASSERT_TRUE(resumed.ok()) << resumed.error();
  EXPECT_EQ(resumed->row.state, RolloutState::kRunning);
  svc.tick();
  EXPECT_EQ(phase("b1-p3"), PodPhase::kDraining);
  EXPECT_EQ(pod("b1-p3").attempt, 1);
  EXPECT_EQ(pod("b1-p3").waiting_reason, "");
}

TEST_P(RolloutControllerTest, AVerbInTheWrongStateIsRefusedAsAConflictAndChangesNothing) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(1), "created");
  auto& svc = service();
  auto refused = [&](const std::string& verb, const std::string& in_state) {
    SCOPED_TRACE(verb + " while " + in_state);
    auto r = svc.verb("ro-1", verb, kSre);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kConflict) << r.error();
    EXPECT_EQ(state(), in_state);
  };

  svc.tick();  // a rollout not started is not worked on
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending);
  refused("pause", "created");
  refused("resume", "created");
  ASSERT_TRUE(svc.verb("ro-1", "start", kSre).ok());
  refused("start", "running");
  refused("resume", "running");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kDraining);
  ASSERT_TRUE(svc.verb("ro-1", "pause", kSre).ok());
  refused("pause", "paused");
  refused("start", "paused");
  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  refused("abort", "aborting");
  refused("resume", "aborting");
  refused("pause", "aborting");
  svc.tick();
  ASSERT_EQ(state(), "aborted");
  refused("resume", "aborted");
  refused("abort", "aborted");
  refused("start", "aborted");
  auto unknown = svc.verb("ro-1", "restart", kSre);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);

  // Only the verbs that were allowed left a trace.
  EXPECT_EQ(rollouts_.eventsOf("running"), (std::vector<std::string>{": started by t-1"}));
  EXPECT_EQ(rollouts_.eventsOf("paused"), (std::vector<std::string>{": paused by t-1"}));
  EXPECT_EQ(rollouts_.eventsOf("aborting"), (std::vector<std::string>{": aborted by t-1"}));
  EXPECT_EQ(phase("b1-p2"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p2").attempt, 0);
}

// ---- abort ----

TEST_P(RolloutControllerTest, APodAbortedRightAfterAdmissionSaysNoHostWasDrained) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();  // admitted: draining, no host moved yet
  ASSERT_EQ(phase("b1-p1"), PodPhase::kDraining);
  ASSERT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18);
  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kAborted);
  EXPECT_EQ(pod("b1-p1").message, "aborted while draining, before any host was drained");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18);
  EXPECT_EQ(state(), "aborted");
}

TEST_P(RolloutControllerTest, AbortStopsPodsInFlightAtASafePointLeavesTheirHostsOutOfServiceAndStartsNoOther) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3", "b1-p4"}, policy(2));
  auto& svc = service();
  svc.tick();                                                      // admits p1, p2
  fleet_.setState(host("b1-p2", 5), core::HostState::kAllocated);  // a job landed on p2 before its drain
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kDraining);
  ASSERT_EQ(hostsIn("b1-p2", core::HostState::kMaintenance), 17);
  const std::string upgrade = pod("b1-p1").run_id;

  auto aborting = svc.verb("ro-1", "abort", kSre);
  ASSERT_TRUE(aborting.ok()) << aborting.error();
  EXPECT_EQ(aborting->row.state, RolloutState::kAborting);
  svc.tick();
  // p1's upgrade is told to stop at a safe point (no flash is cut): the pod waits for it.
  EXPECT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  EXPECT_TRUE(everyGroupStopping(upgrade));
  // p2 had not started its upgrade: it stops now, its drained hosts left drained.
  EXPECT_EQ(phase("b1-p2"), PodPhase::kAborted);
  EXPECT_EQ(pod("b1-p2").message, "aborted while draining: 17 of 18 hosts left draining or in maintenance");
  EXPECT_EQ(hostsIn("b1-p2", core::HostState::kMaintenance), 17);
  EXPECT_EQ(fleet_.state(host("b1-p2", 5)), core::HostState::kAllocated);
  EXPECT_EQ(state(), "aborting");  // p1 is still in flight
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending);

  // The flashes that were running finish: p1 stops there, its hosts still in maintenance,
  // neither validated nor back in service.
  finishUpgrade("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kAborted);
  EXPECT_EQ(pod("b1-p1").message, "aborted: the upgrade stopped at a safe point; hosts left in maintenance");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kMaintenance), 18);
  EXPECT_TRUE(run_store_.runsOf("validate").empty());
  EXPECT_EQ(state(), "aborted");
  EXPECT_EQ(rollouts_.eventsOf("aborted"),
            (std::vector<std::string>{"b1-p2: aborted while draining: 17 of 18 hosts left draining or in maintenance",
                                      "b1-p1: aborted: the upgrade stopped at a safe point; hosts left in maintenance",
                                      ": every pod in flight stopped at a safe point"}));

  // An aborted rollout is done: the pending pods never start.
  clock_.advance(minutes(30));
  EXPECT_EQ(svc.tick(), 0);
  for (const char* p : {"b1-p3", "b1-p4"}) {
    EXPECT_EQ(phase(p), PodPhase::kPending) << p;
    EXPECT_EQ(pod(p).attempt, 0) << p;
    EXPECT_EQ(hostsIn(p, core::HostState::kAvailable), 18) << p;
  }
  EXPECT_EQ(run_store_.runsOf("upgrade").size(), 1u);
}

TEST_P(RolloutControllerTest, AbortLeavesHostsWhoseUpgradeStepNoAgentHadTakenDrainedAndNotFailed) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  // The agents of trays 10-18 have not taken their step yet: the stop withdraws it.
  run_store_.untaken = hosts("b1-p1", {10, 11, 12, 13, 14, 15, 16, 17, 18});
  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  svc.tick();
  finishUpgrade("b1-p1");  // trays 1-9 finish their flash
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kAborted);
  EXPECT_EQ(pod("b1-p1").message, "aborted: the upgrade stopped at a safe point; hosts left in maintenance");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kMaintenance), 18);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kFailed), 0);
}

TEST_P(RolloutControllerTest, AbortLetsAPodInValidationFinishItAndReturnsOnlyTheHostsThatPassed) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", {18});
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  const std::string validation = pod("b1-p1").validation_run_id;

  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  svc.tick();
  EXPECT_TRUE(everyGroupStopping(validation));
  EXPECT_EQ(phase("b1-p1"), PodPhase::kValidating);
  EXPECT_EQ(state(), "aborting");

  // The validation steps that were running finish: tray 17 fails it.
  finishValidation("b1-p1", {17});
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(pod("b1-p1").message, "16 hosts back in service (64 GPUs); spares cover 2 hosts sent to repair");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 16);
  EXPECT_EQ(fleet_.state(host("b1-p1", 17)), core::HostState::kRepair);
  EXPECT_EQ(fleet_.state(host("b1-p1", 18)), core::HostState::kRepair);
  EXPECT_EQ(state(), "aborted");
  EXPECT_EQ(phase("b1-p2"), PodPhase::kPending);
}

TEST_P(RolloutControllerTest, AbortSendsNoHostToRepairWhoseValidationStepAStopWithdrew) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  run_store_.untaken = hosts("b1-p1", {16, 17, 18});
  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  svc.tick();
  finishValidation("b1-p1");  // trays 1-15 finish their validation
  svc.tick();
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kRepair), 0);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kFailed), 0);
  EXPECT_NE(phase("b1-p1"), PodPhase::kFailed);
  for (int t : {16, 17, 18})
    EXPECT_NE(fleet_.state(host("b1-p1", t)), core::HostState::kAvailable) << t;  // not validated
}

// ---- retry ----

TEST_P(RolloutControllerTest, RetryPutsAFailedPodBackToPendingAndUpgradesItAgainAsAttemptTwo) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(2, [](Policy& p) { budgetPods(p, 1); }));
  auto& svc = service();
  svc.tick();
  svc.tick();
  const std::string first = pod("b1-p1").run_id;
  EXPECT_EQ(run_store_.runs_.at(first).owner, "ro-1/b1-p1/upgrade/1");
  finishUpgrade("b1-p1", everyTray());
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kFailed);
  // No host is left to validate: the failed ones go to repair at once.
  ASSERT_EQ(hostsIn("b1-p1", core::HostState::kRepair), 18);
  // Repair and quarantine validation give the hosts back.
  for (int t = 1; t <= 18; ++t) fleet_.setState(host("b1-p1", t), core::HostState::kAvailable);

  auto retried = svc.podVerb("ro-1", "b1-p1", "retry", kSre);
  ASSERT_TRUE(retried.ok()) << retried.error();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p1").message, "retried by t-1");
  EXPECT_EQ(pod("b1-p1").run_id, "");
  EXPECT_FALSE(pod("b1-p1").finished_at);
  EXPECT_EQ(rollouts_.eventsOf("retry"), (std::vector<std::string>{"b1-p1: retry by t-1"}));

  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kDraining);
  EXPECT_EQ(pod("b1-p1").attempt, 2);
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  // A new run, not the failed one found again by its owner key.
  const std::string second = pod("b1-p1").run_id;
  EXPECT_NE(second, first);
  EXPECT_EQ(run_store_.runs_.at(second).owner, "ro-1/b1-p1/upgrade/2");
  finishUpgrade("b1-p1");
  svc.tick();
  EXPECT_EQ(run_store_.runs_.at(pod("b1-p1").validation_run_id).owner, "ro-1/b1-p1/validate/2");
  finishValidation("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 18);
}

TEST_P(RolloutControllerTest, RetryingAPodThatDidNotFailIsRefusedAndChangesNothing) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3", "b1-p4"}, policy(2));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();  // p1 succeeded, p3 admitted into its slot
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p3"), PodPhase::kDraining);
  ASSERT_EQ(phase("b1-p4"), PodPhase::kPending);

  for (const char* p : {"b1-p1", "b1-p2", "b1-p3", "b1-p4"}) {
    SCOPED_TRACE(p);
    const RolloutPodRow before = pod(p);
    auto r = svc.podVerb("ro-1", p, "retry", kSre);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kConflict);
    EXPECT_EQ(r.error().details.at("phase"), podPhaseName(before.phase));
    EXPECT_EQ(phase(p), before.phase);
    EXPECT_EQ(pod(p).attempt, before.attempt);
    EXPECT_EQ(pod(p).run_id, before.run_id);
  }
  EXPECT_TRUE(rollouts_.eventsOf("retry").empty());
  EXPECT_EQ(svc.podVerb("ro-1", "b1-p5", "retry", kSre).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(svc.podVerb("ro-1", "b1-p1", "redo", kSre).error().code, ErrorCode::kNotFound);
}

TEST_P(RolloutControllerTest, RetryingAPodOfAFinishedRolloutIsRefusedRatherThanLeftPendingForever) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  ASSERT_EQ(state(), "aborted");
  ASSERT_EQ(phase("b1-p1"), PodPhase::kAborted);
  auto r = svc.podVerb("ro-1", "b1-p1", "retry", kSre);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_EQ(phase("b1-p1"), PodPhase::kAborted);
}

TEST_P(RolloutControllerTest, RetryingAPodOfAnAbortingRolloutIsRefusedTooAndSkipOfAFinishedOne) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3"}, policy(2));
  auto& svc = service();
  svc.tick();
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kUpgrading);
  ASSERT_EQ(phase("b1-p3"), PodPhase::kPending);
  ASSERT_TRUE(svc.verb("ro-1", "abort", kSre).ok());
  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  // p1 stopped at its safe point; p2 is still flashing, so the rollout is still aborting.
  ASSERT_EQ(phase("b1-p1"), PodPhase::kAborted);
  ASSERT_EQ(state(), "aborting");
  auto r = svc.podVerb("ro-1", "b1-p1", "retry", kSre);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_EQ(r.error().details.at("state"), "aborting");
  EXPECT_EQ(phase("b1-p1"), PodPhase::kAborted);
  finishUpgrade("b1-p2");
  svc.tick();
  ASSERT_EQ(state(), "aborted");
  // A finished rollout's history is not rewritten: its never-started pod stays pending.
  auto skipped = svc.podVerb("ro-1", "b1-p3", "skip", kSre);
  ASSERT_FALSE(skipped.ok());
  EXPECT_EQ(skipped.error().code, ErrorCode::kConflict);
  EXPECT_EQ(skipped.error().details.at("state"), "aborted");
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending);
  EXPECT_TRUE(rollouts_.eventsOf("retry").empty());
  EXPECT_TRUE(rollouts_.eventsOf("skip").empty());
}

// ---- skip ----

TEST_P(RolloutControllerTest, ASkippedPendingPodIsNeverStartedAndTheRolloutCompletesWithoutIt) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(1));
  auto& svc = service();
  svc.tick();
  ASSERT_EQ(phase("b1-p2"), PodPhase::kPending);
  auto skipped = svc.podVerb("ro-1", "b1-p2", "skip", kSre);
  ASSERT_TRUE(skipped.ok()) << skipped.error();
  EXPECT_EQ(phase("b1-p2"), PodPhase::kSkipped);
  EXPECT_EQ(pod("b1-p2").message, "skipped by t-1");
  EXPECT_TRUE(pod("b1-p2").finished_at);
  EXPECT_EQ(rollouts_.eventsOf("skip"), (std::vector<std::string>{"b1-p2: skip by t-1"}));

  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(state(), "completed");
  EXPECT_EQ(phase("b1-p2"), PodPhase::kSkipped);
  EXPECT_EQ(pod("b1-p2").attempt, 0);
  EXPECT_EQ(hostsIn("b1-p2", core::HostState::kAvailable), 18);
  EXPECT_EQ(run_store_.runsOf("upgrade").size(), 1u);
}

TEST_P(RolloutControllerTest, SkipTakesAFailedPodOutOfTheBudgetButRefusesAPodInFlightOrSucceeded) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3"}, policy(1, [](Policy& p) { budgetPods(p, 0); }));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", everyTray());
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kFailed);
  ASSERT_EQ(state(), "halted");

  ASSERT_TRUE(svc.podVerb("ro-1", "b1-p1", "skip", kSre).ok());
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSkipped);
  // Resuming retries failed pods; a skipped one stays skipped and no longer counts as failed.
  ASSERT_TRUE(svc.verb("ro-1", "resume", kSre).ok());
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSkipped);
  EXPECT_TRUE(rollouts_.eventsOf("retry").empty()) << "an event for no pod retried";
  svc.tick();
  EXPECT_EQ(state(), "running");
  ASSERT_EQ(phase("b1-p2"), PodPhase::kDraining);

  auto refused = [&](const std::string& p, const std::string& in_phase) {
    SCOPED_TRACE(p + " " + in_phase);
    auto r = svc.podVerb("ro-1", p, "skip", kSre);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kConflict);
    EXPECT_EQ(podPhaseName(phase(p)), in_phase);
  };
  refused("b1-p2", "draining");
  svc.tick();
  refused("b1-p2", "upgrading");
  finishUpgrade("b1-p2");
  svc.tick();
  refused("b1-p2", "validating");
  finishValidation("b1-p2");
  svc.tick();
  refused("b1-p2", "succeeded");
  EXPECT_EQ(rollouts_.eventsOf("skip"), (std::vector<std::string>{"b1-p1: skip by t-1"}));
  EXPECT_EQ(phase("b1-p3"), PodPhase::kDraining);
}

// ---- rollback ----

TEST_P(RolloutControllerTest, RollbackRollsThePreviousBundleOntoOnlyThePodsThisRolloutChanged) {
  upgradedADayAgo({"b1-p1", "b1-p2", "b1-p3", "b1-p4"});
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3", "b1-p4"}, policy(2));
  auto& svc = service();
  svc.tick();
  ASSERT_TRUE(svc.podVerb("ro-1", "b1-p3", "skip", kSre).ok());
  svc.tick();
  ASSERT_TRUE(svc.verb("ro-1", "pause", kSre).ok());  // p4 is never started
  finishUpgrade("b1-p1");
  finishUpgrade("b1-p2", {1, 2, 3});
  svc.tick();
  finishValidation("b1-p1");
  finishValidation("b1-p2");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kFailed);
  ASSERT_EQ(phase("b1-p3"), PodPhase::kSkipped);
  ASSERT_EQ(phase("b1-p4"), PodPhase::kPending);
  rollouts_.setVersion("b1-p1", "driver", "580.1");  // p1's agents report the new driver
  // p2 failed, but 15 of its 18 hosts took the new driver: it is rolled back too.
  rollouts_.setVersions("b1-p2", "driver", {{"580.1", 15}, {"570.1", 3}});

  auto rb = svc.rollback("ro-1", kSre);
  ASSERT_TRUE(rb.ok()) << rb.error();
  const std::string id = rb->row.id;
  EXPECT_NE(id, "ro-1");
  EXPECT_EQ(rb->bundle.id, "b-1");
  EXPECT_EQ(rb->row.bundle_id, "b-1");
  EXPECT_EQ(rb->row.state, RolloutState::kRunning);
  EXPECT_EQ(rb->row.selector.pods, (std::vector<std::string>{"b1-p1", "b1-p2"}));
  ASSERT_EQ(rollouts_.pods_.at(id).size(), 2u);
  EXPECT_EQ(rollouts_.pods_.at(id)[0].pod, "b1-p1");
  EXPECT_EQ(rollouts_.pods_.at(id)[1].pod, "b1-p2");
  EXPECT_EQ(rollouts_.rollouts_.at(id).policy, rollouts_.rollouts_.at("ro-1").policy);
  EXPECT_EQ(rollouts_.eventsOf("rollback"), (std::vector<std::string>{": rolled back by " + id + " (t-1)"}));

  // The rollback rollout upgrades p1 to b-1's driver; the first rollout stays paused.
  svc.tick();
  svc.tick();
  ASSERT_EQ(phase("b1-p1", id), PodPhase::kUpgrading);
  EXPECT_EQ(run_store_.runs_.at(pod("b1-p1", id).run_id).owner, id + "/b1-p1/upgrade/1");
  EXPECT_EQ(state(), "paused");
  EXPECT_EQ(phase("b1-p4"), PodPhase::kPending);
}

TEST_P(RolloutControllerTest, TheRollbackRolloutNamesTheRolloutItRollsBack) {
  upgradedADayAgo({"b1-p1"});
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  ASSERT_EQ(state(), "completed");
  rollouts_.setVersion("b1-p1", "driver", "580.1");
  auto rb = svc.rollback("ro-1", kSre);
  ASSERT_TRUE(rb.ok()) << rb.error();
  EXPECT_EQ(rb->row.rollback_of, "ro-1");
  EXPECT_EQ(rollouts_.rollouts_.at(rb->row.id).rollback_of, "ro-1");
}

TEST_P(RolloutControllerTest, RollbackIsRefusedWhileTheRolloutRunsOrWhenNoChangedPodHasAnEarlierBundle) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  auto running = svc.rollback("ro-1", kSre);
  ASSERT_FALSE(running.ok());
  EXPECT_EQ(running.error().code, ErrorCode::kConflict);
  EXPECT_EQ(running.error().details.at("state"), "running");

  ASSERT_TRUE(svc.verb("ro-1", "pause", kSre).ok());
  auto unchanged = svc.rollback("ro-1", kSre);
  ASSERT_FALSE(unchanged.ok());
  EXPECT_EQ(unchanged.error().message, "rollout ro-1 changed no pod: nothing to roll back");

  finishUpgrade("b1-p1");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  auto unknown = svc.rollback("ro-1", kSre);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kConflict);
  EXPECT_EQ(unknown.error().details.at("pod"), "b1-p1");
  EXPECT_EQ(rollouts_.rollouts_.size(), 1u);  // no rollout was created
}

// ---- spares ----

TEST_P(RolloutControllerTest, TwoFailedHostsOfEighteenLeaveSixtyFourGpusAndThePodServesWithThemInRepair) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", {3, 11});
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  // Only the hosts the upgrade passed are validated.
  EXPECT_EQ(run_store_.runs_.at(pod("b1-p1").validation_run_id).hosts.size(), 16u);
  EXPECT_EQ(fleet_.state(host("b1-p1", 3)), core::HostState::kFailed);
  finishValidation("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(pod("b1-p1").message, "16 hosts back in service (64 GPUs); spares cover 2 hosts sent to repair");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 16);
  EXPECT_EQ(fleet_.state(host("b1-p1", 3)), core::HostState::kRepair);
  EXPECT_EQ(fleet_.state(host("b1-p1", 11)), core::HostState::kRepair);
  EXPECT_EQ(state(), "completed");
}

TEST_P(RolloutControllerTest, ThreeFailedHostsLeaveTooFewGpusAndThePodFails) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", {2, 9, 17});
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kFailed);
  EXPECT_EQ(pod("b1-p1").message, "only 60 healthy GPUs after the upgrade (a slice needs 64)");
  EXPECT_EQ(rollouts_.eventsOf("failed"),
            (std::vector<std::string>{"b1-p1: only 60 healthy GPUs after the upgrade (a slice needs 64)"}));
  // The failed hosts go to repair; the 15 that passed validation serve.
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kRepair), 3);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 15);
}

// Issue 32: a bundle names its own validation; a pod-scope one runs on the pod's upgraded hosts
// as one group (the NVLink domain checked as a whole), and a host it fails goes to repair.
TEST_P(RolloutControllerTest, ABundlesPodScopeValidationChecksTheUpgradedHostsTogether) {
  ASSERT_TRUE(room_.workflows
                  .putWorkflow("domain",
                               "name: domain\nversion: \"1\"\ndescription: t\nscope: pod\nsteps:\n"
                               "  - id: fabric\n    run: [nvidia-smi, -q, -x]\n    parse: json\n    timeout: 1m\n"
                               "  - id: one\n    type: barrier\n    timeout: 5m\n"
                               "    agree: {step: fabric, paths: [\"gpus[*].fabric.clique_id\"]}\n",
                               kSre)
                  .ok());
  bundle_.validation_workflow = "domain";
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", {4});
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  ASSERT_EQ(run_store_.runsOf("domain").size(), 1u);
  EXPECT_TRUE(run_store_.runsOf("validate").empty()) << "kilnd's default is not run";
  const std::string run = pod("b1-p1").validation_run_id;
  ASSERT_EQ(run_store_.groupsOf(run).size(), 1u) << "one group: the pod";
  const auto& group = run_store_.groupsOf(run)[0];
  EXPECT_EQ(group.group, "b1-p1");
  EXPECT_EQ(group.hosts.size(), 17u) << "its upgraded hosts, not the one that failed";
  finishValidation("b1-p1", {9});
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(fleet_.state(host("b1-p1", 9)), core::HostState::kRepair);
}

// The rollout's own choice of validation comes before its bundle's (and kilnd's default).
TEST_P(RolloutControllerTest, ARolloutsValidationWorkflowComesBeforeItsBundles) {
  for (const char* name : {"bundles-own", "rollouts-own"})
    ASSERT_TRUE(room_.workflows
                    .putWorkflow(name,
                                 std::string("name: ") + name +
                                     "\nversion: \"1\"\ndescription: t\nscope: host\nsteps:\n"
                                     "  - id: gpu\n    run: [nvidia-smi, -q, -x]\n    timeout: 1m\n",
                                 kSre)
                    .ok());
  bundle_.validation_workflow = "bundles-own";
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"},
                       policy(1, [](Policy& p) { p.validation_workflow = "rollouts-own"; }));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", {});
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  EXPECT_EQ(run_store_.runsOf("rollouts-own").size(), 1u);
  EXPECT_TRUE(run_store_.runsOf("bundles-own").empty());
  EXPECT_TRUE(run_store_.runsOf("validate").empty());
}

TEST_P(RolloutControllerTest, AHostFailingValidationGoesToRepairAndCountsAgainstTheSpares) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2"}, policy(2));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1", {4});
  finishUpgrade("b1-p2", {4, 5});
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kValidating);
  finishValidation("b1-p1", {9});
  finishValidation("b1-p2", {9});
  svc.tick();

  // p1: one upgrade and one validation failure, covered by the spares.
  EXPECT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  EXPECT_EQ(pod("b1-p1").message, "16 hosts back in service (64 GPUs); spares cover 2 hosts sent to repair");
  EXPECT_EQ(fleet_.state(host("b1-p1", 9)), core::HostState::kRepair);
  EXPECT_EQ(fleet_.state(host("b1-p1", 4)), core::HostState::kRepair);
  // p2: two upgrade failures and one validation failure are one too many.
  EXPECT_EQ(phase("b1-p2"), PodPhase::kFailed);
  EXPECT_EQ(pod("b1-p2").message, "only 60 healthy GPUs after the upgrade (a slice needs 64)");
  EXPECT_EQ(fleet_.state(host("b1-p2", 9)), core::HostState::kRepair);
  EXPECT_EQ(hostsIn("b1-p2", core::HostState::kRepair), 3);
  EXPECT_EQ(hostsIn("b1-p2", core::HostState::kAvailable), 15);
}

// Issue 32: a pod never returns to service on mixed versions of a component its bundle names.
// One tray still reports the old driver after a "passed" upgrade, and a switch tray too: the
// pod is held (no validated host serves), and the pod's message names the devices that differ.
TEST_P(RolloutControllerTest, APodWhoseDevicesReportMixedVersionsIsHeldAndNamesThem) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1"}, policy(1));
  auto& svc = service();
  svc.tick();
  svc.tick();
  finishUpgrade("b1-p1");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kValidating);
  // What the trays read back after the upgrade: every one 580.1 but tray 7, and switch tray s2
  // on an nvswitch version the bundle does not name (not judged).
  auto& detail = fleet_.pods_.at("b1-p1");
  detail.components.clear();
  for (int t = 1; t <= 18; ++t) detail.components.push_back({host("b1-p1", t), "driver", t == 7 ? "570.1" : "580.1"});
  detail.components.push_back({"b1-p1-s2", "nvswitch", "1.2"});
  finishValidation("b1-p1");
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kFailed);
  EXPECT_EQ(
      pod("b1-p1").message,
      "held: mixed versions after the upgrade, so no host returns to service: b1-p1-h07 driver 570.1 (bundle 580.1)");
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kAvailable), 0);
  EXPECT_EQ(hostsIn("b1-p1", core::HostState::kValidating), 18);
}

TEST(ConsistencyTest, OnlyDevicesOfTheDomainAndKindsTheBundleNamesAreJudged) {
  Bundle b;
  b.components = {{"driver", "580.1", "", ""}, {"nvswitch", "1.4", "", ""}};
  std::vector<core::ComponentVersion> components = {{"h1", "driver", "580.1"}, {"h2", "driver", "570.1"},
                                                    {"h2", "nic", "old"},       // nic: not in the bundle
                                                    {"h9", "driver", "570.1"},  // h9: not in the domain
                                                    {"s1", "nvswitch", "1.4"}, {"s2", "nvswitch", "1.2"}};
  auto mixed = mixedVersions(b, components, {"h1", "h2", "s1", "s2"});
  ASSERT_EQ(mixed.size(), 2u);
  EXPECT_EQ(mixed[0], (VersionMismatch{"h2", "driver", "570.1", "580.1"}));
  EXPECT_EQ(mixed[1], (VersionMismatch{"s2", "nvswitch", "1.2", "1.4"}));
  EXPECT_EQ(describeMismatches(mixed, 1), "h2 driver 570.1 (bundle 580.1) and 1 more");
  EXPECT_TRUE(mixedVersions(b, components, {"h1", "s1"}).empty());
}

// ---- time ----

TEST_P(RolloutControllerTest, AWaveStartsOnlyTheSoakAfterTheLastPodOfThePreviousWaveFinished) {
  rollouts_.bundles_.add(bundle_);
  auto& svc = service();
  CreateRequest req;
  req.bundle = bundle_;
  req.selector.pods = {"b1-p1", "b1-p2", "b1-p3", "b1-p4"};
  req.policy = policy(4, [](Policy& p) {
    p.canary_pods = 2;
    p.soak = std::chrono::minutes(30);
  });
  req.start = true;
  auto created = svc.create(req, kSre);
  ASSERT_TRUE(created.ok()) << created.error();
  ASSERT_FALSE(created->dry_run);
  ASSERT_TRUE(created->rollout);
  const std::string id = created->rollout->row.id;
  ASSERT_EQ(id, "ro-1");
  EXPECT_EQ(created->rollout->row.state, RolloutState::kRunning);
  EXPECT_EQ(created->rollout->total, 4u);
  ASSERT_EQ(created->rollout->waves.size(), 2u);
  EXPECT_EQ(created->rollout->waves[0].pods, 2);
  EXPECT_EQ(created->rollout->waves[0].state, RolloutView::WaveState::kCurrent);
  EXPECT_EQ(created->rollout->current_wave, 0);
  EXPECT_EQ(pod("b1-p2").wave, 0);
  EXPECT_EQ(pod("b1-p3").wave, 1);

  svc.tick();
  EXPECT_EQ(pod("b1-p3").waiting_reason, "wave 1 starts after wave 0");
  svc.tick();
  finishUpgrade("b1-p1");
  finishUpgrade("b1-p2");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  clock_.advance(minutes(10));
  finishValidation("b1-p2");
  svc.tick();  // wave 0 finished now
  ASSERT_EQ(phase("b1-p2"), PodPhase::kSucceeded);
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p3").waiting_reason, "soak: waiting 1800 s after the previous wave");

  clock_.advance(minutes(30) - seconds(1));
  svc.tick();
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending);
  EXPECT_EQ(phase("b1-p4"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p4").waiting_reason, "soak: waiting 1800 s after the previous wave");
  clock_.advance(seconds(1));
  svc.tick();
  EXPECT_EQ(phase("b1-p3"), PodPhase::kDraining);
  EXPECT_EQ(phase("b1-p4"), PodPhase::kDraining);
}

TEST_P(RolloutControllerTest, TheViewGivesPodDurationsAndAnEtaFromTheClock) {
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3"},
                       policy(1, [](Policy& p) { p.soak = std::chrono::minutes(10); }));
  pod("b1-p3").wave = 1;
  auto& svc = service();
  svc.tick();  // p1 starts
  svc.tick();
  clock_.advance(minutes(20));
  finishUpgrade("b1-p1");
  svc.tick();
  clock_.advance(minutes(10));
  finishValidation("b1-p1");
  svc.tick();  // p1 took 30 minutes; p2 starts
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  ASSERT_EQ(phase("b1-p2"), PodPhase::kDraining);

  auto view = svc.view("ro-1");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->durations_count, 1u);
  EXPECT_EQ(view->p50_s, 1800.0);
  EXPECT_EQ(view->p90_s, 1800.0);
  // Two pods left one at a time at the median, plus the soak before wave 1.
  EXPECT_EQ(view->eta_s, 2 * 1800.0 + 600);
  auto pods = svc.pods("ro-1");
  ASSERT_TRUE(pods.ok());
  ASSERT_GE(pods->size(), 2u);
  EXPECT_EQ(*(*pods)[0].finished_at - *(*pods)[0].started_at, minutes(30));
  EXPECT_FALSE((*pods)[1].finished_at);  // p2 has not finished

  svc.tick();
  clock_.advance(minutes(50));
  finishUpgrade("b1-p2");
  svc.tick();
  finishValidation("b1-p2");
  svc.tick();  // p2 took 50 minutes
  ASSERT_EQ(phase("b1-p2"), PodPhase::kSucceeded);
  view = svc.view("ro-1");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->durations_count, 2u);
  EXPECT_EQ(view->p50_s, 1800.0);
  EXPECT_EQ(view->p90_s, 3000.0);
  // p3 alone, in the last wave, after the 10-minute soak that began as p2 finished.
  EXPECT_EQ(pod("b1-p3").waiting_reason.rfind("soak: ", 0), 0u) << pod("b1-p3").waiting_reason;
  EXPECT_EQ(view->eta_s, 600 + 1800.0);
  clock_.advance(minutes(4));
  EXPECT_EQ(svc.view("ro-1")->eta_s, 360 + 1800.0);
  clock_.advance(minutes(20));  // the soak is over (the pass that starts p3 has not run yet)
  EXPECT_EQ(svc.view("ro-1")->eta_s, 1800.0);
}

TEST_P(RolloutControllerTest, OutsideTheMaintenanceWindowNothingStartsAndTheEtaWaitsForTheNextOpening) {
  // The fake clock starts at midnight UTC; the window is 02:00-02:45 every day.
  rollouts_.addRollout("ro-1", bundle_, {"b1-p1", "b1-p2", "b1-p3"},
                       policy(1, [](Policy& p) { p.windows = {parseWindow("02:00-02:45").value()}; }));
  auto& svc = service();
  svc.tick();
  EXPECT_EQ(phase("b1-p1"), PodPhase::kPending);
  EXPECT_EQ(
      pod("b1-p1").waiting_reason.rfind("window: outside the maintenance windows (02:00-02:45); the next opens ", 0),
      0u)
      << pod("b1-p1").waiting_reason;
  clock_.advance(hours(2));
  svc.tick();  // 02:00: p1 starts
  ASSERT_EQ(phase("b1-p1"), PodPhase::kDraining);
  svc.tick();
  clock_.advance(minutes(30));
  finishUpgrade("b1-p1");
  svc.tick();
  finishValidation("b1-p1");
  svc.tick();  // 02:30: p1 took 30 minutes; 15 minutes of the window are left
  ASSERT_EQ(phase("b1-p1"), PodPhase::kSucceeded);
  // p2 would still be out of service when the window closes: it waits for tomorrow's.
  ASSERT_EQ(phase("b1-p2"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p2").waiting_reason.rfind("window: the maintenance window closes ", 0), 0u)
      << pod("b1-p2").waiting_reason;
  EXPECT_NE(
      pod("b1-p2").waiting_reason.find("sooner than this rollout's P90 pod time (30 min); the next long enough opens "),
      std::string::npos)
      << pod("b1-p2").waiting_reason;
  // p2 tomorrow 02:00-02:30, p3 the day after (tomorrow's window has 15 minutes left then).
  auto view = svc.view("ro-1");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->eta_s, 48 * 3600.0);
  clock_.advance(hours(23) + minutes(30));
  svc.tick();  // tomorrow 02:00
  ASSERT_EQ(phase("b1-p2"), PodPhase::kDraining);
  // A pod in flight when the window closes finishes; the next waits.
  svc.tick();
  clock_.advance(minutes(50));
  finishUpgrade("b1-p2");
  svc.tick();
  finishValidation("b1-p2");
  svc.tick();
  EXPECT_EQ(phase("b1-p2"), PodPhase::kSucceeded);
  EXPECT_EQ(phase("b1-p3"), PodPhase::kPending);
  EXPECT_EQ(pod("b1-p3").waiting_reason.rfind("window: outside the maintenance windows", 0), 0u)
      << pod("b1-p3").waiting_reason;
}

INSTANTIATE_TEST_SUITE_P(ReconcileThreads, RolloutControllerTest, ::testing::Values(1, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 1 ? std::string("OnePodAfterAnother")
                                                  : std::to_string(info.param) + "Threads";
                         });

}  // namespace
}  // namespace kiln::rollouts
