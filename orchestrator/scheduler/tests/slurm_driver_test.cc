// The driver over fakes: the order of ledger and Slurm writes, the gate's view after a drain
// and after a resume, Slurm down, interruptions recorded once.

#include <gtest/gtest.h>

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/reliability/testing/fake_reliability_store.h"
#include "orchestrator/scheduler/run_gate.h"
#include "orchestrator/scheduler/slurm_driver.h"
#include "orchestrator/scheduler/testing/fake_drain_ledger.h"

namespace kiln::scheduler {
namespace {

// Slurm as a map of nodes; drain/resume change them, and every call is logged in `calls`.
class FakeSlurm final : public SlurmControl {
 public:
  std::map<std::string, SlurmNode> nodes_;
  std::vector<SlurmJob> jobs_;
  std::vector<std::string>* calls = nullptr;
  std::optional<Error> down;

  Result<std::vector<SlurmNode>> nodes() override {
    if (down) return *down;
    std::vector<SlurmNode> out;
    for (const auto& [_, n] : nodes_) out.push_back(n);
    return out;
  }
  Result<std::vector<SlurmJob>> jobs() override {
    if (down) return *down;
    return jobs_;
  }
  Status drain(const std::string& node, const std::string& reason) override {
    calls->push_back("slurm drain " + node);
    if (down) return *down;
    nodes_[node].flags.insert("DRAIN");
    nodes_[node].reason = reason;
    return Ok{};
  }
  Status resume(const std::string& node) override {
    calls->push_back("slurm resume " + node);
    nodes_[node].flags.erase("DRAIN");
    nodes_[node].reason.clear();
    return Ok{};
  }
  Status requeue(const std::string& job) override {
    calls->push_back("slurm requeue " + job);
    return Ok{};
  }
};

class SlurmDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_.addPod("p1", "b1");
    interruptions_.addPod("p1", "s1", "b1", "catalina");
    for (const auto& id : {"p1-h01", "p1-h02"}) interruptions_.addHost(id, "p1");
    slurm_.calls = &calls_;
    ledger_.calls = &calls_;
    for (const auto& id : {"p1-h01", "p1-h02"}) slurm_.nodes_[id] = SlurmNode{id, "IDLE", {}, "", "", std::nullopt};
  }
  SlurmDriver driver() {
    return SlurmDriver(fleet_, fleet_, fleet_, ledger_, slurm_, &interruptions_, clock_, {}, lines_);
  }
  core::testing::FakeFleet fleet_;
  FakeSlurm slurm_;
  testing::FakeDrainLedger ledger_;
  reliability::testing::FakeReliabilityStore interruptions_;
  core::FakeClock clock_;
  std::vector<std::string> calls_, log_;
  // The driver's lines into log_, "W ..." for a warning and "I ..." for the rest.
  struct Lines final : Logger {
    explicit Lines(std::vector<std::string>& to) : to_(to) {}
    void log(LogLevel level, std::string_view line) override {
      to_.push_back((level >= LogLevel::kWarn ? "W " : "I ") + std::string(line));
    }
    std::vector<std::string>& to_;
  } lines_{log_};
};

TEST_F(SlurmDriverTest, TheGateOpensOnlyAfterAPassSawTheDrainKilnAskedFor) {
  auto d = driver();
  auto* h = fleet_.host("p1-h01");
  EXPECT_TRUE(d.heldBack(*h, "kiln: ro-1 fw b 1").has_value());  // no reading yet
  fleet_.setState("p1-h01", core::HostState::kDraining);
  ASSERT_TRUE(d.pass().ok());
  EXPECT_EQ(calls_, (std::vector<std::string>{"ledger put p1-h01", "slurm drain p1-h01"}));  // the ledger first
  EXPECT_EQ(slurm_.nodes_["p1-h01"].reason, "kiln: ro-1 fw b 1");
  auto why = d.heldBack(*fleet_.host("p1-h01"), "kiln: ro-1 fw b 1");
  ASSERT_TRUE(why.has_value());  // the pass read Slurm before it drained the node
  EXPECT_NE(why->find("waiting for Kiln's drain"), std::string::npos);
  ASSERT_TRUE(d.pass().ok());
  EXPECT_FALSE(d.heldBack(*fleet_.host("p1-h01"), "kiln: ro-1 fw b 1").has_value());
}

// Issue 35: the gate a burn-in, quarantine, maintenance or manual run waits for (run_gate.h).
// A quarantined host whose node still runs a job waits for the job to leave; a host Kiln counts
// in the job pool waits to be drained, and the run's question drains nothing by itself.
TEST_F(SlurmDriverTest, ARunsHostWaitsForItsJobToLeaveAndAServingHostForADrain) {
  auto d = driver();
  fleet_.setState("p1-h01", core::HostState::kQuarantine);
  slurm_.nodes_["p1-h01"].state = "ALLOCATED";
  slurm_.jobs_ = {SlurmJob{"77", "RUNNING", {"p1-h01"}, clock_.now(), std::nullopt, "", std::nullopt, false}};
  ASSERT_TRUE(d.pass().ok());  // drains the quarantined host's node around its job
  ASSERT_TRUE(d.pass().ok());  // and sees it drained
  auto why = runHeldBack(d, *fleet_.host("p1-h01"), "r-4");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("job 77 running"), std::string::npos) << *why;
  slurm_.jobs_.clear();
  slurm_.nodes_["p1-h01"].state = "IDLE";
  ASSERT_TRUE(d.pass().ok());
  EXPECT_EQ(runHeldBack(d, *fleet_.host("p1-h01"), "r-4"), std::nullopt);

  // p1-h02 serves jobs (available): held until someone drains it, and no drain is asked of Slurm.
  calls_.clear();
  why = runHeldBack(d, *fleet_.host("p1-h02"), "r-5");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("is available (in the job pool): drain it first"), std::string::npos) << *why;
  ASSERT_TRUE(d.pass().ok());
  EXPECT_TRUE(calls_.empty()) << calls_[0];
  EXPECT_FALSE(slurm_.nodes_["p1-h02"].drain());
}

TEST_F(SlurmDriverTest, AfterAResumeTheGateWaitsForAFreshReading) {
  auto d = driver();
  fleet_.setState("p1-h01", core::HostState::kMaintenance);
  ASSERT_TRUE(d.pass().ok());
  ASSERT_TRUE(d.pass().ok());
  fleet_.setState("p1-h01", core::HostState::kAvailable);
  fleet_.host("p1-h01")->state_since = clock_.now() + std::chrono::seconds(1);  // validated after the drain
  calls_.clear();
  ASSERT_TRUE(d.pass().ok());
  EXPECT_EQ(calls_, (std::vector<std::string>{"slurm resume p1-h01", "ledger remove p1-h01 slurm.resume"}));
  // A new rollout drains the host at once: the reading before the resume must not open the gate.
  fleet_.setState("p1-h01", core::HostState::kDraining);
  auto why = d.heldBack(*fleet_.host("p1-h01"), "kiln: ro-2 fw b 2");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("after Kiln's last change"), std::string::npos);
}

TEST_F(SlurmDriverTest, ASlurmThatCannotBeReadHoldsTheGateAndIsLoggedOnce) {
  auto d = driver();
  ASSERT_TRUE(d.pass().ok());
  slurm_.down = unavailable("sinfo exited 1: Unable to contact slurm controller (connect failure)");
  EXPECT_FALSE(d.pass().ok());
  EXPECT_FALSE(d.pass().ok());
  auto why = d.heldBack(*fleet_.host("p1-h02"), "kiln: ro-1 fw b 1");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("Unable to contact slurm controller"), std::string::npos);
  EXPECT_EQ(std::count_if(log_.begin(), log_.end(), [](const std::string& l) { return l.find("Unable to contact") != std::string::npos; }), 1);
  EXPECT_EQ(d.status()->last_error.empty(), false);
  slurm_.down.reset();
  ASSERT_TRUE(d.pass().ok());
  EXPECT_TRUE(d.status()->last_error.empty());
}

TEST_F(SlurmDriverTest, AKilndRestartedWithNodesDrainedResumesExactlyThose) {
  fleet_.setState("p1-h01", core::HostState::kMaintenance);
  {
    auto d = driver();
    ASSERT_TRUE(d.pass().ok());
  }
  slurm_.nodes_["p1-h02"].flags.insert("DRAIN");  // an operator's
  slurm_.nodes_["p1-h02"].reason = "bad fan";
  fleet_.setState("p1-h01", core::HostState::kAvailable);
  fleet_.host("p1-h01")->state_since = clock_.now() + std::chrono::seconds(1);
  calls_.clear();
  auto restarted = driver();  // nothing in memory: only the ledger
  ASSERT_TRUE(restarted.pass().ok());
  EXPECT_EQ(calls_, (std::vector<std::string>{"slurm resume p1-h01", "ledger remove p1-h01 slurm.resume"}));
  EXPECT_TRUE(slurm_.nodes_["p1-h02"].drain());
}

// Issue 35: the node view and the pre-job check's naming answer on a follower replica too; its
// reading changes nothing, and its view never opens the drain gate once it leads.
TEST_F(SlurmDriverTest, AFollowersReadingShowsTheNodesAndChangesNothing) {
  fleet_.setState("p1-h01", core::HostState::kQuarantine);  // the leader would drain its node
  slurm_.nodes_["p1-h02"].state = "ALLOCATED";
  SlurmJob j;
  j.id = "88";
  j.state = "RUNNING";
  j.nodes = {"p1-h02"};
  slurm_.jobs_ = {j};
  auto d = driver();
  EXPECT_EQ(d.hostOfNode("p1-h01"), "");  // nothing read yet
  ASSERT_TRUE(d.observe().ok());
  EXPECT_TRUE(calls_.empty());  // no drain, no ledger row
  EXPECT_FALSE(slurm_.nodes_["p1-h01"].drain());
  EXPECT_EQ(d.hostOfNode("p1-h01"), "p1-h01");
  auto st = d.status();
  ASSERT_TRUE(st.has_value());
  auto node = std::find_if(st->nodes.begin(), st->nodes.end(), [](const NodeStatus& n) { return n.node == "p1-h02"; });
  ASSERT_NE(node, st->nodes.end());
  EXPECT_TRUE(node->known);
  EXPECT_EQ(node->host, "p1-h02");
  EXPECT_EQ(node->jobs, std::vector<std::string>{"88"});
  EXPECT_EQ(node->state, "ALLOCATED");
  EXPECT_TRUE(st->last_pass.has_value());

  // The follower wins the leadership: the gate waits for a reading of its own, made as leader.
  fleet_.setState("p1-h02", core::HostState::kDraining);
  slurm_.nodes_["p1-h02"].state = "IDLE";
  slurm_.jobs_.clear();
  slurm_.nodes_["p1-h02"].flags.insert("DRAIN");
  slurm_.nodes_["p1-h02"].reason = "kiln: ro-1 fw b 1";
  ASSERT_TRUE(d.observe().ok());
  auto why = d.heldBack(*fleet_.host("p1-h02"), "kiln: ro-1 fw b 1");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("first reading"), std::string::npos);
  ASSERT_TRUE(d.pass().ok());
  EXPECT_TRUE(slurm_.nodes_["p1-h01"].drain());  // the leader's pass acts
}

TEST_F(SlurmDriverTest, RecordsEachInterruptionOnce) {
  auto d = driver();
  SlurmJob j;
  j.id = "77";
  j.state = "NODE_FAIL";
  j.nodes = {"p1-h02"};
  j.start = clock_.now();
  j.end = clock_.now() + std::chrono::minutes(3);
  slurm_.jobs_ = {j};
  ASSERT_TRUE(d.pass().ok());
  ASSERT_TRUE(d.pass().ok());
  const auto recorded = interruptions_.interruptions();
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].job, "77");
  EXPECT_EQ(recorded[0].hosts, std::vector<std::string>{"p1-h02"});
  EXPECT_EQ(recorded[0].owner, "slurm");
}

}  // namespace
}  // namespace kiln::scheduler
