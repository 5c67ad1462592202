// Tier `store`: one suite for runs::RunStore, run against the in-memory fake that the unit tests
// use (orchestrator/runs/testing/fake_run_store.h, over core::testing::FakeFleet) and against
// PgRunStore on a real PostgreSQL, so that the two keep the same promises (run_store.h): what a
// report of a batch answers (accepted, duplicate, cancelled, stale), what it writes, the step it
// hands out in the same transaction, the host moves a run's verdict makes, the run it completes,
// and the claims, leases and verdicts around it. Most cases go through the run service, whose
// engine functions are the ones kilnd gives the store; a few hand the store their own GroupFn
// to see exactly what it is called with.
//
// Each half reads a FakeClock started at the wall time, since PostgreSQL stamps leases with its
// own now(). The fake half needs no database; the PostgreSQL half needs KILN_TEST_PG
// (tests/support/test_db.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/db/pg_run_store.h"
#include "orchestrator/db/pg_store.h"
#include "orchestrator/db/tests/contract_support.h"
#include "orchestrator/db/tests/fleet_fixture.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/runs/testing/fake_run_store.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using runs::ReportOutcome;
using runs::RunService;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const core::Actor kAdmin{"test-admin", "test"};

// One implementation under the suite: the run store, the fleet whose hosts its runs move, one
// pod of 18 hosts in that fleet, and the clock the test moves (the fake store's time).
class Backend {
 public:
  virtual ~Backend() = default;
  core::FakeClock& clock() { return clock_; }
  virtual runs::RunStore& store() = 0;
  virtual core::FleetReads& fleet() = 0;
  virtual const std::string& pod() const = 0;
  virtual const std::vector<std::string>& hosts() const = 0;
  // Puts a host in `state` as a fixture does: no lifecycle check, event or audit record.
  virtual void setHostState(const std::string& host, core::HostState state) = 0;
  // The audit records of `action` on `target`, oldest first.
  virtual std::vector<core::AuditRecord> audits(const std::string& action, const std::string& target) = 0;
  // The pod's management block (issue 32), as an import sets it.
  virtual void setManagement(const core::ManagementSpec& m) = 0;
  // The version of `kind` stored for a device (a host or a switch tray); "" when none.
  virtual std::string componentVersion(const std::string& device, const std::string& kind) = 0;
  // Whether an agent's reported inventory is written (PostgreSQL; the fake keeps none).
  virtual bool keepsAgentInventory() const = 0;

 protected:
  // PostgreSQL stamps leases with its own now(): the clock starts at the wall time.
  core::FakeClock clock_{std::chrono::system_clock::now()};
};

class FakeBackend final : public Backend {
 public:
  FakeBackend() : fleet_(&clock_), store_(&fleet_, &clock_) {
    fleet_.addPod(pod_, "b1");
    for (const auto& h : fleet_.pods_.at(pod_).hosts) hosts_.push_back(h.id);
  }
  runs::RunStore& store() override { return store_; }
  core::FleetReads& fleet() override { return fleet_; }
  const std::string& pod() const override { return pod_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  void setHostState(const std::string& host, core::HostState state) override { fleet_.setState(host, state); }
  void setManagement(const core::ManagementSpec& m) override { fleet_.setManagement(pod_, m); }
  std::string componentVersion(const std::string& device, const std::string& kind) override {
    auto it = store_.deviceVersions().find({device, kind});
    return it == store_.deviceVersions().end() ? "" : it->second;
  }
  bool keepsAgentInventory() const override { return false; }
  std::vector<core::AuditRecord> audits(const std::string& action, const std::string& target) override {
    std::vector<core::AuditRecord> out;
    for (const auto& a : fleet_.audits())
      if (a.action == action && a.target == target) out.push_back(a);
    return out;
  }

 private:
  const std::string pod_ = "b1-p1";
  core::testing::FakeFleet fleet_;
  runs::testing::FakeRunStore store_;
  std::vector<std::string> hosts_;
};

class PgBackend final : public Backend {
 public:
  PgBackend() {
    auto imported =
        fleet_->importFleet(fixture::fleetOf({fixture::podSpec("t01", "t01-b01", pod_, core::Platform::kClemente)}), kAdmin);
    EXPECT_TRUE(imported.ok()) << imported.error().message;
    auto pod = fleet_->getPod(pod_);
    EXPECT_TRUE(pod.ok());
    if (pod.ok())
      for (const auto& h : pod->hosts) hosts_.push_back(h.id);
  }
  runs::RunStore& store() override { return *store_; }
  core::FleetReads& fleet() override { return *fleet_; }
  const std::string& pod() const override { return pod_; }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  void setHostState(const std::string& host, core::HostState state) override {
    db_.query("UPDATE hosts SET state = '" + std::string(core::hostStateName(state)) + "' WHERE id = '" + host + "'");
  }
  void setManagement(const core::ManagementSpec& m) override {
    db_.query("UPDATE pods SET management = '{\"protocol\": \"" + m.protocol + "\", \"credential\": \"" + m.credential +
              "\", \"tray_bmc\": \"" + m.tray_bmc + "\", \"switch_bmc\": \"" + m.switch_bmc + "\", \"runner\": \"" +
              m.runner + "\"}' WHERE id = '" + pod_ + "'");
  }
  std::string componentVersion(const std::string& device, const std::string& kind) override {
    return db_.query("SELECT version FROM components WHERE target_id = '" + device + "' AND kind = '" + kind + "'");
  }
  bool keepsAgentInventory() const override { return true; }
  std::vector<core::AuditRecord> audits(const std::string& action, const std::string& target) override {
    auto page = fleet_->listAudit({.action = action, .target = target, .limit = 1000});
    EXPECT_TRUE(page.ok());
    if (!page.ok()) return {};
    return {page->items.rbegin(), page->items.rend()};
  }

 private:
  const std::string pod_ = "t01-b01-p01";
  kiln::testing::TestDatabase db_;
  std::unique_ptr<core::Store> fleet_ = makePgStore({db_.url(), 2});
  std::unique_ptr<runs::RunStore> store_ = makePgRunStore({db_.url(), 2});
  std::vector<std::string> hosts_;
};

// Two quick steps on every host, for a host- or pod-scope run (as pg_run_store_test).
std::string twoSteps(const std::string& name, const std::string& scope) {
  return "name: " + name + "\nversion: \"1\"\nscope: " + scope +
         "\nsteps:\n  - id: first\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n"
         "  - id: second\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n";
}
constexpr const char* kOneStep =
    "name: one-step\nversion: \"1\"\nscope: host\nsteps:\n  - id: only\n    run: [nvidia-smi, -q, -x]\n    timeout: "
    "10m\n";
constexpr std::int64_t kStepTimeoutMs = 10 * 60 * 1000;
constexpr std::int64_t kGraceMs = 30000;  // RunServiceOptions::lease_grace_ms

class RunStoreContractTest : public ::testing::TestWithParam<contract::Implementation<Backend>> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    ASSERT_EQ(backend_->hosts().size(), 18u);
    runs::RunServiceOptions o;
    o.on_run_complete = [this] { ++completions_; };
    service_ = std::make_unique<runs::RunsRoom>(backend_->fleet(), backend_->store(), clock(), o, nullptr);
    ASSERT_TRUE(service_->workflows.putWorkflow("two-steps", twoSteps("two-steps", "host"), kAdmin).ok());
    ASSERT_TRUE(service_->workflows.putWorkflow("pod-steps", twoSteps("pod-steps", "pod"), kAdmin).ok());
    ASSERT_TRUE(service_->workflows.putWorkflow("one-step", kOneStep, kAdmin).ok());
  }

  runs::RunStore& store() { return backend_->store(); }
  core::FakeClock& clock() { return backend_->clock(); }
  const std::string& host(int i) const { return backend_->hosts().at(static_cast<std::size_t>(i)); }

  std::string start(const std::string& workflow, std::vector<std::string> hosts, const std::string& purpose = "manual",
                    std::vector<std::string> pods = {}) {
    auto run =
        service_->runs.startRun({workflow, std::move(hosts), std::move(pods), json::object(), purpose, ""}, kAdmin);
    EXPECT_TRUE(run.ok()) << run.error().message;
    return run.ok() ? run->row.id : "";
  }
  protocol::Assignment claim(const std::string& host) {
    auto a = service_->agent_work.claimWork(host);
    EXPECT_TRUE(a.ok() && a->has_value()) << host;
    return a.ok() && *a ? **a : protocol::Assignment{};
  }
  static runs::AgentWorkService::ReportRequest report(const std::string& host, const protocol::Assignment& a,
                                                      bool ready = true, int exit_code = 0) {
    return {a.id, host,
            json{{"lease", a.lease},
                 {"host", host},
                 {"started", true},
                 {"exit_code", exit_code},
                 {"duration_ms", 3},
                 {"ready", ready}}};
  }
  runs::AssignmentRow assignment(const std::string& id) {
    auto a = store().assignment(id);
    EXPECT_TRUE(a.ok() && a->has_value()) << id;
    return a.ok() && *a ? **a : runs::AssignmentRow{};
  }
  std::string runState(const std::string& id) {
    auto run = store().getRun(id);
    EXPECT_TRUE(run.ok()) << id;
    return run.ok() ? run->state : "";
  }
  core::HostSummary hostNow(const std::string& id) {
    auto h = backend_->fleet().getHost(id);
    EXPECT_TRUE(h.ok()) << id;
    return h.ok() ? h->host : core::HostSummary{};
  }
  // Whether every host of the run ended as `status` (the run's own verdict comes at the
  // controller's next pass).
  bool finished(const std::string& run, runs::HostStatus status) {
    auto v = service_->runs.runView(run);
    EXPECT_TRUE(v.ok());
    if (!v.ok() || v->hosts.empty()) return false;
    for (const auto& h : v->hosts)
      if (h.status != status) return false;
    return true;
  }
  std::set<std::string> openWork() {
    auto hosts = store().hostsWithOpenWork();
    EXPECT_TRUE(hosts.ok());
    return hosts.ok() ? std::set<std::string>(hosts->begin(), hosts->end()) : std::set<std::string>();
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<runs::RunsRoom> service_;
  int completions_ = 0;
};

// --- claims ---

TEST_P(RunStoreContractTest, AClaimHandsOutTheHostsStepOnceWithANewLeaseAndAgainWhileItsLeaseLives) {
  const std::string run = start("two-steps", {host(0), host(1)});
  EXPECT_EQ(openWork(), (std::set<std::string>{host(0), host(1)}));
  auto batch = store().claimBatch({host(0), host(1), host(2)}, kGraceMs);
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  ASSERT_EQ(batch->size(), 2u) << "host 2 has no work";
  for (int i = 0; i < 2; ++i) {
    const runs::AssignmentRow& a = batch->at(host(i));
    EXPECT_EQ(a.run_id, run);
    EXPECT_EQ(a.host, host(i));
    EXPECT_EQ(a.group_key, host(i)) << "a host-scope run's group is its host";
    EXPECT_EQ(a.step_id, "first");
    EXPECT_EQ(a.state, "dispatched");
    EXPECT_EQ(a.lease, 1);
    EXPECT_EQ(a.timeout_ms, kStepTimeoutMs);
    ASSERT_TRUE(a.dispatched_at && a.lease_expires_at);
    const auto lease = *a.lease_expires_at - clock().now();
    EXPECT_GT(lease, milliseconds(kStepTimeoutMs + kGraceMs) - seconds(30)) << "its timeout and the grace, from now";
    EXPECT_LT(lease, milliseconds(kStepTimeoutMs + kGraceMs) + seconds(30));
  }
  // The agent never got the answer: the same step, the same lease, counted from now.
  auto again = store().claimWork(host(0), kGraceMs);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->id, batch->at(host(0)).id);
  EXPECT_EQ((*again)->lease, 1);
  auto both = store().claimBatch({host(0), host(1)}, kGraceMs);
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ(both->at(host(1)).id, batch->at(host(1)).id);
  EXPECT_EQ(both->at(host(1)).lease, 1);
  EXPECT_EQ(openWork(), (std::set<std::string>{host(0), host(1)})) << "dispatched is still open";
}

TEST_P(RunStoreContractTest, AStepWhoseLeaseRanOutIsNotHandedOutAgainButListedAsExpired) {
  start("two-steps", {host(0)});
  // A grace that ends the lease a minute ago.
  auto gone = store().claimWork(host(0), -(kStepTimeoutMs + 60000));
  ASSERT_TRUE(gone.ok() && gone->has_value());
  auto again = store().claimWork(host(0), kGraceMs);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value()) << "its lease is over: only the lease's expiry decides now";
  auto expired = store().expiredLeases(clock().now() + seconds(5), 10);
  ASSERT_TRUE(expired.ok());
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_EQ((*expired)[0].id, (*gone)->id);
  EXPECT_EQ((*expired)[0].lease, 1);
}

TEST_P(RunStoreContractTest, AnAssignmentDispatchedWithArtifactsIsClaimedWithTheSameArtifacts) {
  ASSERT_TRUE(service_->workflows
                  .putWorkflow("flash",
                               "name: flash\nversion: \"1\"\nscope: host\nparams:\n"
                               "  tray_package: {type: artifact, default: \"\"}\n"
                               "  artifact_checksums: {type: string, default: \"\"}\n"
                               "  artifact_signature: {type: string, default: \"\"}\n"
                               "steps:\n  - id: flash\n    run: [nvfwupd, update, -p, \"{{tray_package}}\"]\n"
                               "    timeout: 10m\n"
                               "  - id: again\n    run: [nvfwupd, update, -p, \"{{tray_package}}\"]\n    timeout: 10m\n"
                               "  - id: plain\n    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n",
                               kAdmin)
                  .ok());
  const std::string sha(64, 'a');
  const protocol::ArtifactRef want{"https://mirror.example/tray.fwpkg", sha, sha + "  tray.fwpkg\n",
                                   "-----BEGIN PGP SIGNATURE-----\nx\n-----END PGP SIGNATURE-----\n"};
  auto run = service_->runs.startRun({"flash",
                                      {host(0)},
                                      {},
                                      json{{"tray_package", want.url + "#sha256=" + sha},
                                           {"artifact_checksums", want.checksums},
                                           {"artifact_signature", want.signature}},
                                      "manual",
                                      ""},
                                     kAdmin);
  ASSERT_TRUE(run.ok()) << run.error().message;

  // Claimed (the agent's view and the stored row): the placeholder in argv, the artifact beside it.
  const protocol::Assignment a = claim(host(0));
  EXPECT_EQ(a.step_id, "flash");
  EXPECT_EQ(a.argv, (std::vector<std::string>{"nvfwupd", "update", "-p", "kiln-artifact:sha256:" + sha}));
  EXPECT_EQ(a.artifacts, std::vector<protocol::ArtifactRef>{want});
  EXPECT_EQ(assignment(a.id).artifacts, std::vector<protocol::ArtifactRef>{want});
  auto batch = store().claimBatch({host(0)}, kGraceMs);
  ASSERT_TRUE(batch.ok() && batch->size() == 1u);
  EXPECT_EQ(batch->at(host(0)).artifacts, std::vector<protocol::ArtifactRef>{want});

  // The next step handed out with the report carries its artifacts too.
  auto answers = service_->agent_work.reportBatch({report(host(0), a)});
  ASSERT_TRUE(answers[0].ok()) << answers[0].error().message;
  ASSERT_TRUE(answers[0]->next.has_value());
  EXPECT_EQ(answers[0]->next->step_id, "again");
  EXPECT_EQ(answers[0]->next->artifacts, std::vector<protocol::ArtifactRef>{want});

  // A step that names no artifact has none.
  auto last = service_->agent_work.reportBatch({report(host(0), *answers[0]->next)});
  ASSERT_TRUE(last[0].ok() && last[0]->next.has_value());
  EXPECT_EQ(last[0]->next->step_id, "plain");
  EXPECT_TRUE(last[0]->next->artifacts.empty());
  EXPECT_TRUE(assignment(last[0]->next->id).artifacts.empty());
}

// Issue 35: a step's stdout_when_parsed reaches the agent with each of its assignments, claimed
// or handed out with a report; a step without it sends its whole tail.
TEST_P(RunStoreContractTest, AStepsStdoutWhenParsedGoesWithItsAssignmentsAndOnlyItsOwn) {
  ASSERT_TRUE(service_->workflows
                  .putWorkflow("check",
                               "name: check\nversion: \"1\"\nscope: host\nsteps:\n"
                               "  - id: gpu-state\n    run: [nvidia-smi, -q, -x]\n    parse: nvidia-smi-xml\n"
                               "    stdout_when_parsed: 2048\n    timeout: 10s\n"
                               "  - id: nvlink\n    run: [dcgmi, nvlink, -e, -g, \"0\", -j]\n"
                               "    parse: dcgmi-nvlink-json\n    stdout_when_parsed: 0\n    timeout: 10s\n"
                               "  - id: plain\n    run: [nvidia-smi, -q, -x]\n    parse: nvidia-smi-xml\n    timeout: 10s\n",
                               kAdmin)
                  .ok());
  auto run = service_->runs.startRun({"check", {host(0)}, {}, json::object(), "pre_job", ""}, kAdmin);
  ASSERT_TRUE(run.ok()) << run.error().message;

  const protocol::Assignment a = claim(host(0));
  EXPECT_EQ(a.step_id, "gpu-state");
  EXPECT_EQ(a.parsed_output_cap, std::optional<std::size_t>(2048));
  EXPECT_EQ(a.output_cap, 65536u) << "a failed or unparsed run still sends its whole tail";
  EXPECT_EQ(assignment(a.id).parsed_output_cap, 2048);

  // Clean, parsed runs (a step with a parse format and nothing parsed fails).
  auto parsed = [&](const protocol::Assignment& of) {
    auto r = report(host(0), of);
    r.body["parsed"] = json{{"gpus", json::array()}};
    return r;
  };
  auto answers = service_->agent_work.reportBatch({parsed(a)});
  ASSERT_TRUE(answers[0].ok() && answers[0]->next.has_value());
  EXPECT_EQ(answers[0]->next->step_id, "nvlink");
  EXPECT_EQ(answers[0]->next->parsed_output_cap, std::optional<std::size_t>(0));

  auto last = service_->agent_work.reportBatch({parsed(*answers[0]->next)});
  ASSERT_TRUE(last[0].ok() && last[0]->next.has_value());
  EXPECT_EQ(last[0]->next->step_id, "plain");
  EXPECT_FALSE(last[0]->next->parsed_output_cap.has_value());
  EXPECT_EQ(assignment(last[0]->next->id).parsed_output_cap, -1);
}

// --- reports ---

TEST_P(RunStoreContractTest, AReportOnItsLiveLeaseIsAcceptedAndStoredAndItsRepeatIsADuplicate) {
  start("two-steps", {host(0), host(1)});
  const protocol::Assignment a0 = claim(host(0));
  auto first = service_->agent_work.reportBatch({report(host(0), a0, false)});
  ASSERT_TRUE(first[0].ok()) << first[0].error().message;
  EXPECT_EQ(first[0]->outcome, ReportOutcome::kAccepted);
  const runs::AssignmentRow done = assignment(a0.id);
  EXPECT_EQ(done.state, "done");
  EXPECT_TRUE(done.finished_at.has_value());
  ASSERT_TRUE(done.result.is_object());
  EXPECT_EQ(done.result["exit_code"], 0);

  auto repeat = service_->agent_work.reportBatch({report(host(0), a0, false)});
  ASSERT_TRUE(repeat[0].ok());
  EXPECT_EQ(repeat[0]->outcome, ReportOutcome::kDuplicate);
  EXPECT_FALSE(repeat[0]->next.has_value());
  // Applied once: one second step, waiting for the host's idle poll.
  EXPECT_EQ(claim(host(0)).step_id, "second");
  auto again = store().claimWork(host(0), kGraceMs);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->step_id, "second") << "the same one, re-handed: no third step";

  auto others = service_->agent_work.reportBatch({report(host(1), a0)});
  ASSERT_FALSE(others[0].ok());
  EXPECT_EQ(others[0].error().code, ErrorCode::kPermissionDenied);
  auto unknown = report(host(0), a0);
  unknown.assignment_id = "r-999:nowhere:1";
  auto none = service_->agent_work.reportBatch({unknown});
  ASSERT_FALSE(none[0].ok());
  EXPECT_EQ(none[0].error().code, ErrorCode::kNotFound);
}

TEST_P(RunStoreContractTest, TheSameReportTwiceInOneBatchIsAppliedOnceAndTheNextStepGoesWithTheLast) {
  start("two-steps", {host(0)});
  const protocol::Assignment a0 = claim(host(0));
  auto answers = service_->agent_work.reportBatch({report(host(0), a0), report(host(0), a0)});
  ASSERT_EQ(answers.size(), 2u);
  ASSERT_TRUE(answers[0].ok() && answers[1].ok());
  EXPECT_EQ(answers[0]->outcome, ReportOutcome::kAccepted);
  EXPECT_FALSE(answers[0]->next.has_value());
  EXPECT_EQ(answers[1]->outcome, ReportOutcome::kDuplicate);
  ASSERT_TRUE(answers[1]->next.has_value());
  EXPECT_EQ(answers[1]->next->step_id, "second");
}

TEST_P(RunStoreContractTest, AReportOnACancelledAssignmentKeepsItsFirstResultAndIsAnsweredCancelled) {
  const std::string run = start("two-steps", {host(0)});
  const protocol::Assignment a0 = claim(host(0));
  ASSERT_TRUE(service_->runs.cancelRun(run, kAdmin).ok());
  EXPECT_EQ(assignment(a0.id).state, "cancelled");
  EXPECT_EQ(runState(run), "cancelled");
  EXPECT_TRUE(openWork().empty());

  auto answers = service_->agent_work.reportBatch({report(host(0), a0, true, 0)});
  ASSERT_TRUE(answers[0].ok()) << answers[0].error().message;
  EXPECT_EQ(answers[0]->outcome, ReportOutcome::kCancelled);
  EXPECT_FALSE(answers[0]->next.has_value()) << "nothing left to hand out";
  auto later = service_->agent_work.reportBatch({report(host(0), a0, true, 5)});
  ASSERT_TRUE(later[0].ok());
  EXPECT_EQ(later[0]->outcome, ReportOutcome::kCancelled);
  const runs::AssignmentRow kept = assignment(a0.id);
  EXPECT_EQ(kept.state, "cancelled");
  ASSERT_TRUE(kept.result.is_object()) << "the agent's report is kept for the run view";
  EXPECT_EQ(kept.result["exit_code"], 0) << "the first one";
  EXPECT_EQ(runState(run), "cancelled");
  EXPECT_EQ(completions_, 0);
}

TEST_P(RunStoreContractTest, AReportOnAStaleLeaseIsRefusedAndHandsOutNothing) {
  start("two-steps", {host(0)});
  const protocol::Assignment a0 = claim(host(0));
  auto stale = report(host(0), a0);
  stale.body["lease"] = 7;
  auto refused = service_->agent_work.reportBatch({stale});
  ASSERT_TRUE(refused[0].ok());
  EXPECT_EQ(refused[0]->outcome, ReportOutcome::kStale);
  EXPECT_FALSE(refused[0]->next.has_value());
  const runs::AssignmentRow still = assignment(a0.id);
  EXPECT_EQ(still.state, "dispatched");
  EXPECT_TRUE(still.result.is_null());
  // The live lease's report still lands.
  auto live = service_->agent_work.reportBatch({report(host(0), a0)});
  ASSERT_TRUE(live[0].ok());
  EXPECT_EQ(live[0]->outcome, ReportOutcome::kAccepted);
}

// A report on a lease that is not the assignment's does not hide the live one's report of the
// same assignment later in the batch.
TEST_P(RunStoreContractTest, AStaleReportBeforeTheLiveOneOfTheSameStepInABatchLeavesItAccepted) {
  start("two-steps", {host(0)});
  const protocol::Assignment a0 = claim(host(0));
  auto stale = report(host(0), a0, false);
  stale.body["lease"] = 7;
  auto answers = service_->agent_work.reportBatch({stale, report(host(0), a0), report(host(0), a0)});
  ASSERT_EQ(answers.size(), 3u);
  for (const auto& a : answers) ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(answers[0]->outcome, ReportOutcome::kStale);
  EXPECT_EQ(answers[1]->outcome, ReportOutcome::kAccepted);
  EXPECT_EQ(answers[2]->outcome, ReportOutcome::kDuplicate);
  ASSERT_TRUE(answers[2]->next.has_value()) << "the host's last report carries its next step";
  EXPECT_EQ(answers[2]->next->step_id, "second");
  EXPECT_EQ(assignment(a0.id).state, "done");
}

TEST_P(RunStoreContractTest, AReportWithoutReadyLeavesTheNextStepPendingAndOneWithReadyHandsItOut) {
  start("two-steps", {host(0), host(1)});
  const protocol::Assignment a0 = claim(host(0)), a1 = claim(host(1));
  auto answers = service_->agent_work.reportBatch({report(host(0), a0, true), report(host(1), a1, false)});
  ASSERT_TRUE(answers[0].ok() && answers[1].ok());
  ASSERT_TRUE(answers[0]->next.has_value());
  const runs::AssignmentRow next = assignment(answers[0]->next->id);
  EXPECT_EQ(next.step_id, "second");
  EXPECT_EQ(next.state, "dispatched") << "claimed in the report's transaction";
  EXPECT_EQ(next.lease, 1);
  EXPECT_EQ(answers[0]->next->lease, 1);
  EXPECT_FALSE(answers[1]->next.has_value());
  auto pending = store().runAssignments(a1.run_id);
  ASSERT_TRUE(pending.ok());
  int waiting = 0;
  for (const auto& a : *pending) waiting += a.host == host(1) && a.step_id == "second" && a.state == "pending";
  EXPECT_EQ(waiting, 1);
  EXPECT_EQ(claim(host(1)).step_id, "second");
}

TEST_P(RunStoreContractTest, ReportsOfOnePodScopeGroupInOneBatchAreAllAppliedToItsState) {
  const std::string run = start("pod-steps", {}, "manual", {backend_->pod()});
  std::vector<runs::AgentWorkService::ReportRequest> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(report(host(i), claim(host(i))));
  auto answers = service_->agent_work.reportBatch(batch);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(answers[i].ok()) << answers[i].error().message;
    EXPECT_EQ(answers[i]->outcome, ReportOutcome::kAccepted) << i;
    ASSERT_TRUE(answers[i]->next.has_value()) << i;
    EXPECT_EQ(answers[i]->next->step_id, "second") << i;
  }
  auto groups = store().runGroups(run);
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u) << "one group: the pod";
  int on_second = 0, records = 0;
  for (const auto& h : (*groups)[0].hosts) {
    on_second += h.step_index == 1;
    records += static_cast<int>(h.history.size());
  }
  EXPECT_EQ(on_second, 5);
  EXPECT_EQ(records, 5);
}

// The store's own promise, with fns of the test's: a group's reports go through their fns in
// batch order, each on the state the one before it returned, and the state is written once.
TEST_P(RunStoreContractTest, AGroupsReportsGoThroughTheirFnsInBatchOrderEachOnTheLastOnesState) {
  const std::string run = start("pod-steps", {}, "manual", {backend_->pod()});
  std::vector<runs::AssignmentRow> claimed;
  for (int i = 0; i < 3; ++i) {
    auto a = store().claimWork(host(i), kGraceMs);
    ASSERT_TRUE(a.ok() && a->has_value());
    claimed.push_back(**a);
  }
  const auto before = store().runGroups(run);
  ASSERT_TRUE(before.ok());
  const std::int64_t seq = (*before)[0].next_seq;
  const json body{{"exit_code", 0}};
  std::vector<std::string> order;
  std::vector<std::int64_t> seen;
  std::vector<runs::ReportItem> items;
  for (int i : {2, 0, 1}) {
    runs::ReportItem item;
    item.assignment_id = claimed[i].id;
    item.host = claimed[i].host;
    item.lease = claimed[i].lease;
    item.result = &body;
    item.fn = [&, id = claimed[i].id](const runs::RunRow& r, runs::GroupState g) -> Result<runs::GroupUpdate> {
      EXPECT_EQ(r.id, run);
      order.push_back(id);
      seen.push_back(g.next_seq);
      ++g.next_seq;
      return runs::GroupUpdate{std::move(g), {}, {}};
    };
    items.push_back(std::move(item));
  }
  auto replies = store().reportBatch(items, kGraceMs);
  ASSERT_TRUE(replies.ok()) << replies.error().message;
  for (const auto& r : *replies) {
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->outcome, ReportOutcome::kAccepted);
  }
  EXPECT_EQ(order, (std::vector<std::string>{claimed[2].id, claimed[0].id, claimed[1].id}));
  EXPECT_EQ(seen, (std::vector<std::int64_t>{seq, seq + 1, seq + 2}));
  const auto after = store().runGroups(run);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].next_seq, seq + 3) << "the last fn's state is the one written";
}

TEST_P(RunStoreContractTest, AFailingFnFailsTheWholeBatchAndWritesNothing) {
  start("two-steps", {host(0), host(1)});
  auto a0 = store().claimWork(host(0), kGraceMs);
  auto a1 = store().claimWork(host(1), kGraceMs);
  ASSERT_TRUE(a0.ok() && a0->has_value() && a1.ok() && a1->has_value());
  const json body{{"exit_code", 0}};
  auto unchanged = [](const runs::RunRow&, runs::GroupState g) -> Result<runs::GroupUpdate> {
    return runs::GroupUpdate{std::move(g), {}, {}};
  };
  auto failing = [](const runs::RunRow&, runs::GroupState) -> Result<runs::GroupUpdate> {
    return internalError("the engine refused");
  };
  std::vector<runs::ReportItem> items(2);
  items[0] = {(*a0)->id, host(0), 1, &body, nullptr, unchanged, true};
  items[1] = {(*a1)->id, host(1), 1, &body, nullptr, failing, false};
  auto replies = store().reportBatch(items, kGraceMs);
  ASSERT_FALSE(replies.ok());
  EXPECT_EQ(replies.error().code, ErrorCode::kInternal);
  for (const auto& id : {(*a0)->id, (*a1)->id}) {
    const runs::AssignmentRow a = assignment(id);
    EXPECT_EQ(a.state, "dispatched") << id;
    EXPECT_TRUE(a.result.is_null()) << id;
  }
  // Alone, the good one lands.
  auto alone = store().reportBatch({items[0]}, kGraceMs);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  ASSERT_TRUE((*alone)[0].ok());
  EXPECT_EQ((*alone)[0]->outcome, ReportOutcome::kAccepted);
}

// --- what a run's reports lead to ---

TEST_P(RunStoreContractTest, ARunsVerdictMovesItsHostsAndARefusedMoveIsSkipped) {
  backend_->setHostState(host(0), core::HostState::kIncoming);
  backend_->setHostState(host(2), core::HostState::kIncoming);
  start("one-step", {host(0)}, "burn_in");
  EXPECT_EQ(hostNow(host(0)).state, core::HostState::kBurnIn) << "the start transition, with the run";
  start("one-step", {host(1)}, "pre_job");
  start("one-step", {host(2)}, "burn_in");
  const protocol::Assignment a0 = claim(host(0)), a1 = claim(host(1)), a2 = claim(host(2));
  backend_->setHostState(host(2), core::HostState::kRepair);  // an operator's move meanwhile

  auto answers = service_->agent_work.reportBatch(
      {report(host(0), a0, false), report(host(1), a1, false, 3), report(host(2), a2, false)});
  for (const auto& a : answers) {
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(a->outcome, ReportOutcome::kAccepted);
  }
  EXPECT_EQ(hostNow(host(0)).state, core::HostState::kAvailable) << "burn-in passed";
  const core::HostSummary failed = hostNow(host(1));
  EXPECT_EQ(failed.state, core::HostState::kFailed) << "a failed pre-job check";
  EXPECT_NE(failed.state_reason.find("one-step"), std::string::npos) << failed.state_reason;
  EXPECT_EQ(hostNow(host(2)).state, core::HostState::kRepair) << "burn_in_pass from repair is refused: skipped";
}

TEST_P(RunStoreContractTest, TheBatchThatClosesARunsLastGroupSaysSoOnEachOfItsReportsOfThatRun) {
  const std::string run = start("two-steps", {host(0), host(1)});
  auto a0 = store().claimWork(host(0), kGraceMs);
  auto a1 = store().claimWork(host(1), kGraceMs);
  ASSERT_TRUE(a0.ok() && a0->has_value() && a1.ok() && a1->has_value());
  const json body{{"exit_code", 0}};
  // Ends the group: every host passed, nothing outstanding.
  auto finish = [](const runs::RunRow&, runs::GroupState g) -> Result<runs::GroupUpdate> {
    for (auto& h : g.hosts) {
      h.status = runs::HostStatus::kPassed;
      h.assignment_id.clear();
    }
    return runs::GroupUpdate{std::move(g), {}, {}};
  };
  auto first = store().reportBatch({{(*a0)->id, host(0), 1, &body, nullptr, finish, false}}, kGraceMs);
  ASSERT_TRUE(first.ok() && (*first)[0].ok());
  EXPECT_EQ((*first)[0]->outcome, ReportOutcome::kAccepted);
  EXPECT_FALSE((*first)[0]->run_complete) << "host 1's group is still open";

  auto last = store().reportBatch(
      {{(*a1)->id, host(1), 1, &body, nullptr, finish, false}, {(*a0)->id, host(0), 1, &body, nullptr, finish, false}},
      kGraceMs);
  ASSERT_TRUE(last.ok()) << last.error().message;
  ASSERT_TRUE((*last)[0].ok() && (*last)[1].ok());
  EXPECT_EQ((*last)[0]->outcome, ReportOutcome::kAccepted);
  EXPECT_TRUE((*last)[0]->run_complete);
  EXPECT_EQ((*last)[1]->outcome, ReportOutcome::kDuplicate);
  EXPECT_TRUE((*last)[1]->run_complete) << "every answer of the batch about that run says so";

  auto again = store().reportBatch({{(*a1)->id, host(1), 1, &body, nullptr, finish, false}}, kGraceMs);
  ASSERT_TRUE(again.ok() && (*again)[0].ok());
  EXPECT_EQ((*again)[0]->outcome, ReportOutcome::kDuplicate);
  EXPECT_FALSE((*again)[0]->run_complete) << "a duplicate closes nothing";
  EXPECT_EQ(runState(run), "running") << "its verdict is finalizeRuns'";
}

TEST_P(RunStoreContractTest, TheReportThatEndsARunTellsTheServiceOnce) {
  start("one-step", {host(0), host(1)});
  const protocol::Assignment a0 = claim(host(0)), a1 = claim(host(1));
  ASSERT_TRUE(service_->agent_work.reportBatch({report(host(0), a0, false)})[0].ok());
  EXPECT_EQ(completions_, 0);
  ASSERT_TRUE(service_->agent_work.reportBatch({report(host(1), a1, false)})[0].ok());
  EXPECT_EQ(completions_, 1);
  ASSERT_TRUE(service_->agent_work.reportBatch({report(host(1), a1, false)})[0].ok());
  EXPECT_EQ(completions_, 1) << "a duplicate";
}

TEST_P(RunStoreContractTest, FinalizeRunsGivesEachEndedRunItsVerdictOnceAndLeavesTheRest) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(start("one-step", {host(i)}));
  const protocol::Assignment a0 = claim(host(0)), a1 = claim(host(1));
  auto answers = service_->agent_work.reportBatch({report(host(0), a0, false), report(host(1), a1, false, 3)});
  ASSERT_TRUE(answers[0].ok() && answers[1].ok());
  ASSERT_TRUE(service_->runs.cancelRun(ids[3], kAdmin).ok());

  std::vector<std::string> judged;
  auto finished = store().finalizeRuns([&](const runs::RunRow& run, const std::vector<runs::GroupState>& groups) {
    judged.push_back(run.id);
    return runs::runVerdict(run, groups);
  });
  ASSERT_TRUE(finished.ok()) << finished.error().message;
  EXPECT_EQ(std::set<std::string>(finished->begin(), finished->end()), (std::set<std::string>{ids[0], ids[1]}));
  EXPECT_EQ(std::set<std::string>(judged.begin(), judged.end()), (std::set<std::string>{ids[0], ids[1]}));
  EXPECT_EQ(runState(ids[0]), "passed");
  EXPECT_EQ(runState(ids[1]), "failed");
  EXPECT_EQ(runState(ids[2]), "running") << "its host has not reported";
  EXPECT_EQ(runState(ids[3]), "cancelled");
  auto run = store().getRun(ids[1]);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->finished_at.has_value());
  EXPECT_EQ(run->summary["healthy"], 0);
  EXPECT_EQ(run->summary["hosts"], 1);
  auto again = store().finalizeRuns(runs::runVerdict);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty()) << "finished once";
}

TEST_P(RunStoreContractTest, ALeaseThatRanOutLosesItsStepOnceAndItsLateReportIsStale) {
  const std::string run = start("two-steps", {host(0)});
  const protocol::Assignment a0 = claim(host(0));
  auto none = store().expiredLeases(clock().now(), 10);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty()) << "its lease lives";
  clock().advance(milliseconds(kStepTimeoutMs + kGraceMs) + minutes(1));
  auto expired = store().expiredLeases(clock().now(), 10);
  ASSERT_TRUE(expired.ok());
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_EQ((*expired)[0].id, a0.id);

  service_->timers.tick();  // the engine's lost step, then the run's verdict
  EXPECT_EQ(assignment(a0.id).state, "lost");
  EXPECT_EQ(runState(run), "failed");
  EXPECT_TRUE(store().expiredLeases(clock().now(), 10)->empty());
  bool called = false;
  auto twice =
      store().expireLease(a0.id, a0.lease, [&](const runs::RunRow&, runs::GroupState g) -> Result<runs::GroupUpdate> {
        called = true;
        return runs::GroupUpdate{std::move(g), {}, {}};
      });
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(*twice) << "no longer dispatched on that lease";
  EXPECT_FALSE(called);
  auto late = service_->agent_work.reportBatch({report(host(0), a0)});
  ASSERT_TRUE(late[0].ok());
  EXPECT_EQ(late[0]->outcome, ReportOutcome::kStale);
  EXPECT_FALSE(late[0]->next.has_value());
}

// --- out-of-band runners (issue 32) ---

// A step about a host's BMC goes to the pod's runner: only the runner's key claims and reports
// it, the host's agent never sees it; a reboot whose lease runs out is kept open while the runner
// power-cycles the host, and the agent's late report of its new boot is accepted.
TEST_P(RunStoreContractTest, AStepAboutABmcIsTheRunnersAndARebootUnderRecoveryKeepsItsLease) {
  backend_->setManagement({"redfish", "tray-bmc", "{host}-bmc.mgmt:443", "", "oob-b01"});
  ASSERT_TRUE(service_->workflows
                  .putWorkflow("oob",
                               "name: oob\nversion: \"1\"\nscope: host\nsteps:\n"
                               "  - id: status\n    target: bmc\n    run: [kiln-oob, power, status, --bmc, \"{{host.bmc}}\"]\n"
                               "    timeout: 1m\n"
                               "  - id: reboot\n    type: reboot\n    timeout: 10m\n"
                               "    recover: {power_cycles: 1, timeout: 2m}\n",
                               kAdmin)
                  .ok());
  start("oob", {host(0)});
  const std::string runner = "runner:oob-b01";
  EXPECT_EQ(openWork(), (std::set<std::string>{runner}));
  auto host_claim = service_->agent_work.claimWork(host(0));
  ASSERT_TRUE(host_claim.ok());
  EXPECT_FALSE(host_claim->has_value()) << "the host's agent never gets a step about its BMC";
  const protocol::Assignment status = claim(runner);
  EXPECT_EQ(status.step_id, "status");
  EXPECT_EQ(status.argv[4], host(0) + "-bmc.mgmt:443");
  EXPECT_EQ(assignment(status.id).runner, "oob-b01");
  EXPECT_EQ(assignment(status.id).host, host(0));
  // The host's agent cannot report it; the runner can, and gets nothing of the host's next.
  auto forged = service_->agent_work.reportBatch({report(host(0), status)});
  ASSERT_FALSE(forged[0].ok());
  EXPECT_EQ(forged[0].error().code, ErrorCode::kPermissionDenied);
  auto done = service_->agent_work.reportBatch({report(runner, status)});
  ASSERT_TRUE(done[0].ok()) << done[0].error().message;
  EXPECT_EQ(done[0]->outcome, ReportOutcome::kAccepted);
  EXPECT_FALSE(done[0]->next.has_value()) << "the reboot is the host's";

  const protocol::Assignment reboot = claim(host(0));
  EXPECT_EQ(reboot.step_id, "reboot");
  clock().advance(milliseconds(10 * 60 * 1000 + kGraceMs) + minutes(1));
  service_->timers.tick();  // the host is silent: a power cycle on the runner
  EXPECT_EQ(assignment(reboot.id).state, "dispatched") << "kept on its lease, not lost";
  const protocol::Assignment cycle = claim(runner);
  EXPECT_EQ(cycle.argv[0], "kiln-oob");
  EXPECT_EQ(cycle.argv[2], "cycle");
  auto cycled = report(runner, cycle);
  cycled.body["parsed"] = {{"power", "on"}};
  ASSERT_TRUE(service_->agent_work.reportBatch({cycled})[0].ok());
  // The host booted: its agent reports the reboot on the lease it had.
  auto late = service_->agent_work.reportBatch({report(host(0), reboot)});
  ASSERT_TRUE(late[0].ok()) << late[0].error().message;
  EXPECT_EQ(late[0]->outcome, ReportOutcome::kAccepted);
}

// A read-back of the pod's switch trays by the runner is each tray's version, by its own answer;
// an answer that speaks for a tray of another pod records nothing; and once the pod's switch
// trays have BMCs, a compute host's report of the switch firmware no longer overwrites them.
TEST_P(RunStoreContractTest, ASwitchTrayReadBackIsEachTraysVersionAndOnlyThePodsOwn) {
  backend_->setManagement({"redfish", "tray-bmc", "{host}-bmc.mgmt:443", "{switch}-bmc.mgmt:443", "oob-b01"});
  ASSERT_TRUE(service_->workflows
                  .putWorkflow("switches",
                               "name: switches\nversion: \"1\"\nscope: pod\nsteps:\n"
                               "  - id: read-back\n    target: switch_trays\n    run_on: leader\n"
                               "    run: [kiln-oob, firmware, list, --bmc, \"{{pod.switch_bmcs}}\"]\n"
                               "    parse: json\n    inventory: {nvswitch: NVSwitch_Firmware}\n    timeout: 5m\n",
                               kAdmin)
                  .ok());
  const std::string pod = backend_->pod(), runner = "runner:oob-b01";
  auto answer = [&](const std::string& version, const std::string& extra) {
    json devices = json::array();
    for (int s = 1; s <= 9; ++s)
      devices.push_back({{"device", pod + "-s" + std::to_string(s)},
                         {"firmware", json::array({{{"id", "NVSwitch_Firmware"}, {"version", version}}})}});
    if (!extra.empty())
      devices.push_back(
          {{"device", extra}, {"firmware", json::array({{{"id", "NVSwitch_Firmware"}, {"version", version}}})}});
    return json{{"devices", devices}, {"failed", json::array()}};
  };

  // A hostile answer: the pod's nine trays and one of another pod. Nothing is recorded.
  const std::string forged_run = start("switches", {}, "manual", {pod});
  protocol::Assignment a = claim(runner);
  EXPECT_EQ(a.argv[4].substr(0, pod.size() + 4), pod + "-s1=");
  auto forged = report(runner, a);
  forged.body["parsed"] = answer("36.9999", "zz-other-p09-s1");
  ASSERT_TRUE(service_->agent_work.reportBatch({forged})[0].ok());
  EXPECT_TRUE(finished(forged_run, runs::HostStatus::kFailed));
  for (int s = 1; s <= 9; ++s)
    EXPECT_NE(backend_->componentVersion(pod + "-s" + std::to_string(s), "nvswitch"), "36.9999");
  EXPECT_EQ(backend_->componentVersion("zz-other-p09-s1", "nvswitch"), "");

  // The honest answer: every tray recorded as it said, the run passes once for the pod.
  const std::string run = start("switches", {}, "manual", {pod});
  a = claim(runner);
  auto honest = report(runner, a);
  honest.body["parsed"] = answer("36.2601.0001", "");
  ASSERT_TRUE(service_->agent_work.reportBatch({honest})[0].ok());
  EXPECT_TRUE(finished(run, runs::HostStatus::kPassed));
  for (int s = 1; s <= 9; ++s)
    EXPECT_EQ(backend_->componentVersion(pod + "-s" + std::to_string(s), "nvswitch"), "36.2601.0001") << s;
  EXPECT_EQ(backend_->componentVersion(host(0), "nvswitch"), "") << "a switch version is never a host's";

  if (!backend_->keepsAgentInventory()) return;
  // A host's agent still reports what it sees of the switch firmware: its own kinds are kept,
  // the switch trays keep their own read-back.
  start("one-step", {host(3)});
  auto step = claim(host(3));
  auto with_inventory = report(host(3), step);
  with_inventory.body["inventory"] = {{"nvswitch", "36.2501.0004"}, {"bmc", "25.09-7"}};
  ASSERT_TRUE(service_->agent_work.reportBatch({with_inventory})[0].ok());
  EXPECT_EQ(backend_->componentVersion(host(3), "bmc"), "25.09-7");
  EXPECT_EQ(backend_->componentVersion(pod + "-s4", "nvswitch"), "36.2601.0001");
}

// --- workflows ---

TEST_P(RunStoreContractTest, AWorkflowsFileVersionIsRememberedAndItsVersionsListedNewestFirst) {
  const core::Actor kilnd{"kilnd", "kilnd"};
  auto row = [](const std::string& hash, const std::string& source, const std::string& yaml) {
    return runs::WorkflowRow{"wf", hash, source, yaml, {}};
  };
  auto versions = [&] {
    auto v = store().workflowVersions("wf");
    EXPECT_TRUE(v.ok()) << v.error().message;
    std::vector<std::string> out;  // "hash source by [current] [file]"
    if (v.ok())
      for (const auto& x : *v)
        out.push_back(x.hash + " " + x.source + " " + x.created_by + (x.current ? " current" : "") +
                      (x.file_loaded ? " file" : ""));
    return out;
  };
  EXPECT_TRUE(versions().empty());

  ASSERT_TRUE(store().putWorkflowFile(row("f1", "workflows/wf.yaml", "a\nb\n"), kilnd, std::nullopt).ok());
  EXPECT_EQ((*store().currentWorkflow("wf"))->file_hash, "f1");
  clock().advance(seconds(1));
  const core::IfMatch over_f1{false, {runs::workflowEtag("f1")}};
  ASSERT_TRUE(store().putWorkflow(row("a1", "api", "a\nc\n"), kAdmin, over_f1).ok());
  auto now = store().currentWorkflow("wf");
  ASSERT_TRUE(now.ok() && *now);
  EXPECT_EQ((*now)->hash, "a1");
  EXPECT_EQ((*now)->file_hash, "f1") << "a put through the API is not the file's";
  EXPECT_EQ(versions(), (std::vector<std::string>{"a1 api test-admin current", "f1 workflows/wf.yaml kilnd file"}));

  // A stale ETag changes nothing, the file's hash included.
  auto stale = store().putWorkflowFile(row("f2", "workflows/wf.yaml", "x\n"), kilnd, over_f1);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ErrorCode::kPreconditionFailed);
  EXPECT_EQ((*store().currentWorkflow("wf"))->file_hash, "f1");
  // The file's content is the current version's: recorded as loaded, the version unchanged.
  clock().advance(seconds(1));
  ASSERT_TRUE(store().putWorkflowFile(row("a1", "workflows/wf.yaml", "a\nc\n"), kilnd, std::nullopt).ok());
  EXPECT_EQ(versions(), (std::vector<std::string>{"a1 api test-admin current file", "f1 workflows/wf.yaml kilnd"}));

  // Each change of the current version is audited once, with both hashes and the YAML's diff.
  const auto changes = backend_->audits("workflow.put", "wf");
  ASSERT_EQ(changes.size(), 2u);
  const json created = json::parse(changes[0].details_json), edited = json::parse(changes[1].details_json);
  EXPECT_EQ(changes[0].actor, "kilnd");
  EXPECT_EQ(created["hash"], "f1");
  EXPECT_TRUE(created["previous_hash"].is_null());
  EXPECT_EQ(created["diff"], "--- /dev/null\n+++ wf@f1\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(changes[1].actor, kAdmin.token_id);
  EXPECT_EQ(edited["hash"], "a1");
  EXPECT_EQ(edited["source"], "api");
  EXPECT_EQ(edited["previous_hash"], "f1");
  EXPECT_EQ(edited["previous_source"], "workflows/wf.yaml");
  EXPECT_EQ(edited["diff"], "--- wf@f1\n+++ wf@a1\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
  EXPECT_EQ(edited["diff_truncated"], false);
  EXPECT_EQ(edited["lines_added"], 1);
  EXPECT_EQ(edited["lines_removed"], 1);
}

KILN_CONTRACT_INSTANTIATE(RunStoreContractTest, Backend, FakeBackend, PgBackend);

}  // namespace
}  // namespace kiln::db
