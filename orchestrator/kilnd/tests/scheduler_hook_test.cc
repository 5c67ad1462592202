// kilnd's job-scheduler hook adapter with a real executor and a scheduler call that blocks.

#include "orchestrator/kilnd/scheduler_hook.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "orchestrator/rollouts/tests/fakes.h"

namespace kiln::kilnd {
namespace {

using namespace std::chrono_literals;
using rollouts::testing::FakeFleet;
using rollouts::testing::FakeRolloutStore;
using rollouts::testing::FakeRunStore;

TEST(SchedulerHookTest, ABlockingSchedulerCallDoesNotHoldTheControllerPass) {
  FakeFleet fleet;
  fleet.addPod("b1-p1", "b1");
  for (int i = 1; i <= 9; ++i) fleet.setState("b1-p1-h0" + std::to_string(i), "allocated");
  FakeRolloutStore rollouts(fleet);
  rollouts::Bundle bundle;
  bundle.id = "b-1";
  bundle.platforms = {"catalina"};
  rollouts.addRollout("ro-1", bundle, {"b1-p1"},
                      {{"canary_pods", 0}, {"waves", {"100%"}}, {"capacity_floor", {{"max_percent_down", 100}}}});
  FakeRunStore run_store;
  core::FakeClock clock;
  runs::RunService runs(fleet, run_store, clock, {}, [](const std::string&) {});

  std::promise<void> unblock;
  std::shared_future<void> gate = unblock.get_future().share();
  std::promise<rollouts::ReleaseRequest> called;
  auto done_called = std::make_shared<std::promise<void>>();
  Executor executor(1);
  rollouts::RolloutServiceOptions o;
  auto blocking = [&, gate](const rollouts::ReleaseRequest& r) {
    called.set_value(r);
    gate.wait_for(30s);  // a scheduler slower than any controller pass
    return true;
  };
  auto hook = asyncReleaseHook(executor, blocking);
  o.release_hook = [&](const rollouts::ReleaseRequest& r, std::function<void(bool)> done) {
    hook(r, [done = std::move(done), done_called](bool told) {
      done(told);
      done_called->set_value();
    });
  };
  rollouts::RolloutService service(fleet, rollouts, runs, clock, o);

  const auto start = std::chrono::steady_clock::now();
  service.tick();
  service.tick();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // not the scheduler's 30 s
  auto request = called.get_future();
  ASSERT_EQ(request.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(request.get().hosts.size(), 9u);
  EXPECT_TRUE(rollouts.eventsOf("release").empty());

  unblock.set_value();
  ASSERT_EQ(done_called->get_future().wait_for(10s), std::future_status::ready);
  service.tick();
  EXPECT_EQ(rollouts.eventsOf("release"), (std::vector<std::string>{"b1-p1: asked the job scheduler to release 9 allocated hosts"}));
}

TEST(SchedulerHookTest, ACallThatThrowsCountsAsNotTold) {
  Executor executor(1);
  auto hook = asyncReleaseHook(executor, [](const rollouts::ReleaseRequest&) -> bool { throw std::runtime_error("boom"); });
  std::promise<bool> told;
  hook({"ro-1", "p", {"h"}}, [&](bool t) { told.set_value(t); });
  auto f = told.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f.get());
}

}  // namespace
}  // namespace kiln::kilnd
