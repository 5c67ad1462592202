// The pure Slurm core: Slurm 22.05's real output parsed, naming, and reconcile()'s safety rules
// (drain before work, resume only Kiln's own drains, interruptions once). Hostlists are
// common/hostlist.h's, tested in common/tests/hostlist_test.cc.

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "orchestrator/scheduler/slurm.h"

namespace kiln::scheduler {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(KILN_SLURM_TESTDATA) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const SlurmNode* find(const std::vector<SlurmNode>& nodes, const std::string& name) {
  for (const auto& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

TEST(SlurmParseTest, ReadsEveryNodeStateOfARealSinfo) {
  auto nodes = parseNodesJson(fixture("sinfo_json_mixed_down_draining_drained.json"));
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  ASSERT_EQ(nodes->size(), 4u);
  const SlurmNode* down = find(*nodes, "t1-b01-p01-h01");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->state, "DOWN");
  EXPECT_TRUE(down->down());
  EXPECT_FALSE(down->drain());
  EXPECT_EQ(down->reason, "Not responding");
  EXPECT_EQ(down->reason_user, "slurm");
  const SlurmNode* draining = find(*nodes, "t1-b01-p01-h03");
  EXPECT_EQ(draining->text(), "ALLOCATED+DRAIN");
  EXPECT_TRUE(draining->busy());
  EXPECT_EQ(draining->reason, "kiln: ro-3 drain for upgrade");
  EXPECT_EQ(draining->reason_user, "root");
  ASSERT_TRUE(draining->reason_time.has_value());
  const SlurmNode* drained = find(*nodes, "t1-b01-p01-h04");
  EXPECT_TRUE(drained->drain());
  EXPECT_FALSE(drained->busy());
}

TEST(SlurmParseTest, KeepsANonAsciiReasonByteForByte) {
  auto nodes = parseNodesJson(fixture("sinfo_json_draining_unicode_reason.json"));
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  bool found = false;
  for (const auto& n : *nodes)
    if (n.reason.find("\xc3\xbc") != std::string::npos) found = true;  // ü
  EXPECT_TRUE(found);
}

TEST(SlurmParseTest, ReadsRunningFailedAndRequeuedJobs) {
  auto jobs = parseJobsJson(fixture("squeue_json_node_fail_requeued.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  std::map<std::string, SlurmJob> by_id;
  for (const auto& j : *jobs) by_id[j.id] = j;
  ASSERT_TRUE(by_id.count("2"));
  EXPECT_EQ(by_id["2"].state, "NODE_FAIL");
  EXPECT_EQ(by_id["2"].nodes, std::vector<std::string>{"t1-b01-p01-h02"});
  EXPECT_EQ(by_id["2"].reason, "NodeDown");
  ASSERT_TRUE(by_id["2"].start && by_id["2"].end);
  EXPECT_LT(*by_id["2"].start, *by_id["2"].end);
  EXPECT_EQ(by_id["3"].state, "RUNNING");
  EXPECT_TRUE(by_id["1"].requeued);
  EXPECT_TRUE(by_id["5"].nodes.empty());
  EXPECT_FALSE(by_id["2"].gpus.has_value());
}

TEST(SlurmParseTest, RefusesWhatIsNotSlurmsJson) {
  EXPECT_FALSE(parseNodesJson(fixture("show_node_json_unsupported.txt")).ok());
  EXPECT_FALSE(parseNodesJson("{\"nodes\": 3}").ok());
  EXPECT_FALSE(parseNodesJson("{\"nodes\": [{\"state\": \"idle\"}]}").ok());
  auto err = parseJobsJson(R"({"errors": [{"error": "Unable to contact slurm controller"}], "jobs": []})");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.error().message.find("Unable to contact slurm controller"), std::string::npos);
  EXPECT_FALSE(parseJobsJson(R"({"jobs": [{"job_id": "x"}]})").ok());
}

TEST(SlurmParseTest, CountsGpusFromTheJobsTres) {
  auto jobs = parseJobsJson(R"({"jobs": [
    {"job_id": 1, "job_state": "RUNNING", "nodes": "g[1-2]", "tres_alloc_str": "cpu=8,node=2,gres/gpu=8,gres/gpu:h100=8"},
    {"job_id": 2, "job_state": "RUNNING", "nodes": "g3", "tres_alloc_str": "cpu=1,gres/gpu:a=2,gres/gpu:b=2"}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.error();
  EXPECT_EQ((*jobs)[0].gpus, 8);
  EXPECT_EQ((*jobs)[0].nodes, (std::vector<std::string>{"g1", "g2"}));
  EXPECT_EQ((*jobs)[1].gpus, 4);
}

TEST(NodeNamingTest, MapsHostsByRuleOrByTheExplicitMap) {
  core::HostSummary h;
  h.id = "prn-b01-p0002-h07";
  h.pod = "prn-b01-p0002";
  h.tray = 7;
  h.building = "prn-b01";
  auto n = NodeNaming::make("gpu-{pod}-{tray2}", {{"prn-b01-p0002-h08", "special"}});
  ASSERT_TRUE(n.ok()) << n.error();
  EXPECT_EQ(n->nodeOf(h), "gpu-prn-b01-p0002-07");
  h.id = "prn-b01-p0002-h08";
  EXPECT_EQ(n->nodeOf(h), "special");
  EXPECT_FALSE(NodeNaming::make("{hots}", {}).ok());
  EXPECT_FALSE(NodeNaming::make("{host", {}).ok());
  EXPECT_FALSE(NodeNaming::make("host}", {}).ok());
}

TEST(SlurmReasonTest, CleansQuotesControlsAndLength) {
  EXPECT_EQ(cleanReason("kiln: \"quoted\" 'x'\nnext"), "kiln:  quoted   x  next");
  const std::string long_reason = std::string(199, 'a') + "\xc3\xbc" + "tail";
  const std::string cut = cleanReason(long_reason);
  EXPECT_EQ(cut.size(), 199u);  // never half a UTF-8 character
  EXPECT_EQ(cleanReason("ünïcode"), "ünïcode");
}

TEST(SlurmReasonTest, NamesACauseFromTheReason) {
  EXPECT_EQ(causeFromReason("Not responding"), "unknown");
  EXPECT_EQ(causeFromReason("kiln: ro-3 firmware"), "host_maintenance");
  EXPECT_EQ(causeFromReason("Xid 79 GPU fell off the bus"), "nvlink_signal_integrity");
  EXPECT_EQ(causeFromReason("HBM ECC uncorrectable"), "hbm");
  EXPECT_EQ(causeFromReason("IB link down"), "backend_network");
  EXPECT_EQ(causeFromReason("Kill task failed"), "software");
  EXPECT_EQ(causeFromReason("PSU 2 failed"), "power");
}

// ---- reconcile ----

// A host in `state` since hour 500,001 (after every ledger drain of the tests, made at 500,000).
core::HostSummary host(const std::string& id, core::HostState state, const std::string& why = "") {
  core::HostSummary h;
  h.state_since = TimePoint(std::chrono::hours(500001));
  h.id = id;
  h.pod = "p1";
  h.state = state;
  h.state_reason = why;
  return h;
}

SlurmNode node(const std::string& name, const std::string& state, std::set<std::string> flags = {},
               const std::string& reason = "", const std::string& user = "") {
  SlurmNode n;
  n.name = name;
  n.state = state;
  n.flags = std::move(flags);
  n.reason = reason;
  n.reason_user = user;
  return n;
}

SlurmJob job(const std::string& id, const std::string& state, std::vector<std::string> nodes, long start = 1000) {
  SlurmJob j;
  j.id = id;
  j.state = state;
  j.nodes = std::move(nodes);
  j.start = TimePoint(std::chrono::seconds(start));
  j.end = TimePoint(std::chrono::seconds(start + 60));
  return j;
}

class ReconcileTest : public ::testing::Test {
 protected:
  ReconcilePlan plan() { return reconcile(in_, naming_); }
  ReconcileInput in_;
  NodeNaming naming_;
  void SetUp() override { in_.now = TimePoint(std::chrono::hours(500000)); }
};

TEST_F(ReconcileTest, DrainsTheNodeOfAHostOutOfServiceWithKilnsReason) {
  in_.hosts = {host("h1", core::HostState::kFailed, "xid 79 on GPU 2"), host("h2", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "IDLE"), node("h2", "IDLE")};
  auto p = plan();
  ASSERT_EQ(p.drain.size(), 1u);
  EXPECT_EQ(p.drain[0].node, "h1");
  EXPECT_EQ(p.drain[0].reason, "kiln: failed (xid 79 on GPU 2)");
  EXPECT_TRUE(p.resume.empty());
  EXPECT_TRUE(p.moves.empty());
}

TEST_F(ReconcileTest, ARolloutsAskDrainsABusyNodeWithTheRolloutsReasonAndWaitsForTheJob) {
  in_.hosts = {host("h1", core::HostState::kAllocated)};
  in_.nodes = {node("h1", "ALLOCATED")};
  in_.jobs = {job("42", "RUNNING", {"h1"})};
  in_.requests["h1"] = {"kiln: ro-3 firmware-upgrade gb200-fw 2026.12", in_.now, false};
  auto p = plan();
  ASSERT_EQ(p.drain.size(), 1u);
  EXPECT_EQ(p.drain[0].reason, "kiln: ro-3 firmware-upgrade gb200-fw 2026.12");
  EXPECT_TRUE(p.moves.empty());    // the job is still there: the host stays allocated
  EXPECT_TRUE(p.requeue.empty());  // never kill a job by default
  EXPECT_EQ(p.requests.count("h1"), 1u);

  in_.policy = JobPolicy::kRequeue;
  EXPECT_EQ(plan().requeue, std::vector<std::string>{"42"});
}

TEST_F(ReconcileTest, ReleasesTheHostOnceTheJobLeftTheDrainedNode) {
  in_.hosts = {host("h1", core::HostState::kAllocated)};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "kiln: ro-3 x", "root")};
  in_.ledger = {{"h1", "h1", "kiln: ro-3 x", in_.now}};
  in_.requests["h1"] = {"kiln: ro-3 x", in_.now, false};
  auto p = plan();
  ASSERT_EQ(p.moves.size(), 1u);
  EXPECT_EQ(p.moves[0].action, core::HostAction::kRelease);
  EXPECT_TRUE(p.resume.empty());  // still asked for: the rollout has not taken it yet
  EXPECT_TRUE(p.drain.empty());
}

TEST_F(ReconcileTest, ResumesOnlyItsOwnDrainOnceTheHostIsBackInService) {
  in_.hosts = {host("h1", core::HostState::kAvailable), host("h2", core::HostState::kAvailable), host("h3", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "kiln: ro-3 x", "root"),
               node("h2", "IDLE", {"DRAIN"}, "rack swap", "alice"),     // an admin's drain
               node("h3", "IDLE", {"DRAIN"}, "kiln: ro-3 x", "root")};  // Kiln's words, not in the ledger
  in_.ledger = {{"h1", "h1", "kiln: ro-3 x", in_.now}};
  auto p = plan();
  ASSERT_EQ(p.resume.size(), 1u);
  EXPECT_EQ(p.resume[0].node, "h1");
  EXPECT_TRUE(p.forget.empty());
  int unavailable = 0;
  for (const auto& n : p.notices)
    if (n.text.find("unavailable to jobs") != std::string::npos) ++unavailable;
  EXPECT_EQ(unavailable, 2);
}

TEST_F(ReconcileTest, KeepsTheNodeOfAHostInServiceSinceBeforeTheDrain) {
  // Drained for a rollout's ask while the job ran; kilnd restarted and lost the ask: the host
  // is still allocated since before the drain, so the node stays drained.
  in_.hosts = {host("h1", core::HostState::kAllocated)};
  in_.hosts[0].state_since = in_.now - std::chrono::minutes(30);
  in_.nodes = {node("h1", "ALLOCATED", {"DRAIN"}, "kiln: ro-3 x", "root")};
  in_.ledger = {{"h1", "h1", "kiln: ro-3 x", in_.now - std::chrono::minutes(5)}};
  auto p = plan();
  EXPECT_TRUE(p.resume.empty());
  EXPECT_TRUE(p.forget.empty());
  in_.hosts[0].state_since = in_.now - std::chrono::minutes(1);  // released after the drain
  EXPECT_EQ(plan().resume.size(), 1u);
}

TEST_F(ReconcileTest, NeverResumesANodeWhoseReasonSomeoneElseChanged) {
  in_.hosts = {host("h1", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "bad DIMM, do not use", "alice")};
  in_.ledger = {{"h1", "h1", "kiln: ro-3 x", in_.now}};
  auto p = plan();
  EXPECT_TRUE(p.resume.empty());
  EXPECT_EQ(p.forget, std::vector<std::string>{"h1"});
  ASSERT_FALSE(p.notices.empty());
  EXPECT_NE(p.notices[0].text.find("alice"), std::string::npos);
}

TEST_F(ReconcileTest, AnAdminDrainedNodeIsNeitherRedrainedNorOwnedDuringMaintenance) {
  in_.hosts = {host("h1", core::HostState::kMaintenance, "rollout ro-3: no job on the host")};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "rack swap", "alice")};
  auto p = plan();
  EXPECT_TRUE(p.drain.empty());
  EXPECT_TRUE(p.adopt.empty());
  EXPECT_TRUE(p.resume.empty());
}

TEST_F(ReconcileTest, AdoptsADrainWrittenByKilnsPrologWhileTheHostIsOut) {
  in_.hosts = {host("h1", core::HostState::kFailed, "pre-job check wr-5 failed")};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "kiln: pre-job check wr-5 failed", "root")};
  auto p = plan();
  ASSERT_EQ(p.adopt.size(), 1u);
  EXPECT_EQ(p.adopt[0].reason, "kiln: pre-job check wr-5 failed");
  EXPECT_TRUE(p.drain.empty());
}

TEST_F(ReconcileTest, TakesOverSlurmsPrologErrorDrainOfAHostKilnsCheckFailed) {
  in_.hosts = {host("h1", core::HostState::kFailed, "pre-job-health r-5: row remap pending"), host("h2", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "Prolog error", "slurm"), node("h2", "IDLE", {"DRAIN"}, "Prolog error", "slurm")};
  auto p = plan();
  ASSERT_EQ(p.drain.size(), 1u);  // h2 is in service in Kiln: its prolog failure is not Kiln's verdict
  EXPECT_EQ(p.drain[0].node, "h1");
  EXPECT_EQ(p.drain[0].reason, "kiln: failed (pre-job-health r-5: row remap pending)");
}

TEST_F(ReconcileTest, ForgetsADrainSomeoneResumed) {
  in_.hosts = {host("h1", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "IDLE")};
  in_.ledger = {{"h1", "h1", "kiln: ro-3 x", in_.now}};
  auto p = plan();
  EXPECT_EQ(p.forget, std::vector<std::string>{"h1"});
  EXPECT_TRUE(p.resume.empty());
}

TEST_F(ReconcileTest, AllocatesAndReleasesHostsAsJobsComeAndGo) {
  in_.hosts = {host("h1", core::HostState::kAvailable), host("h2", core::HostState::kAllocated), host("h3", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "ALLOCATED"), node("h2", "IDLE"), node("h3", "IDLE")};
  in_.jobs = {job("7", "RUNNING", {"h1"})};
  auto p = plan();
  ASSERT_EQ(p.moves.size(), 2u);
  EXPECT_EQ(p.moves[0].host, "h1");
  EXPECT_EQ(p.moves[0].action, core::HostAction::kAllocate);
  EXPECT_NE(p.moves[0].reason.find("job 7"), std::string::npos);
  EXPECT_EQ(p.moves[1].host, "h2");
  EXPECT_EQ(p.moves[1].action, core::HostAction::kRelease);
}

TEST_F(ReconcileTest, SaysWhichHostsHaveNoSlurmNode) {
  in_.hosts = {host("h1", core::HostState::kAvailable), host("h2", core::HostState::kMaintenance)};
  in_.nodes = {};
  auto p = plan();
  ASSERT_EQ(p.notices.size(), 1u);
  EXPECT_TRUE(p.notices[0].warning);
  EXPECT_NE(p.notices[0].text.find("which Slurm does not know"), std::string::npos);
  EXPECT_TRUE(p.drain.empty());
}

TEST_F(ReconcileTest, ANodeFailJobIsOneInterruptionWithAStableId) {
  in_.hosts = {host("h1", core::HostState::kAvailable), host("h2", core::HostState::kAvailable)};
  auto down = node("h2", "DOWN", {"NOT_RESPONDING"}, "Not responding", "slurm");
  in_.nodes = {node("h1", "ALLOCATED"), down};
  auto failed = job("9", "NODE_FAIL", {"h1", "h2"});
  failed.gpus = 8;
  in_.jobs = {failed};
  auto p = plan();
  ASSERT_EQ(p.interruptions.size(), 1u);
  const auto& i = p.interruptions[0];
  EXPECT_EQ(i.id, "slurm-9-1000");
  EXPECT_EQ(i.hosts, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(i.job_gpus, 8);
  EXPECT_EQ(i.owner, "slurm");
  EXPECT_EQ(i.cause, "unknown");
  EXPECT_EQ(i.at, *failed.end);
  EXPECT_NE(i.description.find("node h2: Not responding"), std::string::npos);
  in_.now += std::chrono::minutes(1);
  EXPECT_EQ(plan().interruptions[0].id, i.id);  // the same on the next pass
}

TEST_F(ReconcileTest, ANodeThatGoesDownUnderARunningJobIsAnInterruption) {
  in_.hosts = {host("h1", core::HostState::kAllocated)};
  in_.running_before["h1"] = {job("11", "RUNNING", {"h1"}, 5000)};
  auto down = node("h1", "DOWN", {"NOT_RESPONDING"}, "xid 79 fell off the bus", "root");
  down.reason_time = TimePoint(std::chrono::seconds(6000));
  in_.nodes = {down};
  in_.jobs = {job("11", "PENDING", {}, 7000)};  // requeued by Slurm
  in_.nodes[0].state = "ALLOCATED";  // not responding yet, not DOWN: the job may go on
  EXPECT_TRUE(plan().interruptions.empty());
  in_.nodes[0].state = "DOWN";
  auto p = plan();
  ASSERT_EQ(p.interruptions.size(), 1u);
  EXPECT_EQ(p.interruptions[0].id, "slurm-11-5000");
  EXPECT_EQ(p.interruptions[0].cause, "nvlink_signal_integrity");
  EXPECT_EQ(p.interruptions[0].at, *down.reason_time);
}

TEST_F(ReconcileTest, ARequestLastsUntilTheHostWasOutAndBack) {
  in_.hosts = {host("h1", core::HostState::kAvailable)};
  in_.nodes = {node("h1", "IDLE", {"DRAIN"}, "kiln: ro-3 x", "root")};
  in_.ledger = {{"h1", "h1", "kiln: ro-3 x", in_.now}};
  in_.requests["h1"] = {"kiln: ro-3 x", in_.now - std::chrono::minutes(5), false};
  auto p = plan();
  EXPECT_TRUE(p.resume.empty());  // asked, not yet taken: keep it drained
  ASSERT_EQ(p.requests.count("h1"), 1u);

  in_.hosts[0].state = core::HostState::kMaintenance;
  p = plan();
  EXPECT_TRUE(p.requests.at("h1").touched);
  in_.requests = p.requests;
  in_.hosts[0].state = core::HostState::kAvailable;  // validated
  p = plan();
  EXPECT_EQ(p.requests.count("h1"), 0u);
  ASSERT_EQ(p.resume.size(), 1u);

  in_.requests["h1"] = {"kiln: ro-3 x", in_.now - std::chrono::minutes(61), false};  // abandoned
  EXPECT_EQ(plan().resume.size(), 1u);
}

TEST(DrainGateTest, OpensOnlyForADrainedEmptyNodeSeenAfterKilnsLastChange) {
  auto idle = node("n1", "IDLE");
  auto draining = node("n1", "ALLOCATED", {"DRAIN"}, "kiln: x");
  auto drained = node("n1", "IDLE", {"DRAIN"}, "kiln: x");
  EXPECT_TRUE(drainHeldBack("n1", nullptr, true, {}).has_value());
  EXPECT_TRUE(drainHeldBack("n1", &idle, true, {}).has_value());
  auto why = drainHeldBack("n1", &draining, true, {job("42", "RUNNING", {"n1"})});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("job 42 running"), std::string::npos);
  EXPECT_FALSE(drainHeldBack("n1", &drained, true, {}).has_value());
  EXPECT_FALSE(drainHeldBack("n1", nullptr, false, {}).has_value());  // not a Slurm node
  auto completing = node("n1", "IDLE", {"DRAIN", "COMPLETING"}, "kiln: x");
  EXPECT_TRUE(drainHeldBack("n1", &completing, true, {}).has_value());
}

}  // namespace
}  // namespace kiln::scheduler
