// kilnd's job-scheduler hook adapter with a real executor and a scheduler call that blocks.

#include "orchestrator/kilnd/scheduler_hook.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/testing/fake_rollout_store.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/runs/testing/fake_run_store.h"

namespace kiln::kilnd {
namespace {

using namespace std::chrono_literals;
using core::testing::FakeFleet;
using rollouts::testing::FakeRolloutStore;
using runs::testing::FakeRunStore;

TEST(SchedulerHookTest, ABlockingSchedulerCallDoesNotHoldTheControllerPass) {
  FakeFleet fleet;
  fleet.addPod("b1-p1", "b1");
  for (int i = 1; i <= 9; ++i) fleet.setState("b1-p1-h0" + std::to_string(i), core::HostState::kAllocated);
  FakeRolloutStore rollouts(fleet);
  rollouts::Bundle bundle;
  bundle.id = "b-1";
  bundle.platforms = {"catalina"};
  rollouts::Policy policy;
  policy.canary_pods = 0;
  policy.waves = {{100, true}};
  policy.max_fraction_down_per_building = 1.0;  // capacity floor: 100 % may be down
  rollouts.addRollout("ro-1", bundle, {"b1-p1"}, policy);
  FakeRunStore run_store;
  core::FakeClock clock;
  runs::RunsRoom room(fleet, run_store, clock, {}, [](const std::string&) {});
  runs::RunService& runs = room.runs;

  std::promise<void> unblock;
  std::shared_future<void> gate = unblock.get_future().share();
  std::promise<scheduler::ReleaseRequest> called;
  Executor executor(1);
  rollouts::ControllerOptions o;
  auto blocking = [&, gate](const scheduler::ReleaseRequest& r) {
    called.set_value(r);
    gate.wait_for(30s);  // a scheduler slower than any controller pass
    return true;
  };
  scheduler::HookDriver hook(executor, blocking);
  o.scheduler = &hook;
  rollouts::RolloutController service(fleet, rollouts, runs, clock, o);

  const auto start = std::chrono::steady_clock::now();
  service.tick();
  service.tick();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // not the scheduler's 30 s
  auto request = called.get_future();
  ASSERT_EQ(request.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(request.get().hosts.size(), 9u);
  EXPECT_TRUE(rollouts.eventsOf("release").empty());

  unblock.set_value();
  // The answer comes back on the executor's thread; a later pass learns it.
  for (int i = 0; i < 1000 && rollouts.eventsOf("release").empty(); ++i) {
    std::this_thread::sleep_for(10ms);
    service.tick();
  }
  EXPECT_EQ(rollouts.eventsOf("release"), (std::vector<std::string>{"b1-p1: asked the job scheduler to release 9 allocated hosts"}));
}

TEST(SchedulerHookTest, ACallThatThrowsCountsAsNotTold) {
  Executor executor(1);
  scheduler::HookDriver hook(executor, [](const scheduler::ReleaseRequest&) -> bool { throw std::runtime_error("boom"); });
  std::promise<bool> told;
  hook.requestDrain({"ro-1", "p", {"h"}, ""}, [&](bool t) { told.set_value(t); });
  EXPECT_FALSE(hook.heldBack(core::HostSummary{}, "kiln: ro-1").has_value());  // the hook has no gate
  EXPECT_FALSE(hook.status().has_value());                                     // nor a node view
  auto f = told.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f.get());
}

// A scheduler-hook command written as a script into a fresh directory; it records its
// arguments (one per line), its stdin and its environment there.
class HookScript {
 public:
  explicit HookScript(const std::string& body) {
    char tmpl[] = "/tmp/kiln-hook-test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/release-pod";
    std::ofstream(path_) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << dir_ << "/args\ncat > " << dir_ << "/stdin\nenv > "
                         << dir_ << "/env\n"
                         << body << "\n";
    ::chmod(path_.c_str(), 0755);
  }
  ~HookScript() { std::filesystem::remove_all(dir_); }
  const std::string& path() const { return path_; }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string dir_, path_;
};

TEST(SchedulerHookCommandTest, RunsThePathWithTheRequestAsArgumentsAndStdinWithoutAShell) {
  HookScript script("exit 0");
  ::setenv("KILN_TEST_SECRET", "do-not-pass", 1);
  auto log = std::make_shared<RecordingLogger>();
  auto call = releaseCall(script.path(), log);  // a path: a command
  // A host name with shell syntax in it stays one argument and runs nothing.
  const std::string odd = "b1-p1-h02; touch " + script.path() + ".pwned";
  EXPECT_TRUE(call({"ro-7", "b1-p1", {"b1-p1-h01", odd}}));
  EXPECT_TRUE(log->lines().empty());
  EXPECT_EQ(script.read("args"), "release\nro-7\nb1-p1\nb1-p1-h01\n" + odd + "\n");
  EXPECT_FALSE(std::filesystem::exists(script.path() + ".pwned"));
  auto body = nlohmann::json::parse(script.read("stdin"));
  EXPECT_EQ(body, (nlohmann::json{{"action", "release"}, {"rollout", "ro-7"}, {"pod", "b1-p1"}, {"hosts", {"b1-p1-h01", odd}}}));
  // kilnd's own environment (tokens, database URL) does not reach the command.
  EXPECT_EQ(script.read("env").find("KILN_TEST_SECRET"), std::string::npos) << script.read("env");
  EXPECT_NE(script.read("env").find("PATH="), std::string::npos);
  ::unsetenv("KILN_TEST_SECRET");
}

TEST(SchedulerHookCommandTest, AFailingOrHangingCommandIsNotToldAndSaysWhy) {
  HookScript failing("echo 'sinfo: slurmctld not responding' >&2\nexit 3");
  auto log = std::make_shared<RecordingLogger>();
  EXPECT_FALSE(commandReleaseCall(failing.path(), 5s, log)({"ro-1", "b1-p1", {"h1"}}));
  ASSERT_EQ(log->lines().size(), 1u);
  EXPECT_EQ(log->lines()[0].first, LogLevel::kWarn);
  EXPECT_EQ(log->lines()[0].second, "scheduler hook " + failing.path() + " for pod b1-p1 exited 3: sinfo: slurmctld not responding");

  HookScript hanging("sleep 30");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(commandReleaseCall(hanging.path(), 300ms, log)({"ro-1", "b1-p2", {"h1"}}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  ASSERT_EQ(log->lines().size(), 2u);
  const std::string second = log->lines()[1].second;
  EXPECT_NE(second.find("for pod b1-p2 timed out after 300 ms"), std::string::npos) << second;
}

}  // namespace
}  // namespace kiln::kilnd
