// Tier `unit`: the run service alone, over in-memory fakes of the fleet and the run store
// (orchestrator/core/testing/fake_fleet.h, orchestrator/runs/testing/fake_run_store.h), with no
// agent gateway: it tells of new work only through the on_work callback it was given
// (agent_work.h), and the gateway sees it only as AgentWork.

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/runs/agent_work.h"
#include "orchestrator/runs/engine.h"
#include "orchestrator/runs/group_step.h"
#include "orchestrator/runs/lost_lease.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/runs/testing/fake_run_store.h"
#include "orchestrator/workflow/loader.h"

namespace kiln::runs {
namespace {

using core::testing::FakeFleet;
using runs::testing::FakeRunStore;

struct RunServiceUnderTest {
  RunServiceUnderTest() { fleet.addPod("b1-p1", "b1"); }
  FakeFleet fleet;
  FakeRunStore store;
  core::FakeClock clock;
  std::vector<std::string> told;   // on_work's hosts, in order
  std::vector<std::size_t> runs_when_told;  // how many runs the store held at each call
  RunsRoom room{fleet, store, clock, {}, [this](const std::string& host) {
                  told.push_back(host);
                  runs_when_told.push_back(store.runs_.size());
                }};
  RunService& service = room.runs;
};

// Issue 35: a pre-job check whose host only lost its reports (an overloaded kilnd) does not fail
// the host out of the pool; a host that failed a check does. The summary marks which is which.
TEST(RunServiceTest, APreJobHostThatOnlyLostItsReportsStaysInThePoolAndIsMarkedLost) {
  auto spec = workflow::loadWorkflow(R"(
name: one
version: "1"
scope: host
steps:
  - id: gpu-state
    run: [nvidia-smi, -q, -x]
    timeout: 10s
)",
                                     "one.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  Engine e(*spec, {});
  const TimePoint now = TimePoint{} + std::chrono::hours(1000);
  GroupState g = e.newGroup("r-9", "p1", {{"h1", {{"pod.id", "p1"}}}, {"h2", {{"pod.id", "p1"}}}});
  Effects fx = e.start(g, now);
  ASSERT_EQ(fx.dispatches.size(), 2u);
  StepResult lost;
  lost.lost = true;
  StepResult bad;
  bad.exit_code = 3;
  ASSERT_TRUE(e.onResult(g, fx.dispatches[0].assignment_id, lost, now).ok());
  ASSERT_TRUE(e.onResult(g, fx.dispatches[1].assignment_id, bad, now).ok());
  ASSERT_EQ(g.hosts[0].status, HostStatus::kFailed);
  ASSERT_EQ(g.hosts[1].status, HostStatus::kFailed);
  EXPECT_TRUE(onlyLostLeases(g.hosts[0].failures));  // the engine's own reason, read by the one rule
  EXPECT_FALSE(onlyLostLeases(g.hosts[1].failures));

  RunRow run;
  run.id = "r-9";
  run.purpose = "pre_job";
  auto moves = verdictTransitions(run, g, {"h1", "h2"});
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].host, "h2");
  EXPECT_EQ(moves[0].action, core::HostAction::kFail);
  // Only the pre-job check: quarantine validation still sends both back to repair.
  run.purpose = "quarantine";
  EXPECT_EQ(verdictTransitions(run, g, {"h1", "h2"}).size(), 2u);

  auto [state, summary] = runVerdict(run, {g});
  EXPECT_EQ(state, "failed");
  ASSERT_EQ(summary["unhealthy"].size(), 2u);
  EXPECT_EQ(summary["unhealthy"][0]["host"], "h1");
  EXPECT_EQ(summary["unhealthy"][0]["lost"], true);
  EXPECT_EQ(summary["unhealthy"][1]["lost"], false);
}

TEST(RunServiceTest, StartingARunTellsOnWorkOfEachHostItGaveWorkAfterTheRunIsStored) {
  RunServiceUnderTest t;
  StartRequest req;
  req.workflow = "fw-check";
  req.pods = {"b1-p1"};
  req.purpose = "manual";
  auto run = t.service.startRun(req, {"alice", "alice"});
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(t.told.size(), 18u) << "one call per host of the pod (each got the workflow's first step)";
  std::set<std::string> hosts(t.told.begin(), t.told.end());
  EXPECT_EQ(hosts.size(), 18u) << "no host told twice";
  EXPECT_TRUE(hosts.count("b1-p1-h01"));
  EXPECT_TRUE(hosts.count("b1-p1-h18"));
  for (auto n : t.runs_when_told) EXPECT_EQ(n, 1u) << "told before the run was committed";
}

TEST(RunServiceTest, AStartedRunIsAnsweredAsItsViewAndAnOwnersSecondStartAsTheSameRun) {
  RunServiceUnderTest t;
  StartRequest req;
  req.workflow = "fw-check";
  req.pods = {"b1-p1"};
  req.purpose = "rollout";
  req.owner = "ro-1/b1-p1/upgrade/1";
  auto run = t.service.startRun(req, {"alice", "alice"});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->row.id, "r-1");
  EXPECT_EQ(run->row.workflow, "fw-check");
  EXPECT_EQ(run->row.purpose, "rollout");
  EXPECT_EQ(run->steps, std::optional<std::vector<std::string>>({"work"}));
  EXPECT_EQ(run->progress.running, 18);
  EXPECT_EQ(run->progress.hosts(), 18);
  ASSERT_EQ(run->hosts.size(), 18u);
  const HostView& first = run->hosts.front();
  EXPECT_EQ(first.host, "b1-p1-h01");
  EXPECT_EQ(first.group, "b1-p1-h01") << "a host-scope workflow: one group per host";
  EXPECT_EQ(first.current_step, "work");
  EXPECT_FALSE(first.assignment.empty()) << "its first step is handed out";
  EXPECT_EQ(first.healthy(), std::nullopt) << "no verdict while it runs";
  EXPECT_TRUE(first.steps.empty());

  auto again = t.service.startRun(req, {"alice", "alice"});
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->row.id, "r-1") << "the owner's run, not a second one";
  EXPECT_EQ(t.store.runs_.size(), 1u);
}

TEST(RunServiceTest, ARolloutsOwnerKeyNamesTheRolloutPodPhaseAndAttempt) {
  RunRow run;
  run.purpose = "rollout";
  run.owner = "ro-4/b1-p1/validate/12";
  auto r = rolloutOf(run);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id, "ro-4");
  EXPECT_EQ(r->pod, "b1-p1");
  EXPECT_EQ(r->phase, "validate");
  EXPECT_EQ(r->attempt, 12);
  run.owner = "ro-4/b1-p1/validate/x";
  ASSERT_TRUE(rolloutOf(run).has_value());
  EXPECT_EQ(rolloutOf(run)->attempt, std::nullopt) << "an attempt that is not a number";
  run.owner = "ro-4/b1-p1/validate";
  EXPECT_FALSE(rolloutOf(run).has_value()) << "not a rollout's key";
  run.owner = "ro-4/b1-p1/validate/1";
  run.purpose = "manual";
  EXPECT_FALSE(rolloutOf(run).has_value()) << "only a rollout's runs";
}

TEST(RunServiceTest, ARefusedRunTellsNoOne) {
  RunServiceUnderTest t;
  StartRequest req;
  req.workflow = "fw-check";
  req.hosts = {"nope-h01"};
  auto run = t.service.startRun(req, {"alice", "alice"});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code, ErrorCode::kInvalidContent);
  EXPECT_TRUE(t.told.empty());
  EXPECT_TRUE(t.store.runs_.empty());
}

// A version stored before kilnd's executable allow-list was set starts nothing it refuses.
TEST(RunServiceTest, AWorkflowRunningAnExecutableOutsideTheAllowListDoesNotStart) {
  FakeFleet fleet;
  fleet.addPod("b1-p1", "b1");
  FakeRunStore store;
  core::FakeClock clock;
  WorkflowCatalog catalog(store);
  ASSERT_TRUE(catalog
                  .putWorkflow("shell",
                               "name: shell\nversion: \"1\"\nscope: host\nsteps:\n  - id: s\n"
                               "    run: [bash, -c, id]\n    timeout: 1m\n",
                               {"alice", "alice"})
                  .ok());
  catalog.restrictExecutables(*parseExecutableAllowList("nvidia-smi\n", "allow"));
  RunService service(fleet, catalog, store, clock, {}, nullptr);
  StartRequest req;
  req.workflow = "shell";
  req.hosts = {"b1-p1-h03"};
  req.purpose = "manual";
  auto run = service.startRun(req, {"alice", "alice"});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(run.error().fields.at(0).path, "steps[0].run[0]");
  EXPECT_TRUE(store.runs_.empty());
}

TEST(RunServiceTest, WithoutOnWorkItStillStartsRuns) {
  FakeFleet fleet;
  fleet.addPod("b1-p1", "b1");
  FakeRunStore store;
  core::FakeClock clock;
  WorkflowCatalog catalog(store);  // the run service alone, over its own faces of the store
  RunService service(fleet, catalog, store, clock, {}, nullptr);
  StartRequest req;
  req.workflow = "fw-check";
  req.hosts = {"b1-p1-h03"};
  req.purpose = "manual";
  auto run = service.startRun(req, {"alice", "alice"});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(store.runs_.size(), 1u);
}

TEST(RunServiceTest, AsAgentWorkItPassesTheStoresFailuresOnPerReport) {
  RunServiceUnderTest t;
  t.store.fail_agent_work = unavailable("the database is down");
  AgentWork& work = t.room.agent_work;  // all the gateway sees of it
  auto claimed = work.claimBatch({"b1-p1-h01"});
  ASSERT_FALSE(claimed.ok()) << "the store cannot claim: its error comes back";
  EXPECT_EQ(claimed.error().code, ErrorCode::kUnavailable);
  auto answers = work.reportBatch({{"r-1:b1-p1-h01:1", "b1-p1-h01", nlohmann::json{{"lease", 1}}, ""},
                                   {"r-1:b1-p1-h02:1", "b1-p1-h02", nlohmann::json{{"lease", 1}}, ""}});
  ASSERT_EQ(answers.size(), 2u) << "one answer per report, even when the batch failed";
  for (const auto& a : answers) EXPECT_FALSE(a.ok());
  EXPECT_TRUE(t.told.empty());
}

}  // namespace
}  // namespace kiln::runs
