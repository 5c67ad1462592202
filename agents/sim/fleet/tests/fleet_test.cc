#include "agents/sim/fleet/fleet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>

#include "agents/sim/fleet/tests/fakes.h"
#include "agents/sim/host_sim.h"

namespace kiln::vfleet {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeLoop;
using testing::FakeTransport;

HttpResponse reply(int status, const json& body = nullptr) {
  return HttpResponse{status, body.is_null() ? "" : body.dump()};
}

json diagAssignment(const std::string& id, std::int64_t lease = 1) {
  return json{{"id", id},          {"lease", lease},      {"run_id", "r-1"},
              {"step_id", "diag"}, {"attempt", 1},        {"type", "run"},
              {"argv", {"dcgmi", "diag", "-r", "1", "-j"}}, {"timeout_ms", 20000},
              {"parse", "dcgmi-diag-json"}, {"output_cap", 65536}, {"inventory_after", false}};
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    settings_.time_scale = 0.1;  // dcgmi diag -r 1: 10 s -> 1 s
    settings_.ramp = milliseconds(0);
    settings_.enroll_token = "enroll-secret";
    settings_.poll.long_poll_slots = 10;
    // The tests below follow each request in order; the running= poll's delay has its own.
    settings_.running_poll_delay = milliseconds(0);
  }
  // `pods`: host -> pod, for the hosts that have one.
  Fleet& make(std::vector<std::string> hosts, const std::map<std::string, std::string>& pods = {}) {
    fleet_ = std::make_unique<Fleet>(loop_, transport_, store_, settings_);
    for (const auto& h : hosts) {
      auto pod = pods.find(h);
      fleet_->addHost(sim::makeDefaultState(h, sim::Platform::kCatalina),
                      pod == pods.end() ? std::string() : pod->second);
    }
    return *fleet_;
  }
  // Starts and enrols every host with token "tok-<host>".
  void startEnrolled(const std::vector<std::string>& hosts,
                     const std::map<std::string, std::string>& pods = {}) {
    make(hosts, pods).start();
    loop_.advance(milliseconds(0));
    for (size_t i = 0; i < hosts.size(); ++i) {
      auto reg = transport_.take("/api/v1/agents/register");
      auto body = json::parse(reg.req.body);
      reg.done(reply(200, {{"host", body["host"]}, {"token", "tok-" + body["host"].get<std::string>()}}));
    }
    loop_.advance(milliseconds(0));
  }
  std::string pollPrefix(const std::string& host) { return "/api/v1/agents/" + host + "/work"; }

  FakeLoop loop_;
  FakeTransport transport_;
  MemoryHostStore store_;
  FleetSettings settings_;
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(FleetTest, EnrolsEachHostWithInventoryThenLongPollsWithItsOwnToken) {
  make({"h1", "h2"}).start();
  loop_.advance(milliseconds(0));
  ASSERT_EQ(transport_.sent().size(), 2u);
  auto reg = transport_.take("/api/v1/agents/register");
  EXPECT_EQ(reg.req.method, "POST");
  EXPECT_EQ(reg.req.token, "enroll-secret");
  EXPECT_EQ(reg.req.priority, Priority::kHigh);
  auto body = json::parse(reg.req.body);
  EXPECT_EQ(body["host"], "h1");
  EXPECT_EQ(body["boot_id"], fleet_->hostState("h1")->boot_id);
  EXPECT_TRUE(body["inventory"].contains("gpu_vbios"));
  reg.done(reply(200, {{"host", "h1"}, {"token", "tok-h1"}}));
  loop_.advance(milliseconds(0));
  auto poll = transport_.take(pollPrefix("h1"));
  EXPECT_EQ(poll.req.token, "tok-h1");
  EXPECT_NE(poll.req.target.find("wait=25"), std::string::npos);
  EXPECT_NE(poll.req.target.find("boot_id=" + fleet_->hostState("h1")->boot_id), std::string::npos);
  EXPECT_EQ(poll.req.target.find("running="), std::string::npos);
  EXPECT_EQ(fleet_->counters().enrolled, 1u);
  EXPECT_EQ(store_.loadToken("h1"), "tok-h1");
}

TEST_F(FleetTest, PollsAgainAtOnceAfterA204) {
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(204));
  loop_.advance(milliseconds(25));  // a few ms of jitter at most
  EXPECT_TRUE(transport_.has(pollPrefix("h1")));
  EXPECT_EQ(fleet_->counters().polls, 2u);
}

TEST_F(FleetTest, RunsAnAssignmentForItsScaledDurationAndReportsLikeTheAgent) {
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("r-1:h1:1", 7)}}));
  loop_.advance(milliseconds(0));
  // While the step runs the host polls with running=<id>.
  auto running_poll = transport_.take(pollPrefix("h1"));
  EXPECT_NE(running_poll.req.target.find("running=r-1%3Ah1%3A1"), std::string::npos);
  EXPECT_EQ(fleet_->counters().running, 1u);
  loop_.advance(milliseconds(999));
  EXPECT_FALSE(transport_.has("/api/v1/assignments/"));
  loop_.advance(milliseconds(1));
  auto report = transport_.take("/api/v1/assignments/r-1%3Ah1%3A1/result");
  EXPECT_EQ(report.req.method, "POST");
  EXPECT_EQ(report.req.token, "tok-h1");
  auto body = json::parse(report.req.body);
  EXPECT_EQ(body["lease"], 7);
  EXPECT_EQ(body["host"], "h1");
  EXPECT_EQ(body["exit_code"], 0);
  EXPECT_EQ(body["parsed"]["overall"], "Pass");
  EXPECT_EQ(body["duration_ms"], 1000);
  // The next poll comes after the report is acknowledged, without running=.
  EXPECT_FALSE(transport_.has(pollPrefix("h1")));
  report.done(reply(200, {{"acknowledged", true}}));
  loop_.advance(milliseconds(0));
  auto next = transport_.take(pollPrefix("h1"));
  EXPECT_EQ(next.req.target.find("running="), std::string::npos);
  // The superseded running poll is answered 204 by kilnd later: it starts no extra poll.
  running_poll.done(reply(204));
  loop_.advance(milliseconds(100));
  EXPECT_FALSE(transport_.has(pollPrefix("h1")));
  EXPECT_EQ(fleet_->counters().reports_ok, 1u);
  EXPECT_EQ(fleet_->counters().steps_done, 1u);
}

TEST_F(FleetTest, WithASpreadAStepTakesItsDrawnTimeAndTheSameAgainWhenHandedOutAgain) {
  settings_.duration_spread = 0.5;
  settings_.seed = 3;
  const double factor = durationFactor(3, "h1", "r-1:h1:1", 0.5);
  ASSERT_NE(factor, 1.0);
  const auto expected = milliseconds(std::llround(1000 * factor));  // 10 s x 0.1 x factor
  startEnrolled({"h1"});
  std::int64_t reported_ms = -1;
  for (std::int64_t lease : {1, 2}) {
    while (transport_.has(pollPrefix("h1"))) {
      auto poll = transport_.take(pollPrefix("h1"));
      if (poll.req.target.find("running=") == std::string::npos) {
        poll.done(reply(200, {{"assignment", diagAssignment("r-1:h1:1", lease)}}));
        break;
      }
    }
    loop_.advance(expected - milliseconds(2));
    EXPECT_FALSE(transport_.has("/api/v1/assignments/")) << "lease " << lease;
    loop_.advance(milliseconds(2));
    auto report = transport_.take("/api/v1/assignments/r-1%3Ah1%3A1/result");
    const auto ms = json::parse(report.req.body)["duration_ms"].get<std::int64_t>();
    EXPECT_NEAR(ms, expected.count(), 1);
    if (reported_ms >= 0) {
      EXPECT_EQ(ms, reported_ms);  // the same assignment, the same time
    }
    reported_ms = ms;
    // Its answer was lost: kilnd hands the same assignment out again with a new lease.
    report.done(reply(409, {{"error", {{"code", "conflict"}}}}));
    loop_.advance(milliseconds(0));
  }
}

TEST_F(FleetTest, StartsTheStepAReportsAnswerHandsOutAndSaysItIsReady) {
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("r-1:h1:1")}}));
  loop_.advance(milliseconds(0));
  auto stale = transport_.take(pollPrefix("h1"));  // running=r-1:h1:1
  loop_.advance(milliseconds(1000));
  auto report = transport_.take("/api/v1/assignments/r-1%3Ah1%3A1/result");
  EXPECT_EQ(json::parse(report.req.body)["ready"], true);
  report.done(reply(200, {{"acknowledged", true}, {"outcome", "accepted"}, {"assignment", diagAssignment("r-1:h1:2")}}));
  loop_.advance(milliseconds(0));
  // The handed-out step runs at once; the host polls with it as running=, not for work.
  EXPECT_EQ(fleet_->counters().running, 1u);
  EXPECT_EQ(fleet_->counters().assignments, 2u);
  auto poll = transport_.take(pollPrefix("h1"));
  EXPECT_NE(poll.req.target.find("running=r-1%3Ah1%3A2"), std::string::npos) << poll.req.target;
  // The poll made for the first step is superseded: a connection taking it drops it unsent.
  ASSERT_TRUE(stale.req.wanted);
  EXPECT_FALSE(stale.req.wanted());
  EXPECT_TRUE(poll.req.wanted());
  loop_.advance(milliseconds(1000));
  EXPECT_TRUE(transport_.has("/api/v1/assignments/r-1%3Ah1%3A2/result"));
}

TEST_F(FleetTest, AStepIsPolledForOnlyOnceItHasRunThePollDelay) {
  settings_.running_poll_delay = milliseconds(400);  // the diag step takes 1 s
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("r-1:h1:1")}}));
  loop_.advance(milliseconds(399));
  EXPECT_FALSE(transport_.has(pollPrefix("h1")));
  loop_.advance(milliseconds(1));
  auto poll = transport_.take(pollPrefix("h1"));
  EXPECT_NE(poll.req.target.find("running=r-1%3Ah1%3A1"), std::string::npos) << poll.req.target;
}

TEST_F(FleetTest, AStepEndingWithinThePollDelayIsNeverPolledFor) {
  settings_.running_poll_delay = milliseconds(1500);  // longer than the 1 s diag step
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("r-1:h1:1")}}));
  loop_.advance(milliseconds(1000));
  EXPECT_FALSE(transport_.has(pollPrefix("h1")));
  transport_.take("/api/v1/assignments/r-1%3Ah1%3A1/result")
      .done(reply(200, {{"acknowledged", true}, {"outcome", "accepted"}, {"assignment", diagAssignment("r-1:h1:2")}}));
  loop_.advance(milliseconds(1000));
  EXPECT_FALSE(transport_.has(pollPrefix("h1")));
  transport_.take("/api/v1/assignments/r-1%3Ah1%3A2/result").done(reply(200, {{"acknowledged", true}}));
  loop_.advance(milliseconds(0));
  // Holding nothing, it asks for work at once.
  auto poll = transport_.take(pollPrefix("h1"));
  EXPECT_EQ(poll.req.target.find("running="), std::string::npos) << poll.req.target;
  EXPECT_EQ(fleet_->counters().assignments, 2u);
}

TEST_F(FleetTest, RetriesAReportOnNetworkErrorsAndDropsItOn409) {
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("a1")}}));
  loop_.advance(seconds(1));
  transport_.take("/api/v1/assignments/a1/result").done(unavailable("connection refused"));
  loop_.advance(milliseconds(400));
  EXPECT_FALSE(transport_.has("/api/v1/assignments/a1/result"));  // backoff >= 0.5 s
  loop_.advance(milliseconds(700));
  auto again = transport_.take("/api/v1/assignments/a1/result");
  again.done(reply(503));
  loop_.advance(seconds(2));
  transport_.take("/api/v1/assignments/a1/result").done(reply(409, {{"error", {{"code", "conflict"}}}}));
  loop_.advance(milliseconds(0));
  EXPECT_EQ(fleet_->counters().report_errors, 2u);
  EXPECT_EQ(fleet_->counters().reports_conflict, 1u);
  EXPECT_FALSE(transport_.has("/api/v1/assignments/"));
  // Dropped: the host asks for new work.
  while (transport_.has(pollPrefix("h1"))) transport_.take(pollPrefix("h1"));
  loop_.advance(milliseconds(0));
  EXPECT_EQ(fleet_->counters().running, 0u);
}

TEST_F(FleetTest, CancelStopsTheStepAndReportsItCancelled) {
  startEnrolled({"h1"});
  json a = diagAssignment("a1");
  a["argv"] = {"dcgmi", "diag", "-r", "3", "-j"};  // 900 s x 0.1 = 90 s
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", a}}));
  loop_.advance(seconds(5));
  transport_.take(pollPrefix("h1")).done(reply(200, {{"cancel", {"a1"}}}));
  loop_.advance(milliseconds(0));
  auto report = transport_.take("/api/v1/assignments/a1/result");
  auto body = json::parse(report.req.body);
  EXPECT_EQ(body["cancelled"], true);
  EXPECT_EQ(body["duration_ms"], 5000);
  EXPECT_TRUE(body["parsed"].is_null());
  EXPECT_EQ(fleet_->counters().cancels, 1u);
  EXPECT_EQ(fleet_->counters().running, 0u);
}

TEST_F(FleetTest, ReEnrolsWhenItsTokenIsRefused) {
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(401));
  loop_.advance(milliseconds(0));
  auto reg = transport_.take("/api/v1/agents/register");
  reg.done(reply(200, {{"host", "h1"}, {"token", "tok-new"}}));
  loop_.advance(milliseconds(0));
  EXPECT_EQ(transport_.take(pollPrefix("h1")).req.token, "tok-new");
  EXPECT_EQ(fleet_->counters().enrolments, 2u);
  EXPECT_EQ(fleet_->counters().enrolled, 1u);
}

TEST_F(FleetTest, AStoredTokenSkipsEnrolment) {
  ASSERT_TRUE(store_.saveToken("h1", "kept").ok());
  make({"h1"}).start();
  loop_.advance(milliseconds(0));
  EXPECT_FALSE(transport_.has("/api/v1/agents/register"));
  EXPECT_EQ(transport_.take(pollPrefix("h1")).req.token, "kept");
}

TEST_F(FleetTest, HostUnknownToKilndIsRejectedAndNeverPolls) {
  make({"ghost"}).start();
  loop_.advance(milliseconds(0));
  transport_.take("/api/v1/agents/register").done(reply(404, {{"error", {{"code", "not_found"}}}}));
  loop_.advance(seconds(60));
  EXPECT_TRUE(transport_.empty());
  EXPECT_EQ(fleet_->counters().rejected, 1u);
}

TEST_F(FleetTest, EnrolmentRetriesWithBackoffWhileKilndIsDown) {
  make({"h1"}).start();
  loop_.advance(milliseconds(0));
  transport_.take("/api/v1/agents/register").done(unavailable("refused"));
  loop_.advance(milliseconds(450));
  EXPECT_TRUE(transport_.empty());
  loop_.advance(milliseconds(600));
  EXPECT_TRUE(transport_.has("/api/v1/agents/register"));
  EXPECT_EQ(fleet_->counters().enrol_errors, 1u);
}

TEST_F(FleetTest, EnrolmentsInFlightAreBounded) {
  settings_.max_enrolling = 2;
  make({"h1", "h2", "h3", "h4", "h5"}).start();
  loop_.advance(milliseconds(0));
  EXPECT_EQ(transport_.sent().size(), 2u);
  auto reg = transport_.take("/api/v1/agents/register");
  reg.done(reply(200, {{"token", "t"}}));
  // The freed slot goes to the next host at once; the enrolled host polls.
  EXPECT_EQ(transport_.sent().size(), 2u);
  loop_.advance(milliseconds(0));
  EXPECT_TRUE(transport_.has(pollPrefix(json::parse(reg.req.body)["host"].get<std::string>())));
  int registered = 1;
  while (transport_.has("/api/v1/agents/register")) {
    transport_.take("/api/v1/agents/register").done(reply(200, {{"token", "t"}}));
    registered++;
  }
  EXPECT_EQ(registered, 5);
  EXPECT_EQ(fleet_->counters().enrolled, 5u);
}

TEST_F(FleetTest, ShortPollsIdleHostsWhenLongPollSlotsAreTaken) {
  settings_.poll.long_poll_slots = 2;  // idle hosts may take 75%: 1 slot
  startEnrolled({"h1", "h2", "h3"});
  int long_polls = 0, short_polls = 0;
  for (const char* h : {"h1", "h2", "h3"}) {
    auto p = transport_.take(pollPrefix(h));
    if (p.req.target.find("wait=25") != std::string::npos) {
      long_polls++;
    } else {
      EXPECT_NE(p.req.target.find("wait=0"), std::string::npos);
      short_polls++;
      p.done(reply(204));
    }
  }
  EXPECT_EQ(long_polls, 1);
  EXPECT_EQ(short_polls, 2);
  // The short pollers come back after the idle interval (30 s +-20%), not at once.
  loop_.advance(seconds(20));
  EXPECT_TRUE(transport_.empty());
  loop_.advance(seconds(20));
  EXPECT_EQ(transport_.sent().size(), 2u);
}

TEST_F(FleetTest, AnIdleHostsFirstWorkWakesTheIdleShortPollersOfItsPod) {
  settings_.poll.long_poll_slots = 2;  // idle hosts may take 1 slot, hot hosts both
  const std::vector<std::string> hosts = {"a1", "a2", "a3", "b1"};
  startEnrolled(hosts, {{"a1", "pod-a"}, {"a2", "pod-a"}, {"a3", "pod-a"}, {"b1", "pod-b"}});
  // One host long-polls; the others short-poll and get 204, next poll in ~30 s.
  std::string holder;
  std::optional<FakeTransport::Sent> long_poll;
  for (const auto& h : hosts) {
    auto p = transport_.take(pollPrefix(h));
    if (p.req.target.find("wait=25") != std::string::npos) {
      holder = h;
      long_poll = std::move(p);
    } else {
      p.done(reply(204));
    }
  }
  ASSERT_EQ(holder, "a1");  // the first poll took the idle slot
  loop_.advance(seconds(1));
  EXPECT_TRUE(transport_.empty());
  // a1's pod gets work: a1 sees it on its long poll, a2 and a3 poll within a few ms, b1 not.
  long_poll->done(reply(200, {{"assignment", diagAssignment("r-1:a1:1")}}));
  loop_.advance(milliseconds(25));
  EXPECT_TRUE(transport_.has(pollPrefix("a1")));  // running=r-1:a1:1
  EXPECT_TRUE(transport_.has(pollPrefix("a2")));
  EXPECT_TRUE(transport_.has(pollPrefix("a3")));
  EXPECT_FALSE(transport_.has(pollPrefix("b1")));
  EXPECT_EQ(fleet_->counters().sibling_wakeups, 2u);
  // Woken hosts are hot: one of them takes the second slot although idle hosts may take one.
  int long_polls = 0;
  for (const char* h : {"a2", "a3"}) {
    if (transport_.take(pollPrefix(h)).req.target.find("wait=25") != std::string::npos) long_polls++;
  }
  EXPECT_EQ(long_polls, 1);
  // A host that gets work while hot (its next step) wakes nobody again.
  loop_.advance(seconds(1));  // the diag step (1 s scaled) ends and is reported
  transport_.take("/api/v1/assignments/").done(
      reply(200, {{"acknowledged", true}, {"assignment", diagAssignment("r-1:a1:2")}}));
  loop_.advance(milliseconds(25));
  EXPECT_EQ(fleet_->counters().assignments, 2u);
  EXPECT_EQ(fleet_->counters().sibling_wakeups, 2u);
}

TEST_F(FleetTest, AHostWokenWhileItsShortPollIsInFlightPollsAgainAtOnce) {
  settings_.poll.long_poll_slots = 2;
  startEnrolled({"a1", "a2"}, {{"a1", "pod-a"}, {"a2", "pod-a"}});
  auto first = transport_.take(pollPrefix("a1"));
  auto second = transport_.take(pollPrefix("a2"));
  ASSERT_NE(first.req.target.find("wait=25"), std::string::npos);
  ASSERT_NE(second.req.target.find("wait=0"), std::string::npos);
  // a1 gets work while a2's short poll is still unanswered; kilnd then answers that one 204.
  first.done(reply(200, {{"assignment", diagAssignment("r-1:a1:1")}}));
  loop_.advance(milliseconds(0));
  second.done(reply(204));
  loop_.advance(milliseconds(25));
  EXPECT_TRUE(transport_.has(pollPrefix("a2")));
}

TEST_F(FleetTest, StopWaitsForReportsInFlightAndSavesChangedStates) {
  startEnrolled({"h1", "h2"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("a1")}}));
  loop_.advance(seconds(1));
  auto report = transport_.take("/api/v1/assignments/a1/result");
  bool done = false;
  fleet_->stop(seconds(5), [&] { done = true; });
  EXPECT_FALSE(done);
  report.done(reply(200));
  EXPECT_TRUE(done);
  EXPECT_TRUE(store_.loadState("h1").has_value());
  EXPECT_FALSE(store_.loadState("h2").has_value());  // idle: nothing to keep
  loop_.advance(seconds(60));
  // No new polls after stop (the poll still in flight may be answered; none follow).
  while (!transport_.empty()) {
    auto sent = std::move(transport_.sent().front());
    transport_.sent().pop_front();
    sent.done(reply(204));
  }
  loop_.advance(seconds(60));
  EXPECT_TRUE(transport_.empty());
}

TEST_F(FleetTest, StopGivesUpOnUnansweredReportsAfterTheGrace) {
  startEnrolled({"h1"});
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("a1")}}));
  loop_.advance(seconds(1));
  bool done = false;
  fleet_->stop(seconds(5), [&] { done = true; });
  loop_.advance(seconds(4));
  EXPECT_FALSE(done);
  loop_.advance(seconds(1));
  EXPECT_TRUE(done);
}

TEST_F(FleetTest, RunTimeFaultChangesTheNextResult) {
  startEnrolled({"h1"});
  ASSERT_TRUE(fleet_->injectFault("h1", {sim::FaultKind::kRowRemapPending, 2}).ok());
  EXPECT_FALSE(fleet_->injectFault("nobody", {sim::FaultKind::kRowRemapPending, 2}).ok());
  transport_.take(pollPrefix("h1")).done(reply(200, {{"assignment", diagAssignment("a1")}}));
  loop_.advance(seconds(1));
  auto body = json::parse(transport_.take("/api/v1/assignments/a1/result").req.body);
  EXPECT_EQ(body["parsed"]["overall"], "Fail");
  EXPECT_GE(fleet_->clearFaults("h1", std::nullopt).value(), 1);
  EXPECT_FALSE(fleet_->hostState("h1")->gpus[2].remap_pending);
}

TEST_F(FleetTest, ThousandsOfHostsShareTimersNotThreads) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 2000; ++i) hosts.push_back("h" + std::to_string(i));
  settings_.ramp = milliseconds(10000);
  settings_.poll.long_poll_slots = 500;
  settings_.max_enrolling = 5000;
  make(hosts).start();
  EXPECT_EQ(loop_.pending(), 2000u);
  loop_.advance(seconds(5));
  // About half the enrolments have been sent within half the ramp.
  EXPECT_GT(transport_.sent().size(), 800u);
  EXPECT_LT(transport_.sent().size(), 1200u);
}

}  // namespace
}  // namespace kiln::vfleet
