#pragma once
// How a simulated host polls when thousands share a bounded set of HTTP/1.1 connections: a long
// poll holds a connection for its whole wait, so only `long_poll_slots` of them may be in
// flight. Hosts with recent work ("hot": the next step of a run comes right after a report)
// may take every slot; idle hosts only part of them, and otherwise short-poll (wait=0) at a
// jittered idle interval. A fleet smaller than the slots long-polls everywhere, as real agents
// do. Pure; thread-compatible.

#include <chrono>
#include <cstdint>
#include <random>

namespace kiln::vfleet {

struct PollPolicySettings {
  int poll_wait_s = 25;                // wait of a long poll (docs/agent-protocol.md default)
  int long_poll_slots = 896;           // long polls in flight at most
  double idle_share = 0.75;            // share of the slots idle hosts may take
  std::chrono::milliseconds idle_interval{30000};  // idle host without a slot: wait=0 this often
  std::chrono::milliseconds hot_interval{2000};    // hot host without a slot
  std::chrono::milliseconds backoff_first{1000};   // after an error: 1 s doubling to 30 s
  std::chrono::milliseconds backoff_max{30000};
};

struct PollDecision {
  int wait_s = 0;                        // the poll's `wait`
  bool long_poll = false;                // takes a slot
  std::chrono::milliseconds then{0};     // delay before the next poll after a 204
};

class PollPolicy {
 public:
  explicit PollPolicy(PollPolicySettings settings) : settings_(settings) {}

  // The next poll of a host, given the long polls in flight now.
  PollDecision decide(bool hot, int long_in_flight, std::mt19937_64& rng) const;
  // Delay before retrying after the `failures`-th consecutive error (>= 1), jittered to
  // 50-100% of 1 s * 2^(failures-1), at most backoff_max.
  std::chrono::milliseconds backoff(int failures, std::mt19937_64& rng) const;
  // `d` jittered uniformly within +-20%.
  static std::chrono::milliseconds jitter(std::chrono::milliseconds d, std::mt19937_64& rng);

  const PollPolicySettings& settings() const { return settings_; }

 private:
  PollPolicySettings settings_;
};

}  // namespace kiln::vfleet
