// Tier `store`: reports applied in batches (RunService::reportBatch over PgRunStore) on a real
// PostgreSQL: what each report of a batch answers, what lands in the run, and that one bad
// report of a batch costs only its own answer.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "orchestrator/core/clock.h"
#include "orchestrator/db/pg_run_store.h"
#include "orchestrator/db/pg_store.h"
#include "orchestrator/db/tests/fleet_fixture.h"
#include "orchestrator/runs/runs_room.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using runs::ReportOutcome;
using runs::RunService;

// Two quick steps on every host, for a host- or pod-scope run.
std::string twoSteps(const std::string& name, const std::string& scope) {
  return "name: " + name + "\nversion: \"1\"\nscope: " + scope +
         "\nsteps:\n  - id: first\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n"
         "  - id: second\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n";
}

class PgRunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto pod_spec = fixture::podSpec("t01", "t01-b01", "t01-b01-p01", core::Platform::kClemente);
    ASSERT_TRUE(fleet_->importFleet(fixture::fleetOf({pod_spec}), admin_).ok());
    auto pod = fleet_->getPod("t01-b01-p01");
    ASSERT_TRUE(pod.ok());
    for (const auto& h : pod->hosts) hosts_.push_back(h.id);
    ASSERT_EQ(hosts_.size(), 18u);
    ASSERT_TRUE(service_.workflows.putWorkflow("two-steps", twoSteps("two-steps", "host"), admin_).ok());
    ASSERT_TRUE(service_.workflows.putWorkflow("pod-steps", twoSteps("pod-steps", "pod"), admin_).ok());
  }

  protocol::Assignment claim(const std::string& host) {
    auto a = service_.agent_work.claimWork(host);
    EXPECT_TRUE(a.ok() && a->has_value()) << host;
    return a.ok() && *a ? **a : protocol::Assignment{};
  }

  static runs::AgentWorkService::ReportRequest passed(const std::string& host, const protocol::Assignment& a,
                                                      bool ready = true) {
    return {a.id, host,
            json{{"lease", a.lease}, {"host", host}, {"started", true}, {"exit_code", 0}, {"duration_ms", 3},
                 {"ready", ready}}};
  }

  std::string step(const protocol::Assignment& a) { return a.step_id; }
  // Workflow "one-step": a host workflow of one step.
  void putOneStep() {
    ASSERT_TRUE(service_.workflows
                    .putWorkflow("one-step",
                                 "name: one-step\nversion: \"1\"\nscope: host\nsteps:\n"
                                 "  - id: only\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n",
                                 admin_)
                    .ok());
  }

  kiln::testing::TestDatabase db_;
  std::unique_ptr<core::Store> fleet_ = makePgStore({db_.url(), 2});
  std::unique_ptr<runs::RunStore> store_ = makePgRunStore({db_.url(), 2});
  core::FakeClock clock_;
  runs::RunsRoom service_{*fleet_, *store_, clock_, {}, nullptr};
  core::Actor admin_{"test-admin", "test"};
  std::vector<std::string> hosts_;
};

TEST_F(PgRunStoreTest, ABatchAnswersEachReportAndHandsEachReadyHostItsNextStep) {
  auto run = service_.runs.startRun({"two-steps", {hosts_[0], hosts_[1], hosts_[2]}, {}, json::object(), "manual", ""},
                                    admin_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const protocol::Assignment a0 = claim(hosts_[0]), a1 = claim(hosts_[1]), a2 = claim(hosts_[2]);

  auto wrong_host = passed(hosts_[1], a0);  // host 1's agent reporting host 0's step
  auto unknown = passed(hosts_[2], a2);
  unknown.assignment_id = "r-9:nowhere:1";
  auto answers = service_.agent_work.reportBatch({passed(hosts_[0], a0), wrong_host, passed(hosts_[1], a1, false),
                                                  unknown, passed(hosts_[2], a2), passed(hosts_[0], a0)});
  ASSERT_EQ(answers.size(), 6u);
  ASSERT_TRUE(answers[0].ok()) << answers[0].error().message;
  EXPECT_EQ(answers[0]->outcome, ReportOutcome::kAccepted);
  // Host 0 reported twice in the batch (its retry caught up with the first attempt, whose
  // answer the agent will not read): the next step goes with the last answer.
  EXPECT_FALSE(answers[0]->next.has_value());
  ASSERT_FALSE(answers[1].ok());
  EXPECT_EQ(answers[1].error().code, ErrorCode::kPermissionDenied);
  ASSERT_TRUE(answers[2].ok());
  EXPECT_EQ(answers[2]->outcome, ReportOutcome::kAccepted);
  EXPECT_FALSE(answers[2]->next.has_value()) << "not ready: nothing handed out";
  ASSERT_FALSE(answers[3].ok());
  EXPECT_EQ(answers[3].error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(answers[4].ok());
  EXPECT_EQ(answers[4]->outcome, ReportOutcome::kAccepted);
  EXPECT_TRUE(answers[4]->next.has_value());
  // The same report twice in one batch (a retry that caught up): applied once.
  ASSERT_TRUE(answers[5].ok());
  EXPECT_EQ(answers[5]->outcome, ReportOutcome::kDuplicate);
  ASSERT_TRUE(answers[5]->next.has_value());
  EXPECT_EQ(step(*answers[5]->next), "second");
  EXPECT_EQ(answers[5]->next->lease, 1);

  EXPECT_EQ(db_.query("SELECT count(*) FROM assignments WHERE state = 'done'"), "3");
  EXPECT_EQ(db_.query("SELECT count(*) FROM assignments WHERE step_id = 'second' AND state = 'dispatched'"), "2");
  EXPECT_EQ(db_.query("SELECT count(*) FROM assignments WHERE step_id = 'second' AND state = 'pending'"), "1");
  // Host 1 was not ready: its next step waits for its idle poll.
  EXPECT_EQ(step(claim(hosts_[1])), "second");
  // A stale lease is refused and hands out nothing.
  auto stale = passed(hosts_[0], *answers[5]->next);
  stale.body["lease"] = 7;
  auto refused = service_.agent_work.reportBatch({stale});
  ASSERT_TRUE(refused[0].ok());
  EXPECT_EQ(refused[0]->outcome, ReportOutcome::kStale);
  EXPECT_FALSE(refused[0]->next.has_value());
}

TEST_F(PgRunStoreTest, TheReportThatClosesARunsLastGroupSaysSoOnce) {
  int completions = 0;
  runs::RunServiceOptions o;
  o.on_run_complete = [&] { ++completions; };
  runs::RunsRoom service(*fleet_, *store_, clock_, o, nullptr);
  auto run = service.runs.startRun({"two-steps", {hosts_[0], hosts_[1]}, {}, json::object(), "manual", ""}, admin_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const std::string id = run->row.id;
  // Both hosts through both steps; only host 1's last report leaves the run without an open group.
  auto first =
      service.agent_work.reportBatch({passed(hosts_[0], claim(hosts_[0])), passed(hosts_[1], claim(hosts_[1]))});
  ASSERT_TRUE(first[0].ok() && first[0]->next && first[1].ok() && first[1]->next);
  EXPECT_EQ(completions, 0);
  ASSERT_TRUE(service.agent_work.reportBatch({passed(hosts_[0], *first[0]->next, false)})[0].ok());
  EXPECT_EQ(completions, 0) << "host 1's group is still open";
  EXPECT_EQ(db_.query("SELECT state FROM workflow_runs WHERE id = '" + id + "'"), "running");
  ASSERT_TRUE(service.agent_work.reportBatch({passed(hosts_[1], *first[1]->next, false)})[0].ok());
  EXPECT_EQ(completions, 1);
  // A duplicate of that report closes nothing.
  ASSERT_TRUE(service.agent_work.reportBatch({passed(hosts_[1], *first[1]->next, false)})[0].ok());
  EXPECT_EQ(completions, 1);
  service.timers.tick();
  EXPECT_EQ(db_.query("SELECT state FROM workflow_runs WHERE id = '" + id + "'"), "passed");
}

// Runs whose last groups closed since the last pass are finished together, in one transaction
// (their finished_at, PostgreSQL's now(), is its start), each with its own verdict and audit
// record; a run with a group still open stays running, and a cancelled one stays cancelled.
TEST_F(PgRunStoreTest, RunsThatEndedSinceTheLastPassAreFinishedInOneTransactionEachWithItsVerdict) {
  putOneStep();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto run = service_.runs.startRun({"one-step", {hosts_[i]}, {}, json::object(), "manual", ""}, admin_);
    ASSERT_TRUE(run.ok()) << run.error().message;
    ids.push_back(run->row.id);
  }
  auto broken = passed(hosts_[1], claim(hosts_[1]), false);
  broken.body["exit_code"] = 3;
  const auto answers = service_.agent_work.reportBatch({passed(hosts_[0], claim(hosts_[0]), false), broken});
  ASSERT_TRUE(answers[0].ok() && answers[1].ok());
  ASSERT_TRUE(service_.runs.cancelRun(ids[3], admin_).ok());
  auto state = [&](int i) { return db_.query("SELECT state FROM workflow_runs WHERE id = '" + ids[i] + "'"); };
  ASSERT_EQ(state(0), "running");

  service_.timers.tick();
  EXPECT_EQ(state(0), "passed");
  EXPECT_EQ(state(1), "failed");
  EXPECT_EQ(state(2), "running") << "its host has not reported";
  EXPECT_EQ(state(3), "cancelled");
  EXPECT_EQ(db_.query("SELECT count(DISTINCT finished_at) FROM workflow_runs WHERE id IN ('" + ids[0] + "', '" +
                      ids[1] + "')"),
            "1")
      << "finished in one transaction";
  EXPECT_EQ(db_.query("SELECT summary->>'healthy' || '/' || (summary->>'hosts') FROM workflow_runs WHERE id = '" +
                      ids[1] + "'"),
            "0/1");
  EXPECT_EQ(db_.query("SELECT string_agg(target || ':' || (details->>'state'), ',' ORDER BY details->>'state' DESC) FROM audit_log"
                      " WHERE action = 'run.finish'"),
            ids[0] + ":passed," + ids[1] + ":failed");
  service_.timers.tick();  // nothing more to finish
  EXPECT_EQ(db_.query("SELECT count(*) FROM audit_log WHERE action = 'run.finish'"), "2");
}

// Two batches that close a run's last two groups at once each see the other's group still open
// from inside their transactions; the run is complete all the same, and the later commit says
// so (a check after it). Before, neither did and the run waited for the controller's periodic
// pass. The hosts' rows are held from a third session, so that both transactions block on their
// failed host's transition (after their own look at the run's groups) until both have looked.
TEST_F(PgRunStoreTest, TwoBatchesClosingARunsLastGroupsAtOnceStillSayItIsComplete) {
  putOneStep();
  std::atomic<int> completions{0};
  runs::RunServiceOptions o;
  o.on_run_complete = [&] { ++completions; };
  runs::RunsRoom service(*fleet_, *store_, clock_, o, nullptr);
  auto run = service.runs.startRun({"one-step", {hosts_[0], hosts_[1]}, {}, json::object(), "pre_job", ""}, admin_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto failed = [&](const std::string& host) {
    auto r = passed(host, claim(host), false);
    r.body["exit_code"] = 3;
    return r;
  };
  const auto r0 = failed(hosts_[0]), r1 = failed(hosts_[1]);

  pqxx::connection blocker(db_.url());
  pqxx::work hold(blocker);
  hold.exec_params("SELECT id FROM hosts WHERE id = $1 OR id = $2 FOR UPDATE", hosts_[0], hosts_[1]);
  std::vector<Result<runs::ReportAnswer>> a0, a1;
  std::thread t0([&] { a0 = service.agent_work.reportBatch({r0}); });
  std::thread t1([&] { a1 = service.agent_work.reportBatch({r1}); });
  bool both_waiting = false;
  for (int i = 0; i < 1000 && !both_waiting; ++i) {
    both_waiting = db_.query("SELECT count(*) FROM pg_locks WHERE NOT granted") == "2";
    if (!both_waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  hold.abort();
  t0.join();
  t1.join();
  ASSERT_TRUE(both_waiting) << "the two transactions never waited together";
  ASSERT_EQ(a0.size(), 1u);
  ASSERT_EQ(a1.size(), 1u);
  ASSERT_TRUE(a0[0].ok() && a1[0].ok());
  EXPECT_GE(completions.load(), 1) << "neither batch said the run was complete";
  EXPECT_EQ(db_.query("SELECT count(*) FROM run_groups WHERE run_id = '" + run->row.id + "' AND NOT done"), "0");
}

// The batched heartbeat write gives way to a host transition's row locks (which it could
// deadlock with: it locks the fleet's rows in its join's order) instead of waiting for them; the
// gateway keeps the beats for its next flush (agent_gateway_test).
TEST_F(PgRunStoreTest, TheHeartbeatWriteGivesWayToAHeldHostRow) {
  pqxx::connection blocker(db_.url());
  pqxx::work hold(blocker);
  hold.exec_params("SELECT id FROM hosts WHERE id = $1 FOR UPDATE", hosts_[1]);
  std::thread release([&] {  // a write that waits is let through after 2 s, and fails below
    std::this_thread::sleep_for(std::chrono::seconds(2));
    hold.abort();
  });
  const auto began = std::chrono::steady_clock::now();
  auto written = store_->recordHeartbeats({{hosts_[0], "boot-0", clock_.now()}, {hosts_[1], "boot-1", clock_.now()}});
  const auto waited = std::chrono::steady_clock::now() - began;
  release.join();
  EXPECT_FALSE(written.ok()) << "the write waited for the row and went through";
  EXPECT_LT(waited, std::chrono::seconds(1)) << "gave way only after PostgreSQL's deadlock_timeout";
  ASSERT_TRUE(store_->recordHeartbeats({{hosts_[0], "boot-0", clock_.now()}, {hosts_[1], "boot-1", clock_.now()}}).ok());
  EXPECT_EQ(db_.query("SELECT boot_id FROM hosts WHERE id = '" + hosts_[1] + "'"), "boot-1");
}

TEST_F(PgRunStoreTest, AHostFailedByAPreJobCheckKeepsEveryFailureAsItsReason) {
  ASSERT_TRUE(
      service_.workflows
          .putWorkflow("two-soft",
                       "name: two-soft\nversion: \"1\"\nscope: host\nsteps:\n"
                       "  - id: first\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n    on_failure: continue\n"
                       "  - id: second\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n",
                       admin_)
          .ok());
  auto run = service_.runs.startRun({"two-soft", {hosts_[0]}, {}, json::object(), "pre_job", ""}, admin_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto failed = [&](const protocol::Assignment& a) {
    auto r = passed(hosts_[0], a);
    r.body["exit_code"] = 3;
    return r;
  };
  auto first = service_.agent_work.reportBatch({failed(claim(hosts_[0]))});
  ASSERT_TRUE(first[0].ok() && first[0]->next) << "a soft failure goes on to the next step";
  ASSERT_TRUE(service_.agent_work.reportBatch({failed(*first[0]->next)})[0].ok());
  service_.timers.tick();
  EXPECT_EQ(db_.query("SELECT state FROM hosts WHERE id = '" + hosts_[0] + "'"), "failed");
  const std::string reason = db_.query("SELECT state_reason FROM hosts WHERE id = '" + hosts_[0] + "'");
  EXPECT_NE(reason.find("first: "), std::string::npos) << reason;
  EXPECT_NE(reason.find("; second: "), std::string::npos) << reason;
}

TEST_F(PgRunStoreTest, ReportsOfOnePodScopeGroupInOneBatchAreAppliedInOrderToItsState) {
  auto run = service_.runs.startRun({"pod-steps", {}, {"t01-b01-p01"}, json::object(), "manual", ""}, admin_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const std::string id = run->row.id;
  std::vector<runs::AgentWorkService::ReportRequest> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(passed(hosts_[i], claim(hosts_[i])));
  auto answers = service_.agent_work.reportBatch(batch);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(answers[i].ok()) << answers[i].error().message;
    EXPECT_EQ(answers[i]->outcome, ReportOutcome::kAccepted) << i;
    ASSERT_TRUE(answers[i]->next.has_value()) << i;
    EXPECT_EQ(step(*answers[i]->next), "second");
  }
  // One group row holds all five results: each host of the five is on its second step.
  auto view = service_.runs.runView(id);
  ASSERT_TRUE(view.ok());
  int on_second = 0, records = 0;
  for (const auto& h : view->hosts) {
    on_second += h.current_step == "second";
    records += static_cast<int>(h.steps.size());
  }
  EXPECT_EQ(on_second, 5);
  EXPECT_EQ(records, 5);
  EXPECT_EQ(db_.query("SELECT count(*) FROM assignments WHERE run_id = '" + id + "' AND step_id = 'second'"), "5");
}

// A group's state keeps no step records: each write appends them to the run's step log and
// the run view joins them back, in order. A state written before the log (schema 16) embeds
// its records: the view reads them there, and the group's next write moves them to the log.
TEST_F(PgRunStoreTest, StepRecordsGoToTheRunsLogAndTheViewJoinsThemBack) {
  auto run = service_.runs.startRun({"pod-steps", {}, {"t01-b01-p01"}, json::object(), "manual", ""}, admin_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const std::string id = run->row.id;
  const std::string in_states = "SELECT count(*) FROM run_groups g, jsonb_array_elements(g.state::jsonb->'hosts') h"
                                " WHERE g.run_id = '" + id + "' AND jsonb_array_length(h->'history') > 0";
  std::vector<runs::AgentWorkService::ReportRequest> batch;
  for (int i = 0; i < 3; ++i) batch.push_back(passed(hosts_[i], claim(hosts_[i])));
  auto answers = service_.agent_work.reportBatch(batch);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(answers[i].ok() && answers[i]->next) << i;
  EXPECT_EQ(db_.query("SELECT count(*) FROM run_step_records WHERE run_id = '" + id + "'"), "3");
  EXPECT_EQ(db_.query(in_states), "0");

  // As a kilnd before the log left it: host 0's and 1's records back in the state, none in the log.
  db_.query("WITH recs AS (SELECT host_id, jsonb_agg(record::jsonb ORDER BY id) AS h FROM run_step_records"
            " WHERE run_id = '" + id + "' AND host_id <> '" + hosts_[2] + "' GROUP BY host_id)"
            " UPDATE run_groups g SET state = (jsonb_set(g.state::jsonb, '{hosts}', (SELECT jsonb_agg((e - 'leader_outcomes')"
            " || jsonb_build_object('history', COALESCE(r.h, '[]'::jsonb)) ORDER BY o)"
            " FROM jsonb_array_elements(g.state::jsonb->'hosts') WITH ORDINALITY AS x(e, o) LEFT JOIN recs r ON r.host_id = e->>'host')))::json"
            " WHERE g.run_id = '" + id + "'");
  db_.query("DELETE FROM run_step_records WHERE run_id = '" + id + "' AND host_id <> '" + hosts_[2] + "'");
  ASSERT_EQ(db_.query(in_states), "2");
  auto steps_of = [&](const runs::RunView& v, const std::string& host) {
    std::string out;
    for (const auto& h : v.hosts)
      if (h.host == host)
        for (const auto& s : h.steps) out += (out.empty() ? "" : " ") + s.record.step_id + ":" + s.record.outcome;
    return out;
  };
  auto before = service_.runs.runView(id);
  ASSERT_TRUE(before.ok()) << before.error().message;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(steps_of(*before, hosts_[i]), "first:passed") << i;

  // Host 0's second step: the group's write moves every embedded record to the log first.
  ASSERT_TRUE(service_.agent_work.reportBatch({passed(hosts_[0], *answers[0]->next)})[0].ok());
  EXPECT_EQ(db_.query(in_states), "0");
  EXPECT_EQ(db_.query("SELECT count(*) FROM run_step_records WHERE run_id = '" + id + "'"), "4");
  EXPECT_EQ(db_.query("SELECT string_agg(record->>'step', ' ' ORDER BY id) FROM run_step_records"
                      " WHERE run_id = '" + id + "' AND host_id = '" + hosts_[0] + "'"),
            "first second");
  auto after = service_.runs.runView(id);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(steps_of(*after, hosts_[0]), "first:passed second:passed");
  EXPECT_EQ(steps_of(*after, hosts_[1]), "first:passed");
  EXPECT_EQ(steps_of(*after, hosts_[2]), "first:passed");
  // The output of each record comes from its assignment's report, as before.
  for (const auto& h : after->hosts) {
    if (h.host != hosts_[0]) continue;
    for (const auto& s : h.steps) EXPECT_TRUE(s.output.has_value()) << s.record.step_id;
  }
}

TEST_F(PgRunStoreTest, AReportThatIsNotAnObjectFailsAloneAndTheRestOfTheBatchLands) {
  auto run = service_.runs.startRun({"two-steps", {hosts_[0], hosts_[1]}, {}, json::object(), "manual", ""}, admin_);
  ASSERT_TRUE(run.ok());
  const protocol::Assignment a0 = claim(hosts_[0]), a1 = claim(hosts_[1]);
  runs::AgentWorkService::ReportRequest bad{a1.id, hosts_[1], json{{"lease", "one"}}};
  auto answers = service_.agent_work.reportBatch({bad, passed(hosts_[0], a0)});
  ASSERT_FALSE(answers[0].ok());
  EXPECT_EQ(answers[0].error().code, ErrorCode::kInvalidContent);
  ASSERT_TRUE(answers[1].ok());
  EXPECT_EQ(answers[1]->outcome, ReportOutcome::kAccepted);
  EXPECT_EQ(db_.query("SELECT state FROM assignments WHERE id = '" + a1.id + "'"), "dispatched");
}

}  // namespace
}  // namespace kiln::db
