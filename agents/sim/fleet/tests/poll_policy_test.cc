#include "agents/sim/fleet/poll_policy.h"

#include <gtest/gtest.h>

namespace kiln::vfleet {
namespace {

using std::chrono::milliseconds;

PollPolicySettings settings() {
  PollPolicySettings s;
  s.poll_wait_s = 25;
  s.long_poll_slots = 100;
  s.idle_share = 0.75;
  return s;
}

TEST(PollPolicyTest, LongPollsWhileSlotsAreFree) {
  PollPolicy p(settings());
  std::mt19937_64 rng(1);
  auto d = p.decide(false, 10, rng);
  EXPECT_TRUE(d.long_poll);
  EXPECT_EQ(d.wait_s, 25);
  EXPECT_EQ(d.then, milliseconds(0));
}

TEST(PollPolicyTest, IdleHostsLeaveAShareOfSlotsToHotOnes) {
  PollPolicy p(settings());
  std::mt19937_64 rng(1);
  auto idle = p.decide(false, 75, rng);
  EXPECT_FALSE(idle.long_poll);
  EXPECT_EQ(idle.wait_s, 0);
  EXPECT_GE(idle.then, milliseconds(24000));  // 30 s +-20%
  EXPECT_LE(idle.then, milliseconds(36000));
  auto hot = p.decide(true, 75, rng);
  EXPECT_TRUE(hot.long_poll);
  auto full = p.decide(true, 100, rng);
  EXPECT_FALSE(full.long_poll);
  EXPECT_LE(full.then, milliseconds(2400));
}

TEST(PollPolicyTest, ZeroWaitNeverTakesASlot) {
  auto s = settings();
  s.poll_wait_s = 0;
  PollPolicy p(s);
  std::mt19937_64 rng(1);
  EXPECT_FALSE(p.decide(true, 0, rng).long_poll);
}

TEST(PollPolicyTest, BackoffDoublesWithJitterUpTo30s) {
  PollPolicy p(settings());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    auto first = p.backoff(1, rng);
    EXPECT_GE(first, milliseconds(500));
    EXPECT_LE(first, milliseconds(1000));
    auto third = p.backoff(3, rng);
    EXPECT_GE(third, milliseconds(2000));
    EXPECT_LE(third, milliseconds(4000));
    auto late = p.backoff(40, rng);
    EXPECT_GE(late, milliseconds(15000));
    EXPECT_LE(late, milliseconds(30000));
  }
}

}  // namespace
}  // namespace kiln::vfleet
