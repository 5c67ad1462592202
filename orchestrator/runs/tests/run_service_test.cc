// Tier `unit`: the run service alone, over in-memory fakes of the fleet and the run store
// (orchestrator/core/testing/fake_fleet.h, orchestrator/runs/testing/fake_run_store.h), with no
// agent gateway: it tells of new work only through the on_work callback it was given
// (agent_work.h), and the gateway sees it only as AgentWork.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/runs/agent_work.h"
#include "orchestrator/runs/drain_gate.h"
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
  std::vector<std::string> told;            // on_work's hosts, in order
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

// Issue 35: a run that takes hosts out of service starts no step on a host the job scheduler's
// drain gate still holds (a job may run there): the host waits, says why, and starts when the
// gate opens at a later timer pass; the hosts the gate lets through start at once.
TEST(RunServiceTest, AQuarantineRunStartsAHostOnlyOnceTheSchedulersDrainGateOpens) {
  RunServiceUnderTest t;
  t.fleet.setState("b1-p1-h03", core::HostState::kQuarantine);
  t.fleet.setState("b1-p1-h04", core::HostState::kQuarantine);
  const std::string why = "slurm node b1-p1-h03 is MIXED+DRAIN (job 7 running): waiting for its jobs to leave";
  std::map<std::string, std::string> held = {{"b1-p1-h03", why}};
  std::vector<std::string> asked;
  t.room.setDrainGate(
      [&](const core::HostSummary& h, const std::string& run) -> std::optional<std::string> {
        asked.push_back(h.id + " " + std::string(core::hostStateName(h.state)) + " " + run);
        if (auto it = held.find(h.id); it != held.end()) return it->second;
        return std::nullopt;
      },
      t.fleet);
  StartRequest req;
  req.workflow = "fw-check";
  req.hosts = {"b1-p1-h03", "b1-p1-h04"};
  req.purpose = "quarantine";
  auto run = t.service.startRun(req, {"alice", "alice"});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(asked, (std::vector<std::string>{"b1-p1-h03 quarantine r-1", "b1-p1-h04 quarantine r-1"}));
  EXPECT_EQ(t.told, std::vector<std::string>{"b1-p1-h04"}) << "only the host the gate let through got work";
  auto hostOf = [](const RunView& v, const std::string& id) {
    for (const auto& h : v.hosts)
      if (h.host == id) return h;
    return HostView{};
  };
  HostView waiting = hostOf(*run, "b1-p1-h03");
  EXPECT_TRUE(waiting.assignment.empty());
  EXPECT_EQ(waiting.waiting_for, why);
  EXPECT_EQ(waiting.waiting_until, t.clock.now() + kDrainGateRecheck);
  EXPECT_FALSE(hostOf(*run, "b1-p1-h04").assignment.empty());
  EXPECT_TRUE(hostOf(*run, "b1-p1-h04").waiting_for.empty());

  // Its timer is due, the gate still holds: it waits on, for the next look.
  asked.clear();
  t.clock.advance(kDrainGateRecheck);
  t.room.timers.tick();
  EXPECT_EQ(asked, std::vector<std::string>{"b1-p1-h03 quarantine r-1"}) << "only the held host is asked again";
  auto again = t.service.runView("r-1");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(hostOf(*again, "b1-p1-h03").assignment.empty());
  EXPECT_EQ(hostOf(*again, "b1-p1-h03").waiting_until, t.clock.now() + kDrainGateRecheck);
  EXPECT_EQ(t.told.size(), 1u);

  // The job left: the next look lets it start.
  held.clear();
  t.clock.advance(kDrainGateRecheck);
  t.room.timers.tick();
  again = t.service.runView("r-1");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(hostOf(*again, "b1-p1-h03").assignment.empty());
  EXPECT_TRUE(hostOf(*again, "b1-p1-h03").waiting_for.empty());
  EXPECT_EQ(t.told.back(), "b1-p1-h03");

  // A pre-job check (run by the job's own prolog) and a rollout's run (gated by the controller)
  // do not ask the gate.
  asked.clear();
  held = {{"b1-p1-h05", why}, {"b1-p1-h06", why}};
  req.hosts = {"b1-p1-h05"};
  req.purpose = "pre_job";
  ASSERT_TRUE(t.service.startRun(req, {"alice", "alice"}).ok());
  req.hosts = {"b1-p1-h06"};
  req.purpose = "rollout";
  ASSERT_TRUE(t.service.startRun(req, {"alice", "alice"}).ok());
  EXPECT_TRUE(asked.empty());
  EXPECT_EQ(t.told.back(), "b1-p1-h06");
}

// The gate holds a host even against its own group: in a pod-wide run, the other hosts' reports
// (which advance the group past the held host's next look) do not start it; only the gate does.
// A host once started is never held again.
TEST(RunServiceTest, OnlyTheDrainGateLetsAHeldHostOfAPodGroupStart) {
  auto spec = workflow::loadWorkflow(R"(
name: pod-work
version: "1"
scope: pod
steps:
  - id: one
    run: [nvidia-smi, -q, -x]
    timeout: 10s
  - id: two
    run: [nvidia-smi, -q, -x]
    timeout: 10s
)",
                                     "pod-work.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  Engine e(*spec, {});
  const TimePoint now = TimePoint{} + std::chrono::hours(1000);
  GroupState g = e.newGroup("r-3", "p1", {{"h1", {{"pod.id", "p1"}}}, {"h2", {{"pod.id", "p1"}}}});
  const std::string why = "slurm node h2 is ALLOCATED+DRAIN (job 9 running): waiting for its jobs to leave";
  bool open = false;
  HostGate gate = [&](const std::string& host) -> std::optional<std::string> {
    if (host == "h2" && !open) return why;
    return std::nullopt;
  };
  EXPECT_EQ(holdAtDrainGate(g, now, true, gate), std::vector<std::string>{"h2"});
  Effects fx = e.start(g, now);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  EXPECT_EQ(fx.dispatches[0].host, "h1");
  ASSERT_TRUE(fx.next_wakeup.has_value());
  EXPECT_EQ(*fx.next_wakeup, now + kDrainGateRecheck);

  // h1's report, a minute later: h1 goes on, h2 (its look long due) stays put.
  StepResult ok;
  ok.exit_code = 0;
  auto next = e.onResult(g, fx.dispatches[0].assignment_id, ok, now + std::chrono::minutes(1));
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->dispatches.size(), 1u);
  EXPECT_EQ(next->dispatches[0].host, "h1");
  EXPECT_EQ(next->dispatches[0].step_id, "two");
  EXPECT_TRUE(g.hosts[1].assignment_id.empty());
  EXPECT_EQ(g.hosts[1].waiting_for, why);
  // Nor does a tick without the gate's look.
  EXPECT_TRUE(e.tick(g, now + std::chrono::minutes(2)).dispatches.empty());

  // A started host is never held again, even by a gate that holds everyone now.
  EXPECT_EQ(holdAtDrainGate(g, now, true, [&](const std::string&) { return std::optional<std::string>(why); }),
            std::vector<std::string>{"h2"});
  EXPECT_TRUE(g.hosts[0].waiting_for.empty());

  open = true;
  EXPECT_TRUE(holdAtDrainGate(g, now + std::chrono::minutes(3), false, gate).empty());
  EXPECT_TRUE(g.hosts[1].waiting_for.empty());
  Effects started = e.tick(g, now + std::chrono::minutes(3));
  ASSERT_EQ(started.dispatches.size(), 1u);
  EXPECT_EQ(started.dispatches[0].host, "h2");
  EXPECT_EQ(started.dispatches[0].step_id, "one");
}

// A held host whose run is cancelled (or stopped) is over: it no longer says it waits for the
// gate, and the timer pass no longer asks about it.
TEST(RunServiceTest, AHeldHostThatIsCancelledNoLongerWaitsForTheGate) {
  auto spec = workflow::loadWorkflow(
      "name: w\nversion: \"1\"\nscope: host\nsteps:\n  - id: s\n    run: [nvidia-smi]\n"
      "    timeout: 10s\n",
      "w.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  Engine e(*spec, {});
  const TimePoint now = TimePoint{} + std::chrono::hours(1000);
  for (bool stop : {false, true}) {
    GroupState g = e.newGroup("r-4", "h1", {{"h1", {}}});
    holdAtDrainGate(g, now, true, [](const std::string&) { return std::optional<std::string>("a job runs there"); });
    ASSERT_EQ(heldAtDrainGate(g), std::vector<std::string>{"h1"});
    if (stop)
      e.stop(g, now + std::chrono::minutes(1));
    else
      e.cancel(g, "cancelled by alice");
    EXPECT_EQ(g.hosts[0].status, HostStatus::kCancelled);
    EXPECT_TRUE(g.hosts[0].waiting_for.empty()) << (stop ? "stop" : "cancel");
    EXPECT_TRUE(heldAtDrainGate(g).empty());
  }
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

// Issue 32: a pod served by several out-of-band runners: its trays' BMC steps are spread over
// them (a rack upgrade's 18 BMC pushes side by side), each tray's on the one runnerFor names, and
// each runner is told of its own work.
TEST(RunServiceTest, ABmcStepGoesToTheRunnerOfItsTrayAmongThePodsRunners) {
  RunServiceUnderTest t;
  core::ManagementSpec m{"redfish", "tray-bmc", "{host}-bmc.mgmt:443", "", "oob-a,oob-b,oob-c"};
  t.fleet.setManagement("b1-p1", m);
  ASSERT_TRUE(
      t.room.workflows
          .putWorkflow("bmc-status",
                       "name: bmc-status\nversion: \"1\"\nscope: host\nsteps:\n  - id: status\n    target: bmc\n"
                       "    run: [kiln-oob, power, status, --bmc, \"{{host.bmc}}\"]\n    timeout: 1m\n",
                       {"alice", "alice"})
          .ok());
  StartRequest req;
  req.workflow = "bmc-status";
  for (int i = 1; i <= 18; ++i) req.hosts.push_back("b1-p1-h" + std::string(i < 10 ? "0" : "") + std::to_string(i));
  auto run = t.service.startRun(req, {"alice", "alice"});
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto assignments = t.store.runAssignments(run->row.id);
  ASSERT_TRUE(assignments.ok());
  std::set<std::string> used;
  for (const auto& a : *assignments) {
    EXPECT_EQ(a.runner, core::runnerFor(m, a.host)) << a.host;
    used.insert(a.runner);
  }
  EXPECT_EQ(assignments->size(), 18u);
  EXPECT_EQ(used, (std::set<std::string>{"oob-a", "oob-b", "oob-c"}));
  EXPECT_EQ(std::set<std::string>(t.told.begin(), t.told.end()),
            (std::set<std::string>{"runner:oob-a", "runner:oob-b", "runner:oob-c"}))
      << "each runner is told, no host is";
}

}  // namespace
}  // namespace kiln::runs
