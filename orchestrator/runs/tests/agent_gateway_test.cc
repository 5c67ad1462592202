// Tier `unit`: the agent gateway alone, on a FakeClock, with in-memory fakes of what it asks
// (AgentWork: work and reports; RunStore: the shared FakeRunStore, holding no runs, for
// heartbeats, hosts with work and assignments). No PostgreSQL, no thread of its own (the test
// turns expireDue / writerTurn by hand), no sleep: time moves only when the test advances the
// clock. Replies that go through the executor are awaited on futures.

#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/executor.h"
#include "common/logger.h"
#include "orchestrator/runs/agent_gateway.h"
#include "orchestrator/runs/testing/fake_run_store.h"

namespace kiln::runs {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using runs::testing::FakeRunStore;

// The work side: hands out what the test put in `work` (once per host), answers reports as
// accepted. Called on the executor's thread.
class FakeAgentWork final : public AgentWork {
 public:
  void give(const std::string& host, protocol::Assignment assignment, std::string group = "") {
    std::lock_guard lock(mu_);
    work_[host] = {std::move(assignment), group.empty() ? host : std::move(group)};
  }
  // The next batch with a report of `host` waits for `gate` (entered is set when it does).
  void holdBatchOf(const std::string& host, std::shared_future<void> gate, std::shared_ptr<std::promise<void>> entered) {
    std::lock_guard lock(mu_);
    hold_host_ = host;
    gate_ = std::move(gate);
    entered_ = std::move(entered);
  }
  // The assignment ids of each reportBatch call, in call order.
  std::vector<std::vector<std::string>> reportBatches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }
  void setPriority(const std::string& run, Priority p) {
    std::lock_guard lock(mu_);
    priorities_[run] = p;
  }
  Priority runPriority(const std::string& run_id) override {
    std::lock_guard lock(mu_);
    auto it = priorities_.find(run_id);
    return it == priorities_.end() ? Priority::kMaintenance : it->second;
  }
  std::vector<std::vector<std::string>> claims() const {
    std::lock_guard lock(mu_);
    return claims_;
  }
  std::vector<AgentReport> reports() const {
    std::lock_guard lock(mu_);
    return reports_;
  }

  Result<std::map<std::string, HandedOut>> claimBatch(const std::vector<std::string>& hosts) override {
    std::lock_guard lock(mu_);
    claims_.push_back(hosts);
    std::map<std::string, HandedOut> out;
    for (const auto& h : hosts)
      if (auto it = work_.find(h); it != work_.end()) {
        out[h] = std::move(it->second);
        work_.erase(it);
      }
    return out;
  }
  std::vector<Result<ReportAnswer>> reportBatch(const std::vector<AgentReport>& reports) override {
    std::optional<std::shared_future<void>> wait;
    {
      std::lock_guard lock(mu_);
      std::vector<std::string> ids;
      for (const auto& r : reports) {
        ids.push_back(r.assignment_id);
        if (r.host == hold_host_ && gate_) {
          wait = std::move(gate_);
          gate_.reset();
          hold_host_.clear();
        }
      }
      batches_.push_back(ids);
    }
    if (wait) {
      entered_->set_value();
      wait->wait();
    }
    std::lock_guard lock(mu_);
    std::vector<Result<ReportAnswer>> out;
    for (const auto& r : reports) {
      reports_.push_back(r);
      out.push_back(ReportAnswer{ReportOutcome::kAccepted, std::nullopt});
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, HandedOut> work_;
  std::map<std::string, Priority> priorities_;
  std::vector<std::vector<std::string>> claims_;
  std::vector<AgentReport> reports_;
  std::vector<std::vector<std::string>> batches_;
  std::string hold_host_;
  std::optional<std::shared_future<void>> gate_;
  std::shared_ptr<std::promise<void>> entered_;
};

using PollAnswer = Result<std::optional<json>>;

// One poll's answer, awaited: a reply that comes through the executor arrives on its thread.
struct Answer {
  std::shared_ptr<std::promise<PollAnswer>> promise = std::make_shared<std::promise<PollAnswer>>();
  std::shared_future<PollAnswer> future = promise->get_future().share();
  AgentGateway::PollReply reply() {
    return [p = promise](PollAnswer a) { p->set_value(std::move(a)); };
  }
  bool ready() const { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  // The answer; fails the test if none came within 10 s (real time: the executor's thread).
  std::optional<PollAnswer> get() const {
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return std::nullopt;
    return future.get();
  }
};

// Returns once the executor (one thread, FIFO) has run every task posted before.
void settle(Executor& executor) {
  auto done = std::make_shared<std::promise<void>>();
  executor.post([done] { done->set_value(); });
  ASSERT_EQ(done->get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

struct GatewayUnderTest {
  FakeClock clock;
  RecordingLogger log;
  FakeAgentWork work;
  FakeRunStore store;
  Executor executor{1};
  AgentGatewayOptions options;  // heartbeat_flush and pending_refresh: 5 s
  AgentGateway gateway{work, store, executor, clock, log, options};
  // The executor's tasks use the gateway: finish them before it goes.
  ~GatewayUnderTest() { executor.join(); }
};

TEST(AgentGatewayTest, AnIdlePollParksWithoutAskingForWorkAndIsAnsweredWhenItsHostIsNotified) {
  GatewayUnderTest t;
  Answer a;
  t.gateway.poll("h1", "boot-1", 30, "", a.reply());
  EXPECT_EQ(t.gateway.parkedCount(), 1u);
  EXPECT_FALSE(a.ready());
  EXPECT_TRUE(t.work.claims().empty()) << "an idle poll of a host without work costs no claim";

  protocol::Assignment flash;
  flash.id = "a-1";
  flash.step_id = "flash";
  flash.argv = {"fwupdate", "--apply"};
  t.work.give("h1", flash);
  t.gateway.notify("h1");
  auto got = a.get();
  ASSERT_TRUE(got.has_value()) << "no answer after the notify";
  ASSERT_TRUE(got->ok()) << got->error().message;
  ASSERT_TRUE(got->value().has_value()) << "answered 204 instead of with the work";
  EXPECT_EQ((*got->value())["assignment"], protocol::toJson(flash)) << "the protocol library's encoding";
  EXPECT_EQ(t.gateway.parkedCount(), 0u);
  EXPECT_EQ(t.work.claims(), (std::vector<std::vector<std::string>>{{"h1"}}));
  EXPECT_EQ(t.clock.waits(), std::vector<milliseconds>()) << "nothing waited on the clock";
}

// Two drains at once (report_drains 2): a report whose run group another drain's transaction
// holds waits for that one, which takes it next; reports of other groups go on meanwhile. The
// group is the one the gateway handed the step out with.
TEST(AgentGatewayTest, AGroupsReportsAreNeverInTwoTransactionsAtOnce) {
  FakeClock clock;
  RecordingLogger log;
  FakeAgentWork work;
  FakeRunStore store;
  Executor executor{2};
  AgentGatewayOptions options;
  options.report_drains = 2;
  AgentGateway gateway{work, store, executor, clock, log, options};
  const std::map<std::string, std::string> group_of{{"h1", "p1"}, {"h2", "p1"}, {"h3", "p2"}};
  std::vector<Answer> polls(3);
  int i = 0;
  for (const auto& [host, group] : group_of) {
    gateway.poll(host, "boot", 30, "", polls[i++].reply());
    protocol::Assignment a;
    a.id = "r-1:" + host + ":1";
    a.run_id = "r-1";
    a.step_id = "check";
    work.give(host, a, group);
    gateway.notify(host);
  }
  for (auto& p : polls) {
    auto got = p.get();
    ASSERT_TRUE(got && got->ok() && got->value().has_value()) << "the step was not handed out";
  }

  std::promise<void> gate;
  auto entered = std::make_shared<std::promise<void>>();
  work.holdBatchOf("h1", gate.get_future().share(), entered);
  std::map<std::string, std::shared_ptr<std::promise<Result<ReportAnswer>>>> answered;
  auto report = [&](const std::string& host) {
    auto p = std::make_shared<std::promise<Result<ReportAnswer>>>();
    answered[host] = p;
    const json body{{"lease", 1}, {"exit_code", 0}};
    gateway.report(host, "r-1:" + host + ":1", body, body.dump(), [p](Result<ReportAnswer> a) { p->set_value(std::move(a)); });
  };
  report("h1");
  ASSERT_EQ(entered->get_future().wait_for(seconds(10)), std::future_status::ready) << "h1's batch never started";
  report("h2");  // p1: held by h1's transaction
  report("h3");  // p2
  auto h3 = answered["h3"]->get_future();
  ASSERT_EQ(h3.wait_for(seconds(10)), std::future_status::ready) << "p2's report waited for p1's transaction";
  auto h2 = answered["h2"]->get_future();
  EXPECT_EQ(h2.wait_for(milliseconds(50)), std::future_status::timeout) << "p1's second report went in a transaction of its own";
  gate.set_value();
  ASSERT_EQ(h2.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_TRUE(h2.get().ok());
  executor.join();
  EXPECT_EQ(work.reportBatches(),
            (std::vector<std::vector<std::string>>{{"r-1:h1:1"}, {"r-1:h3:1"}, {"r-1:h2:1"}}));
  EXPECT_NE(gateway.metrics().find("kiln_agent_report_deferrals_total 1\n"), std::string::npos) << gateway.metrics();
}

// Priority by purpose (issue 35). One report drain, held by a rollout's transaction: a pre-job
// check's report goes through the express drain at once, alone; the queued ones then go class
// by class (maintenance before burn-in, whatever their arrival order), except a report that
// waited the starvation bound, which goes first.
TEST(AgentGatewayTest, ReportsGoByPurposeAndThePreJobClassNeverWaitsForARolloutsTransaction) {
  for (const bool aged : {false, true}) {
    SCOPED_TRACE(aged ? "burn-in report aged past the bound" : "no report aged");
    FakeClock clock;
    RecordingLogger log;
    FakeAgentWork work;
    FakeRunStore store;
    Executor executor{1};
    AgentGatewayOptions options;
    options.report_drains = 1;
    options.report_batch = 1;  // one report a transaction: the order is the batches' order
    options.starvation_bound = seconds(2);
    AgentGateway gateway{work, store, executor, clock, log, options};
    work.setPriority("r-pre", Priority::kPreJob);
    work.setPriority("r-burn", Priority::kBurnIn);
    std::promise<void> gate;
    auto entered = std::make_shared<std::promise<void>>();
    work.holdBatchOf("h1", gate.get_future().share(), entered);
    std::map<std::string, std::shared_future<Result<ReportAnswer>>> answered;
    auto report = [&](const std::string& run, const std::string& host) {
      auto p = std::make_shared<std::promise<Result<ReportAnswer>>>();
      answered[host] = p->get_future().share();
      const json body{{"lease", 1}, {"exit_code", 0}};
      gateway.report(host, run + ":" + host + ":1", body, body.dump(),
                     [p](Result<ReportAnswer> a) { p->set_value(std::move(a)); });
    };
    report("r-roll", "h1");
    ASSERT_EQ(entered->get_future().wait_for(seconds(10)), std::future_status::ready);
    report("r-burn", "h4");
    if (aged) clock.advance(seconds(3));
    report("r-roll", "h2");
    report("r-pre", "h5");
    ASSERT_EQ(answered["h5"].wait_for(seconds(10)), std::future_status::ready)
        << "the pre-job report waited for the rollout's transaction";
    EXPECT_EQ(answered["h2"].wait_for(milliseconds(20)), std::future_status::timeout);
    gate.set_value();
    for (const auto& h : {"h1", "h2", "h4"}) ASSERT_EQ(answered[h].wait_for(seconds(10)), std::future_status::ready) << h;
    gateway.stop();
    const auto batches = work.reportBatches();
    ASSERT_EQ(batches.size(), 4u);
    EXPECT_EQ(batches[0], std::vector<std::string>{"r-roll:h1:1"});
    EXPECT_EQ(batches[1], std::vector<std::string>{"r-pre:h5:1"});
    EXPECT_EQ(batches[2], std::vector<std::string>{aged ? "r-burn:h4:1" : "r-roll:h2:1"});
    EXPECT_EQ(batches[3], std::vector<std::string>{aged ? "r-roll:h2:1" : "r-burn:h4:1"});
    const std::string m = gateway.metrics();
    EXPECT_NE(m.find("kiln_agent_reports_by_priority_total{class=\"pre_job\"} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("kiln_agent_reports_aged_total " + std::string(aged ? "1" : "0") + "\n"), std::string::npos) << m;
    executor.join();
  }
}

// A report transaction runs on the gateway's own threads: while one waits on the database, the
// request executor (here one thread) still answers polls. On the shared executor a validation
// burst's drains held every request thread, and the next reports waited for one to be parsed.
TEST(AgentGatewayTest, AReportTransactionNeverHoldsARequestThread) {
  GatewayUnderTest t;
  auto& gateway = t.gateway;
  auto& work = t.work;
  const auto handOut = [&](const std::string& host) {
    Answer poll;
    gateway.poll(host, "boot", 30, "", poll.reply());
    protocol::Assignment a;
    a.id = "r-1:" + host + ":1";
    a.run_id = "r-1";
    a.step_id = "check";
    work.give(host, a, host);
    gateway.notify(host);
    auto got = poll.get();
    return got && got->ok() && got->value().has_value();
  };
  ASSERT_TRUE(handOut("h1")) << "the step was not handed out";

  std::promise<void> gate;
  auto entered = std::make_shared<std::promise<void>>();
  work.holdBatchOf("h1", gate.get_future().share(), entered);
  auto answered = std::make_shared<std::promise<Result<ReportAnswer>>>();
  const json body{{"lease", 1}, {"exit_code", 0}};
  gateway.report("h1", "r-1:h1:1", body, body.dump(), [answered](Result<ReportAnswer> a) { answered->set_value(std::move(a)); });
  ASSERT_EQ(entered->get_future().wait_for(seconds(10)), std::future_status::ready) << "h1's batch never started";
  // The poll's claim runs on the request executor's one thread.
  EXPECT_TRUE(handOut("h2")) << "a poll waited for a report transaction";
  gate.set_value();
  auto h1 = answered->get_future();
  ASSERT_EQ(h1.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_TRUE(h1.get().ok());
}

TEST(AgentGatewayTest, AParkedPollIsAnswered204AtItsDeadlineAsTheClockMoves) {
  GatewayUnderTest t;
  Answer a, b;
  t.gateway.poll("h1", "boot-1", 30, "", a.reply());   // deadline 27..30 s (jitter up to 10 %)
  t.gateway.poll("h2", "boot-2", 600, "", b.reply());  // clamped to max_wait_s: 54..60 s
  ASSERT_EQ(t.gateway.parkedCount(), 2u);

  t.clock.advance(seconds(26));
  EXPECT_EQ(t.gateway.expireDue(), 0u);
  EXPECT_FALSE(a.ready());
  t.clock.advance(seconds(4));  // 30 s
  EXPECT_EQ(t.gateway.expireDue(), 1u);
  ASSERT_TRUE(a.ready()) << "answered on the turn's own thread";
  auto got = a.get();
  ASSERT_TRUE(got->ok());
  EXPECT_FALSE(got->value().has_value()) << "a poll that ran out is answered 204";
  EXPECT_EQ(t.gateway.parkedCount(), 1u);
  EXPECT_FALSE(b.ready()) << "600 s is clamped to 60 s, not to 30 s";

  t.clock.advance(seconds(23));  // 53 s
  EXPECT_EQ(t.gateway.expireDue(), 0u);
  t.clock.advance(seconds(7));  // 60 s
  EXPECT_EQ(t.gateway.expireDue(), 1u);
  ASSERT_TRUE(b.ready());
  EXPECT_FALSE(b.get()->value().has_value());
  EXPECT_EQ(t.gateway.parkedCount(), 0u);
  EXPECT_EQ(t.gateway.expireDue(), 0u) << "an answered poll is not answered twice";
  EXPECT_TRUE(t.work.claims().empty());
}

// Issue 32: an out-of-band runner has no host row to hold its liveness: the gateway says when
// each runner last polled, and says nothing of hosts there.
TEST(AgentGatewayTest, TheMetricsSayWhenEachRunnerLastPolled) {
  GatewayUnderTest t;
  Answer a, b;
  EXPECT_EQ(t.gateway.metrics().find("kiln_runner_last_poll_timestamp_seconds{"), std::string::npos) << "no runner polled";
  t.gateway.poll("h1", "boot-1", 0, "", a.reply());
  t.gateway.poll("runner:oob-b01", "boot-r", 0, "", b.reply());
  const std::string m = t.gateway.metrics();
  const double at = std::chrono::duration<double>(t.clock.now().time_since_epoch()).count();
  char expected[96];
  std::snprintf(expected, sizeof expected, "kiln_runner_last_poll_timestamp_seconds{runner=\"oob-b01\"} %.3f\n", at);
  EXPECT_NE(m.find(expected), std::string::npos) << m;
  EXPECT_EQ(m.find("runner=\"h1\""), std::string::npos) << m;
}

TEST(AgentGatewayTest, AReportEndsTheParkedPollOfItsStep) {
  GatewayUnderTest t;
  // An agent running a-7 polls with running=a-7: the gateway reads the assignment (the fake
  // has none: not cancelled, not done) and parks the poll.
  Answer poll;
  t.gateway.poll("h1", "boot-1", 30, "a-7", poll.reply());
  settle(t.executor);
  ASSERT_EQ(t.gateway.parkedCount(), 1u);
  EXPECT_FALSE(poll.ready());

  auto answered = std::make_shared<std::promise<Result<ReportAnswer>>>();
  const json body{{"lease", 1}, {"exit_code", 0}};
  t.gateway.report("h1", "a-7", body, body.dump(),
                   [answered](Result<ReportAnswer> a) { answered->set_value(std::move(a)); });
  auto report = answered->get_future();
  ASSERT_EQ(report.wait_for(seconds(10)), std::future_status::ready);
  auto answer = report.get();
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->outcome, ReportOutcome::kAccepted);
  auto got = poll.get();
  ASSERT_TRUE(got.has_value()) << "the poll of the reported step was left parked";
  EXPECT_FALSE(got->value().has_value()) << "answered 204: the agent polls again without the step";
  EXPECT_EQ(t.gateway.parkedCount(), 0u);
  ASSERT_EQ(t.work.reports().size(), 1u);
  EXPECT_EQ(t.work.reports()[0].assignment_id, "a-7");
  EXPECT_EQ(t.work.reports()[0].text, body.dump());
}

TEST(AgentGatewayTest, HeartbeatsGoToTheStoreInOneBatchAtTheFlushInterval) {
  GatewayUnderTest t;
  const TimePoint polled_at = t.clock.now();
  std::vector<Answer> polls(4);
  t.gateway.poll("h1", "boot-1", 30, "", polls[0].reply());
  t.gateway.poll("h2", "boot-2", 30, "", polls[1].reply());
  t.gateway.poll("h3", "boot-3", 30, "", polls[2].reply());
  t.gateway.poll("h1", "boot-1b", 30, "", polls[3].reply());  // h1 again: its newest beat counts

  EXPECT_EQ(t.gateway.writerTurn(), milliseconds(5000)) << "nothing due yet: wait the whole interval";
  EXPECT_TRUE(t.store.heartbeatBatches().empty());
  t.clock.advance(milliseconds(4999));
  EXPECT_EQ(t.gateway.writerTurn(), milliseconds(1));
  EXPECT_TRUE(t.store.heartbeatBatches().empty()) << "no write before the flush interval";
  EXPECT_EQ(t.store.hosts_with_open_work_calls, 0);

  t.clock.advance(milliseconds(1));
  EXPECT_EQ(t.gateway.writerTurn(), milliseconds(5000));
  auto batches = t.store.heartbeatBatches();
  ASSERT_EQ(batches.size(), 1u) << "one write for all the hosts";
  std::map<std::string, std::string> boot;
  for (const auto& b : batches[0]) {
    boot[b.host] = b.boot_id;
    EXPECT_EQ(b.at, polled_at) << b.host << ": the poll's wall time";
  }
  EXPECT_EQ(boot, (std::map<std::string, std::string>{{"h1", "boot-1b"}, {"h2", "boot-2"}, {"h3", "boot-3"}}));
  EXPECT_EQ(t.store.hosts_with_open_work_calls, 1) << "the refresh was due too";

  t.clock.advance(seconds(5));
  t.gateway.writerTurn();
  EXPECT_EQ(t.store.heartbeatBatches().size(), 1u) << "no poll since: nothing to write";
  EXPECT_EQ(t.store.hosts_with_open_work_calls, 2);
  EXPECT_EQ(t.log.lines().size(), 0u);
}

TEST(AgentGatewayTest, AFailedHeartbeatWriteIsLoggedOnceAMinuteAndKeptForTheNextFlush) {
  GatewayUnderTest t;
  t.store.fail_heartbeats = unavailable("database is away");
  Answer a, b, c;
  t.gateway.poll("h1", "boot-1", 30, "", a.reply());
  t.clock.advance(seconds(5));
  t.gateway.writerTurn();
  ASSERT_EQ(t.store.heartbeatBatches().size(), 1u);
  EXPECT_EQ(t.log.count(LogLevel::kError, "heartbeats"), 1);
  EXPECT_EQ(t.log.count(LogLevel::kError, "database is away"), 1) << "the line says why";

  t.gateway.poll("h2", "boot-2", 30, "", b.reply());
  t.clock.advance(seconds(5));
  t.gateway.writerTurn();
  ASSERT_EQ(t.store.heartbeatBatches().size(), 2u) << "the next flush tries again";
  std::set<std::string> again;
  const auto batches = t.store.heartbeatBatches();
  for (const auto& beat : batches[1]) again.insert(beat.host);
  EXPECT_EQ(again, (std::set<std::string>{"h1", "h2"})) << "h1's beat was kept for it";
  EXPECT_EQ(t.log.count(LogLevel::kError, "heartbeats"), 1) << "the same failure within a minute: said once";

  t.gateway.poll("h1", "boot-1", 30, "", c.reply());
  t.clock.advance(seconds(60));
  t.gateway.writerTurn();
  EXPECT_EQ(t.store.heartbeatBatches().size(), 3u);
  EXPECT_EQ(t.log.count(LogLevel::kError, "heartbeats"), 2) << "said again a minute later";
}

}  // namespace
}  // namespace kiln::runs
