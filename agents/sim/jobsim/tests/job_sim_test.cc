// The pure part of kiln-jobsim: flags, the hold/dedup book on a FakeClock, the hook's answers,
// and starting and ending jobs against an in-memory fleet.

#include <gtest/gtest.h>

#include <map>

#include "agents/sim/jobsim/job_sim.h"

namespace kiln::jobsim {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// An in-memory kilnd: hosts by id with their pod; allocate/release follow the host lifecycle.
class FakeFleet final : public FleetApi {
 public:
  void add(const std::string& pod, const std::string& id, const std::string& state, bool spare = false) {
    hosts_[id] = {pod, HostView{id, state, spare}};
  }
  Result<std::vector<std::string>> listPods() override {
    std::vector<std::string> out;
    for (const auto& [_, h] : hosts_)
      if (out.empty() || out.back() != h.first) out.push_back(h.first);
    return out;
  }
  Result<std::vector<HostView>> podHosts(const std::string& pod) override {
    if (down) return unavailable("connection refused");
    std::vector<HostView> out;
    for (const auto& [_, h] : hosts_)
      if (h.first == pod) out.push_back(h.second);
    if (out.empty()) return notFound("no pod " + pod);
    return out;
  }
  Result<HostView> host(const std::string& id) override {
    if (down) return unavailable("connection refused");
    auto it = hosts_.find(id);
    if (it == hosts_.end()) return notFound("no host " + id);
    return it->second.second;
  }
  Status hostAction(const std::string& id, const std::string& action, const std::string& reason) override {
    if (down) return unavailable("connection refused");
    actions.push_back(action + " " + id + ": " + reason);
    auto& h = hosts_.at(id).second;
    if (action == "allocate" && h.state == "available") h.state = "allocated";
    else if (action == "release" && h.state == "allocated") h.state = "available";
    else return conflict("cannot " + action + " a host that is " + h.state);
    return Ok{};
  }
  std::string state(const std::string& id) const { return hosts_.at(id).second.state; }
  void setState(const std::string& id, const std::string& s) { hosts_.at(id).second.state = s; }

  bool down = false;
  std::vector<std::string> actions;

 private:
  std::map<std::string, std::pair<std::string, HostView>> hosts_;
};

struct Lines {
  std::vector<std::string> lines;
  LogFn fn() {
    return [this](const std::string& l) { lines.push_back(l); };
  }
};

ReleaseRequest request(const std::string& pod, std::vector<std::string> hosts, const std::string& rollout = "ro-1") {
  return {rollout, pod, std::move(hosts)};
}

// ---- flags

TEST(JobSimCliTest, ParsesEveryFlag) {
  auto o = parseCli({"--url", "http://127.0.0.1:8080", "--token-file", "t", "--listen", "127.0.0.1:9100", "--hold",
                     "2.5", "--allocate", "p1,p2", "--seed", "7", "--log-level", "debug"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->url, "http://127.0.0.1:8080");
  EXPECT_EQ(o->listen_host, "127.0.0.1");
  EXPECT_EQ(o->listen_port, 9100);
  EXPECT_EQ(o->hold, 2500ms);
  EXPECT_EQ(o->allocate_pods, (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(o->seed, 7u);
  EXPECT_EQ(o->log_level, "debug");
}

TEST(JobSimCliTest, HoldDefaultsToTwentySeconds) {
  auto o = parseCli({"--url", "u", "--token-file", "t", "--listen", "127.0.0.1:1"});
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->hold, 20s);
  EXPECT_TRUE(o->allocate_pods.empty());
  EXPECT_FALSE(o->allocate_fraction);
}

TEST(JobSimCliTest, RefusesBadOrMissingFlagsNamingThem) {
  auto bad = [](std::vector<std::string> extra, const std::string& needle) {
    std::vector<std::string> args = {"--url", "u", "--token-file", "t", "--listen", "127.0.0.1:1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto o = parseCli(args);
    if (o.ok()) return ::testing::AssertionFailure() << "accepted";
    if (o.error().message.find(needle) == std::string::npos)
      return ::testing::AssertionFailure() << o.error().message;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(bad({"--hold", "-1"}, "--hold"));
  EXPECT_TRUE(bad({"--hold", "abc"}, "--hold"));
  EXPECT_TRUE(bad({"--allocate-fraction", "1.5"}, "--allocate-fraction"));
  EXPECT_TRUE(bad({"--allocate", "p1", "--allocate-fraction", "0.5"}, "exclude"));
  EXPECT_TRUE(bad({"--listen", "nohost"}, "--listen"));
  EXPECT_TRUE(bad({"--listen", "127.0.0.1:70000"}, "--listen"));
  EXPECT_TRUE(bad({"--frobnicate", "1"}, "--frobnicate"));
  EXPECT_TRUE(bad({"--seed"}, "--seed"));
  EXPECT_FALSE(parseCli({"--token-file", "t", "--listen", "127.0.0.1:1"}).ok());
  EXPECT_FALSE(parseCli({"--url", "u", "--listen", "127.0.0.1:1"}).ok());
  EXPECT_FALSE(parseCli({"--url", "u", "--token-file", "t"}).ok());
  EXPECT_EQ(parseCli({"--help"}).error().message, "help");
}

TEST(JobSimCliTest, AFractionPicksTheSamePodsForTheSameSeed) {
  std::vector<std::string> pods;
  for (int i = 0; i < 20; ++i) pods.push_back("p" + std::to_string(100 + i));
  const auto a = pickPods(pods, 0.25, 42);
  EXPECT_EQ(a.size(), 5u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  std::vector<std::string> reversed(pods.rbegin(), pods.rend());
  EXPECT_EQ(pickPods(reversed, 0.25, 42), a) << "the order kilnd lists pods in does not matter";
  bool differs = false;
  for (std::uint64_t seed = 1; seed < 10 && !differs; ++seed) differs = pickPods(pods, 0.25, seed) != a;
  EXPECT_TRUE(differs) << "the seed picks the pods";
  EXPECT_EQ(pickPods(pods, 0.001, 1).size(), 1u) << "a fraction above 0 runs at least one job";
  EXPECT_TRUE(pickPods(pods, 0, 1).empty());
  EXPECT_EQ(pickPods(pods, 1, 1), pods);
  EXPECT_TRUE(pickPods({}, 0.5, 1).empty());
}

// ---- the hold and the dedup

TEST(ReleaseBookTest, AReleaseIsDueOnlyAfterTheHold) {
  core::FakeClock clock;
  ReleaseBook book(clock, 20s);
  const Scheduled s = book.schedule(request("p1", {"h2", "h1"}));
  EXPECT_FALSE(s.duplicate);
  EXPECT_EQ(s.release_in, 20s);
  EXPECT_TRUE(book.takeDue().empty());
  clock.advance(19999ms);
  EXPECT_TRUE(book.takeDue().empty());
  clock.advance(1ms);
  auto due = book.takeDue();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].pod, "p1");
  EXPECT_EQ(due[0].rollout, "ro-1");
  EXPECT_EQ(due[0].hosts, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_TRUE(book.takeDue().empty()) << "taken once";
  EXPECT_TRUE(book.pending().empty());
}

TEST(ReleaseBookTest, ARepeatedRequestForAPodSchedulesNoSecondRelease) {
  core::FakeClock clock;
  ReleaseBook book(clock, 20s);
  book.schedule(request("p1", {"h1", "h2"}));
  clock.advance(15s);
  const Scheduled again = book.schedule(request("p1", {"h2", "h3"}, "ro-2"));
  EXPECT_TRUE(again.duplicate);
  EXPECT_EQ(again.release_in, 5s) << "the first request's due time stays";
  ASSERT_EQ(book.pending().size(), 1u);
  clock.advance(5s);
  auto due = book.takeDue();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].hosts, (std::vector<std::string>{"h1", "h2", "h3"})) << "hosts asked again join the release";
  EXPECT_EQ(due[0].rollout, "ro-1");
  clock.advance(60s);
  EXPECT_TRUE(book.takeDue().empty());
}

TEST(ReleaseBookTest, AfterAReleaseANewRequestStartsANewHold) {
  core::FakeClock clock;
  ReleaseBook book(clock, 10s);
  book.schedule(request("p1", {"h1"}));
  clock.advance(10s);
  ASSERT_EQ(book.takeDue().size(), 1u);
  const Scheduled s = book.schedule(request("p1", {"h1"}));
  EXPECT_FALSE(s.duplicate);
  EXPECT_EQ(s.release_in, 10s);
}

TEST(ReleaseBookTest, PodsAreHeldIndependentlyAndComeDueInOrder) {
  core::FakeClock clock;
  ReleaseBook book(clock, 10s);
  book.schedule(request("p2", {"b1"}));
  clock.advance(3s);
  book.schedule(request("p1", {"a1"}));
  EXPECT_EQ(book.pending().front().pod, "p2");
  clock.advance(7s);
  auto due = book.takeDue();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].pod, "p2");
  clock.advance(3s);
  due = book.takeDue();
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].pod, "p1");
}

TEST(ReleaseBookTest, AZeroHoldIsDueAtOnce) {
  core::FakeClock clock;
  ReleaseBook book(clock, 0s);
  EXPECT_EQ(book.schedule(request("p1", {"h1"})).release_in, 0ms);
  EXPECT_EQ(book.takeDue().size(), 1u);
}

// ---- the hook

TEST(AnswerHookTest, AcceptsKilndsRequestAt202WithTheHold) {
  core::FakeClock clock;
  ReleaseBook book(clock, 20s);
  Lines log;
  const json body = {{"action", "release"}, {"rollout", "ro-3"}, {"pod", "p1"}, {"hosts", {"h1", "h2"}}};
  http::Response r = answerHook(book, "POST", body.dump(), log.fn());
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.content_type, "application/json");
  const json doc = json::parse(r.body);
  EXPECT_EQ(doc["accepted"], true);
  EXPECT_EQ(doc["release_in_s"], 20.0);
  EXPECT_EQ(doc["duplicate"], false);
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find("pod p1: release of 2 hosts asked (rollout ro-3)"), std::string::npos) << log.lines[0];

  clock.advance(8s);
  r = answerHook(book, "POST", body.dump(), log.fn());
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(json::parse(r.body)["duplicate"], true);
  EXPECT_EQ(json::parse(r.body)["release_in_s"], 12.0);
  EXPECT_EQ(book.pending().size(), 1u);
  EXPECT_NE(log.lines.back().find("nothing new scheduled"), std::string::npos) << log.lines.back();
}

TEST(AnswerHookTest, BadBodiesGetAnErrorBodyAndScheduleNothing) {
  core::FakeClock clock;
  ReleaseBook book(clock, 20s);
  Lines log;
  auto check = [&](const std::string& method, const std::string& body, int status, const std::string& code) {
    http::Response r = answerHook(book, method, body, log.fn());
    EXPECT_EQ(r.status, status) << body;
    const json doc = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r.body;
    EXPECT_EQ(doc["error"]["code"], code) << r.body;
    EXPECT_TRUE(doc["error"]["message"].is_string());
    EXPECT_TRUE(doc["error"]["details"].is_object());
  };
  check("POST", "{not json", 400, "invalid_argument");
  check("POST", "", 400, "invalid_argument");
  check("POST", "[1]", 422, "invalid_content");
  check("POST", R"({"action":"drain","pod":"p1","hosts":["h1"]})", 422, "invalid_content");
  check("POST", R"({"action":"release","hosts":["h1"]})", 422, "invalid_content");
  check("POST", R"({"action":"release","pod":"p1","hosts":[]})", 422, "invalid_content");
  check("POST", R"({"action":"release","pod":"p1","hosts":[1]})", 422, "invalid_content");
  check("GET", "", 405, "method_not_allowed");
  EXPECT_TRUE(book.pending().empty());
  EXPECT_EQ(log.lines.size(), 8u) << "one line per refused request";
}

// ---- jobs on a fleet

TEST(StartJobsTest, AllocatesTheAvailableHostsButNotTheSpares) {
  FakeFleet fleet;
  fleet.add("p1", "p1-h01", "available");
  fleet.add("p1", "p1-h02", "available");
  fleet.add("p1", "p1-h03", "draining");
  fleet.add("p1", "p1-h17", "available", /*spare=*/true);
  fleet.add("p2", "p2-h01", "available");
  Lines log;
  auto s = startJobs(fleet, {"p1", "nope"}, log.fn());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(*s, (AllocationSummary{.allocated = 2, .spares = 1, .not_available = 1, .failed = 1}));
  EXPECT_EQ(fleet.state("p1-h01"), "allocated");
  EXPECT_EQ(fleet.state("p1-h02"), "allocated");
  EXPECT_EQ(fleet.state("p1-h03"), "draining");
  EXPECT_EQ(fleet.state("p1-h17"), "available") << "spares are not given to jobs";
  EXPECT_EQ(fleet.state("p2-h01"), "available") << "only the listed pods";
  ASSERT_EQ(fleet.actions.size(), 2u);
  EXPECT_EQ(fleet.actions[0], "allocate p1-h01: job jobsim-p1");
  ASSERT_EQ(log.lines.size(), 2u) << "one line per pod";
  EXPECT_NE(log.lines[0].find("started on 2 hosts"), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[1].find("pod nope: no job started"), std::string::npos) << log.lines[1];
}

TEST(StartJobsTest, AnUnreachableKilndIsAnError) {
  FakeFleet fleet;
  fleet.add("p1", "p1-h01", "available");
  fleet.down = true;
  Lines log;
  auto s = startJobs(fleet, {"p1"}, log.fn());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
}

TEST(ReleaseHostsTest, ReleasesOnlyTheHostsStillAllocated) {
  FakeFleet fleet;
  fleet.add("p1", "h1", "allocated");
  fleet.add("p1", "h2", "allocated");
  fleet.add("p1", "h3", "draining");
  Lines log;
  PendingRelease r{"p1", "ro-9", {"h1", "h2", "h3", "ghost"}, {}};
  EXPECT_EQ(releaseHosts(fleet, r, log.fn()), 2);
  EXPECT_EQ(fleet.state("h1"), "available");
  EXPECT_EQ(fleet.state("h2"), "available");
  EXPECT_EQ(fleet.state("h3"), "draining");
  ASSERT_EQ(fleet.actions.size(), 2u);
  EXPECT_EQ(fleet.actions[0], "release h1: job jobsim-p1 checkpointed and left for rollout ro-9");
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_NE(log.lines[0].find("host ghost: not released"), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[1].find("released 2 of 4 hosts; no longer allocated: h3 (draining)"), std::string::npos)
      << log.lines[1];
}

TEST(ParseHostTest, ReadsKilndsHostAndPodDocuments) {
  const json pod = {{"id", "p1"},
                    {"hosts",
                     {{{"id", "h1"}, {"state", "available"}, {"spare", false}, {"tray", 1}},
                      {{"id", "h2"}, {"state", "allocated"}, {"spare", true}}}}};
  auto hosts = parsePodHosts(pod);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[1].id, "h2");
  EXPECT_EQ((*hosts)[1].state, "allocated");
  EXPECT_TRUE((*hosts)[1].spare);
  EXPECT_FALSE((*hosts)[0].spare);
  EXPECT_FALSE(parsePodHosts(json{{"id", "p1"}}).ok());
  EXPECT_FALSE(parseHost(json{{"id", "h1"}}).ok());
}

}  // namespace
}  // namespace kiln::jobsim
