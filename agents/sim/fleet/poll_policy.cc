#include "agents/sim/fleet/poll_policy.h"

#include <algorithm>

namespace kiln::vfleet {

PollDecision PollPolicy::decide(bool hot, int long_in_flight, std::mt19937_64& rng) const {
  const int idle_slots = static_cast<int>(settings_.long_poll_slots * settings_.idle_share);
  const int limit = hot ? settings_.long_poll_slots : idle_slots;
  PollDecision d;
  if (settings_.poll_wait_s > 0 && long_in_flight < limit) {
    d.wait_s = settings_.poll_wait_s;
    d.long_poll = true;
    return d;  // the protocol: poll again at once after a 204
  }
  d.then = jitter(hot ? settings_.hot_interval : settings_.idle_interval, rng);
  return d;
}

std::chrono::milliseconds PollPolicy::backoff(int failures, std::mt19937_64& rng) const {
  const int shift = std::clamp(failures - 1, 0, 20);
  const std::int64_t full = std::min<std::int64_t>(settings_.backoff_first.count() << shift,
                                                   settings_.backoff_max.count());
  std::uniform_int_distribution<std::int64_t> half(full / 2, full);
  return std::chrono::milliseconds(half(rng));
}

std::chrono::milliseconds PollPolicy::jitter(std::chrono::milliseconds d, std::mt19937_64& rng) {
  const std::int64_t spread = d.count() / 5;
  if (spread <= 0) return d;
  std::uniform_int_distribution<std::int64_t> off(-spread, spread);
  return std::chrono::milliseconds(d.count() + off(rng));
}

}  // namespace kiln::vfleet
