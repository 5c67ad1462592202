// The controller loop under simulated time: who runs the passes, when it turns again at once,
// what a failing pass leaves behind, and that wake() and stop() reach a waiting loop.
#include "orchestrator/kilnd/controller_loop.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace kiln::kilnd {
namespace {

using std::chrono::milliseconds;

class ScriptedLeadership final : public Leadership {
 public:
  bool tryHold() override {
    ++tries;
    return leader.load();
  }
  std::atomic<bool> leader{false};
  std::atomic<int> tries{0};
};

struct Fixture {
  ScriptedLeadership leadership;
  FakeClock clock;
  RecordingLogger log;
  std::vector<std::string> ran;  // pass names in the order they ran
  std::vector<bool> leadership_changes;
  std::vector<bool> rounds;  // ok of each round
  int changes = 0;           // what the "runs" pass reports
  bool rollouts_throw = false;

  std::unique_ptr<ControllerLoop> make(ControllerLoopOptions options = {}) {
    options.on_leadership = [this](bool l) { leadership_changes.push_back(l); };
    options.on_round = [this](bool ok, double, double) { rounds.push_back(ok); };
    std::vector<ControllerPass> passes;
    passes.push_back({"runs", [this] {
                        ran.push_back("runs");
                        return changes;
                      }});
    passes.push_back({"rollouts", [this] {
                        ran.push_back("rollouts");
                        if (rollouts_throw) throw std::runtime_error("rollout_pods: connection lost");
                        return 0;
                      }});
    return std::make_unique<ControllerLoop>(leadership, std::move(passes), clock, log, options);
  }
};

TEST(ControllerLoopTest, AFollowerRunsNoPassAndWaitsTheFollowerInterval) {
  Fixture f;
  auto loop = f.make();
  EXPECT_EQ(loop->turn(), milliseconds(1000));
  EXPECT_EQ(loop->turn(), milliseconds(1000));
  EXPECT_TRUE(f.ran.empty());
  EXPECT_TRUE(f.rounds.empty());
  EXPECT_TRUE(f.leadership_changes.empty());
  EXPECT_FALSE(loop->leading());
  EXPECT_EQ(f.leadership.tries, 2);
}

TEST(ControllerLoopTest, TheLeaderRunsEveryPassInOrderAndSaysWhenLeadershipChanges) {
  Fixture f;
  auto loop = f.make();
  f.leadership.leader = true;
  EXPECT_EQ(loop->turn(), milliseconds(200));
  EXPECT_TRUE(loop->leading());
  EXPECT_EQ(f.ran, (std::vector<std::string>{"runs", "rollouts"}));
  EXPECT_EQ(f.rounds, std::vector<bool>{true});
  EXPECT_EQ(f.log.count(LogLevel::kInfo, "now runs the controllers"), 1);

  loop->turn();  // still the leader: no second announcement
  EXPECT_EQ(f.leadership_changes, std::vector<bool>{true});

  f.leadership.leader = false;
  EXPECT_EQ(loop->turn(), milliseconds(1000));
  EXPECT_FALSE(loop->leading());
  EXPECT_EQ(f.leadership_changes, (std::vector<bool>{true, false}));
  EXPECT_EQ(f.log.count(LogLevel::kInfo, "lost the controller lock"), 1);
  EXPECT_EQ(f.ran.size(), 4u);  // the follower's turn ran nothing
}

TEST(ControllerLoopTest, RoundsThatMoveSomethingRunAgainAtOnceUpToTheStreakLimit) {
  Fixture f;
  auto loop = f.make();
  f.leadership.leader = true;
  f.changes = 3;
  for (int i = 1; i < 8; ++i) EXPECT_EQ(loop->turn(), milliseconds(0)) << "round " << i;
  EXPECT_EQ(loop->turn(), milliseconds(200)) << "the 8th round in a row waits";
  EXPECT_EQ(loop->turn(), milliseconds(0)) << "and the streak starts over";
  f.changes = 0;
  EXPECT_EQ(loop->turn(), milliseconds(200));
  EXPECT_EQ(loop->turn(), milliseconds(200));
}

TEST(ControllerLoopTest, AFailingPassIsLoggedByNameAndTheOthersStillRun) {
  Fixture f;
  auto loop = f.make();
  f.leadership.leader = true;
  f.rollouts_throw = true;
  loop->turn();
  f.ran.clear();
  loop->turn();
  EXPECT_EQ(f.ran, (std::vector<std::string>{"runs", "rollouts"})) << "the next round runs every pass again";
  EXPECT_EQ(f.rounds, (std::vector<bool>{false, false}));
  EXPECT_EQ(f.log.count(LogLevel::kError, "controller pass 'rollouts' failed: rollout_pods: connection lost"), 2);
}

TEST(ControllerLoopTest, ALockThatThrowsCountsAsNotLeading) {
  class Throwing final : public Leadership {
    bool tryHold() override { throw std::runtime_error("no connection"); }
  } throwing;
  FakeClock clock;
  RecordingLogger log;
  int ran = 0;
  ControllerLoop loop(throwing, {{"runs", [&] { return ++ran; }}}, clock, log);
  EXPECT_EQ(loop.turn(), milliseconds(1000));
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(log.count(LogLevel::kError, "controller lock: no connection"), 1);
}

TEST(ControllerLoopTest, RunWaitsOnTheClockBetweenTurnsAndEndsOnStop) {
  Fixture f;
  f.leadership.leader = true;
  std::unique_ptr<ControllerLoop> loop;
  int rounds = 0;
  ControllerLoopOptions options;
  loop = std::make_unique<ControllerLoop>(f.leadership,
                                          std::vector<ControllerPass>{{"runs",
                                                                       [&] {
                                                                         if (++rounds == 5) loop->stop();
                                                                         return rounds <= 2 ? 1 : 0;
                                                                       }}},
                                          f.clock, f.log, options);
  const auto t0 = f.clock.monotonic();
  loop->run();  // on this thread: the fake clock lets the waits pass at once
  EXPECT_EQ(rounds, 5);
  // Rounds 1 and 2 changed something: no wait after them; 3 and 4 waited 200 ms each; the
  // loop saw the stop before waiting after round 5.
  EXPECT_EQ(f.clock.waits(), (std::vector<milliseconds>{milliseconds(200), milliseconds(200)}));
  EXPECT_EQ(f.clock.monotonic() - t0, milliseconds(400));
}

TEST(ControllerLoopTest, WakeEndsAWaitEarlyOnTheSystemClock) {
  ScriptedLeadership leadership;
  SystemClock clock;
  NullLogger log;
  ControllerLoopOptions options;
  options.follower_interval = std::chrono::hours(1);
  ControllerLoop loop(leadership, {}, clock, log, options);
  std::thread t([&] { loop.run(); });
  auto waitForTries = [&](int n) {
    for (int i = 0; i < 1000 && leadership.tries < n; ++i) std::this_thread::sleep_for(milliseconds(10));
    return leadership.tries.load();
  };
  EXPECT_EQ(waitForTries(1), 1);
  loop.wake();
  EXPECT_EQ(waitForTries(2), 2) << "woken, the loop turned again well before its hour";
  loop.stop();
  t.join();  // stop() ended the hour-long wait as well
  EXPECT_EQ(leadership.tries, 2);
}

}  // namespace
}  // namespace kiln::kilnd
