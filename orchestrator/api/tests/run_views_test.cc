// The run answers' shapes (run_views.h): the JSON the routes send for a run, a page of runs,
// the workflows and the quarantine queue, field by field as api/openapi.yaml names them.

#include "orchestrator/api/run_views.h"

#include <chrono>

#include <gtest/gtest.h>

#include "orchestrator/core/iso_time.h"

namespace kiln::api {
namespace {

using nlohmann::json;
using runs::HostStatus;

const core::TimePoint kT0 = core::TimePoint{} + std::chrono::hours(24 * 365 * 56);

std::int64_t ms(core::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// A rollout's run on two hosts: one passed its step (the report kept its tails and a parsed
// output), one waits for a retry in a retest.
runs::RunView twoHostRun() {
  runs::RunView v;
  v.row.id = "r-12";
  v.row.workflow = "firmware-upgrade";
  v.row.workflow_hash = "abc";
  v.row.scope = "host";
  v.row.purpose = "rollout";
  v.row.state = "running";
  v.row.created_by = "controller";
  v.row.owner = "ro-3/b1-p1/upgrade/2";
  v.row.params = {{"bundle", "gb200-fw"}};
  v.row.created_at = kT0;
  v.progress.passed = 1;
  v.progress.running = 1;
  v.steps = std::vector<std::string>{"flash", "verify"};

  runs::HostView done;
  done.host = "b1-p1-h01";
  done.group = "b1-p1-h01";
  done.status = HostStatus::kPassed;
  runs::StepView flashed;
  flashed.record.step_id = "flash";
  flashed.record.outcome = "passed";
  flashed.record.exit_code = 0;
  flashed.record.duration_ms = 4200;
  flashed.record.finished_at = kT0 + std::chrono::seconds(5);
  flashed.record.assignment_id = "r-12:b1-p1-h01:1";
  flashed.output = runs::StepView::Tails{"flashed\n", ""};
  done.steps.push_back(flashed);
  runs::StepView shared;  // no report of its own: no tails, and never finished
  shared.record.step_id = "verify";
  shared.record.outcome = "shared";
  done.steps.push_back(shared);
  done.parsed["flash"] = json{{"version", "1.4.0"}};
  v.hosts.push_back(done);

  runs::HostView waiting;
  waiting.host = "b1-p1-h02";
  waiting.group = "b1-p1-h02";
  waiting.status = HostStatus::kRunning;
  waiting.attempt = 2;
  waiting.current_step = "flash";
  waiting.failures = {"flash: exit 3"};
  waiting.waiting_until = kT0 + std::chrono::minutes(5);
  waiting.waiting_for = "slurm node n2 is MIXED+DRAIN (job 4 running): waiting for its jobs to leave";
  runs::RetestState retest;
  retest.round = 1;
  retest.elements["gpu 2 link 7"] = {false, true};
  waiting.retest = retest;
  v.hosts.push_back(waiting);
  return v;
}

TEST(RunViewsTest, TheRunViewHasTheRunItsProgressEachHostWithItsStepsAndTheRollout) {
  const json j = toJson(twoHostRun());
  EXPECT_EQ(j["id"], "r-12");
  EXPECT_EQ(j["workflow"], "firmware-upgrade");
  EXPECT_EQ(j["workflow_hash"], "abc");
  EXPECT_EQ(j["scope"], "host");
  EXPECT_EQ(j["purpose"], "rollout");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["created_by"], "controller");
  EXPECT_EQ(j["params"], (json{{"bundle", "gb200-fw"}}));
  EXPECT_EQ(j["summary"], json::object());
  EXPECT_EQ(j["created_at"], core::isoTime(kT0));
  EXPECT_EQ(j["created_at_ms"], ms(kT0));
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_TRUE(j["finished_at_ms"].is_null());
  EXPECT_EQ(j["progress"], (json{{"hosts", 2}, {"passed", 1}, {"failed", 0}, {"running", 1}, {"cancelled", 0}}));
  EXPECT_EQ(j["steps"], (json{"flash", "verify"}));
  EXPECT_EQ(j["rollout"], (json{{"id", "ro-3"}, {"pod", "b1-p1"}, {"phase", "upgrade"}, {"attempt", 2}}));
  ASSERT_EQ(j["hosts"].size(), 2u);

  const json& done = j["hosts"][0];
  EXPECT_EQ(done["host"], "b1-p1-h01");
  EXPECT_EQ(done["group"], "b1-p1-h01");
  EXPECT_EQ(done["status"], "passed");
  EXPECT_EQ(done["healthy"], true);
  EXPECT_EQ(done["current_step"], "");
  EXPECT_TRUE(done["assignment"].is_null());
  EXPECT_TRUE(done["waiting_until"].is_null());
  EXPECT_TRUE(done["waiting_for"].is_null());
  EXPECT_FALSE(done.contains("retest"));
  EXPECT_EQ(done["parsed"], (json{{"flash", {{"version", "1.4.0"}}}}));
  ASSERT_EQ(done["steps"].size(), 2u);
  const json& flashed = done["steps"][0];
  EXPECT_EQ(flashed["step"], "flash");
  EXPECT_EQ(flashed["outcome"], "passed");
  EXPECT_EQ(flashed["duration_ms"], 4200);
  EXPECT_EQ(flashed["assignment"], "r-12:b1-p1-h01:1");
  EXPECT_EQ(flashed["finished_at"], core::isoTime(kT0 + std::chrono::seconds(5)));
  EXPECT_EQ(flashed["finished_at_ms"], ms(kT0 + std::chrono::seconds(5)));
  EXPECT_EQ(flashed["stdout_tail"], "flashed\n");
  EXPECT_EQ(flashed["stderr_tail"], "");
  EXPECT_EQ(flashed, (json{{"step", "flash"}, {"pass", 1}, {"attempt", 1}, {"retest_round", 0},
                           {"outcome", "passed"}, {"message", ""}, {"exit_code", 0}, {"duration_ms", 4200},
                           {"finished_at", core::isoTime(kT0 + std::chrono::seconds(5))},
                           {"finished_at_ms", ms(kT0 + std::chrono::seconds(5))}, {"assignment", "r-12:b1-p1-h01:1"},
                           {"checks", json::array()}, {"stdout_tail", "flashed\n"}, {"stderr_tail", ""}}))
      << "RunStep's fields, no more";
  const json& shared = done["steps"][1];
  EXPECT_EQ(shared["outcome"], "shared");
  EXPECT_EQ(shared["finished_at_ms"], 0);
  EXPECT_FALSE(shared.contains("finished_at")) << "an attempt that never finished has no time";
  EXPECT_FALSE(shared.contains("stdout_tail")) << "no report: no tails";

  const json& waiting = j["hosts"][1];
  EXPECT_EQ(waiting["status"], "running");
  EXPECT_TRUE(waiting["healthy"].is_null()) << "no verdict yet";
  EXPECT_EQ(waiting["current_step"], "flash");
  EXPECT_EQ(waiting["attempt"], 2);
  EXPECT_EQ(waiting["failures"], (json{"flash: exit 3"}));
  EXPECT_EQ(waiting["warnings"], json::array());
  EXPECT_EQ(waiting["parsed"], json::object());
  EXPECT_EQ(waiting["waiting_until_ms"], ms(kT0 + std::chrono::minutes(5)));
  EXPECT_EQ(waiting["waiting_for"], "slurm node n2 is MIXED+DRAIN (job 4 running): waiting for its jobs to leave");
  EXPECT_EQ(waiting["retest"], (json{{"round", 1}, {"elements", {{"gpu 2 link 7", {false, true}}}}}));
}

TEST(RunViewsTest, ARunNoRolloutStartedWhoseWorkflowNoLongerLoadsHasNoStepsAndANullRollout) {
  runs::RunView v = twoHostRun();
  v.row.purpose = "manual";
  v.row.finished_at = kT0 + std::chrono::hours(1);
  v.steps.reset();
  v.hosts.clear();
  v.progress = {};
  const json j = toJson(v);
  EXPECT_FALSE(j.contains("steps"));
  EXPECT_TRUE(j["rollout"].is_null());
  EXPECT_EQ(j["hosts"], json::array());
  EXPECT_EQ(j["finished_at_ms"], ms(kT0 + std::chrono::hours(1)));
}

TEST(RunViewsTest, APageOfRunsHasEachRunsSummaryAndTheNextCursor) {
  core::Page<runs::RunRow> page;
  runs::RunRow r;
  r.id = "r-3";
  r.workflow = "l11-burn-in";
  r.purpose = "burn_in";
  r.scope = "pod";
  r.state = "passed";
  r.created_by = "alice";
  r.summary = {{"hosts", 18}};
  r.pods = {"b1-p1"};
  r.created_at = kT0;
  r.finished_at = kT0 + std::chrono::hours(2);
  page.items.push_back(r);
  page.next_cursor = "c-1";
  const json j = runListJson(page);
  EXPECT_EQ(j["next_cursor"], "c-1");
  ASSERT_EQ(j["items"].size(), 1u);
  const json& item = j["items"][0];
  EXPECT_EQ(item["id"], "r-3");
  EXPECT_EQ(item["workflow"], "l11-burn-in");
  EXPECT_EQ(item["purpose"], "burn_in");
  EXPECT_EQ(item["scope"], "pod");
  EXPECT_EQ(item["state"], "passed");
  EXPECT_EQ(item["created_by"], "alice");
  EXPECT_EQ(item["summary"], (json{{"hosts", 18}}));
  EXPECT_EQ(item["pods"], (json{"b1-p1"}));
  EXPECT_TRUE(item["rollout"].is_null());
  EXPECT_EQ(item["created_at_ms"], ms(kT0));
  EXPECT_EQ(item["finished_at_ms"], ms(kT0 + std::chrono::hours(2)));
  EXPECT_FALSE(item.contains("hosts")) << "a summary, not the view";
  EXPECT_TRUE(runListJson({}).at("next_cursor").is_null());
}

TEST(RunViewsTest, TheQuarantineQueueNamesEachHostsValidationRunOrNull) {
  runs::QuarantineEntry with_run;
  with_run.row.host.id = "b1-p1-h07";
  with_run.row.host.pod = "b1-p1";
  with_run.row.host.building = "b1";
  with_run.row.host.state_since = kT0;
  with_run.row.repairs = 3;
  with_run.row.last_failure = "hbm: uncorrectable ECC";
  with_run.row.run_id = "r-40";
  with_run.row.run_state = "running";
  with_run.row.progress = {{"pass", 2}};
  with_run.seconds_in_quarantine = 93600;
  with_run.repeat_offender = true;
  runs::QuarantineEntry without = with_run;
  without.row.host.id = "b1-p1-h08";
  without.row.run_id.clear();
  without.row.run_state.clear();
  without.repeat_offender = false;
  const json j = quarantineJson({with_run, without});
  EXPECT_TRUE(j["next_cursor"].is_null());
  ASSERT_EQ(j["items"].size(), 2u);
  const json& q = j["items"][0];
  EXPECT_EQ(q["host"], "b1-p1-h07");
  EXPECT_EQ(q["pod"], "b1-p1");
  EXPECT_EQ(q["building"], "b1");
  EXPECT_EQ(q["since_ms"], ms(kT0));
  EXPECT_EQ(q["seconds_in_quarantine"], 93600);
  EXPECT_EQ(q["repairs"], 3);
  EXPECT_EQ(q["repeat_offender"], true);
  EXPECT_EQ(q["last_failure"], "hbm: uncorrectable ECC");
  EXPECT_EQ(q["validation_run"], "r-40");
  EXPECT_EQ(q["validation_state"], "running");
  EXPECT_EQ(q["progress"], (json{{"pass", 2}}));
  EXPECT_TRUE(j["items"][1]["validation_run"].is_null());
  EXPECT_TRUE(j["items"][1]["validation_state"].is_null());
  EXPECT_EQ(j["items"][1]["repeat_offender"], false);
}

TEST(RunViewsTest, AWorkflowThatNoLongerLoadsIsListedByNameHashAndSourceOnly) {
  runs::WorkflowInfo loads;
  loads.row = {"fw-check", "h1", "api", "name: fw-check\n", {}};
  auto spec = std::make_shared<workflow::WorkflowSpec>();
  spec->name = "fw-check";
  spec->version = "3";
  spec->description = "checks firmware";
  spec->scope = workflow::Scope::kPod;
  spec->steps.resize(2);
  loads.spec = spec;
  runs::WorkflowInfo broken;
  broken.row = {"old", "h2", "/etc/kiln/workflows/old.yaml", "", {}};
  const json j = workflowListJson({loads, broken});
  EXPECT_TRUE(j["next_cursor"].is_null());
  EXPECT_EQ(j["items"][0], (json{{"name", "fw-check"}, {"hash", "h1"}, {"source", "api"}, {"version", "3"},
                                 {"description", "checks firmware"}, {"scope", "pod"}, {"steps", 2}}));
  EXPECT_EQ(j["items"][1], (json{{"name", "old"}, {"hash", "h2"}, {"source", "/etc/kiln/workflows/old.yaml"}}));

  const json one = workflowJson(loads);
  EXPECT_EQ(one["name"], "fw-check");
  EXPECT_EQ(one["hash"], "h1");
  EXPECT_EQ(one["yaml"], "name: fw-check\n");
  EXPECT_EQ(one["source"], "api");
  EXPECT_EQ(toJson(runs::WorkflowPut{"fw-check", "h1", true}),
            (json{{"name", "fw-check"}, {"hash", "h1"}, {"changed", true}}));
}

}  // namespace
}  // namespace kiln::api
