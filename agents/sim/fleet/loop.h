#pragma once
// The event loop the virtual fleet runs on: time and timers, injected so the fleet's logic runs
// in tests on a fake clock that moves only when the test moves it (docs/STYLE.md: Envoy's
// TimeSource). Every callback of a Loop runs on the loop's one thread.

#include <chrono>
#include <cstdint>
#include <functional>

namespace kiln::vfleet {

using SteadyClock = std::chrono::steady_clock;

class Loop {
 public:
  using TimerId = std::uint64_t;  // 0 is never a timer
  virtual ~Loop() = default;

  virtual SteadyClock::time_point now() const = 0;
  // Runs `fn` on the loop thread once `delay` has passed (a negative delay counts as 0); never
  // before this call returns. Call only from the loop thread (or before the loop runs).
  virtual TimerId after(SteadyClock::duration delay, std::function<void()> fn) = 0;
  // Forgets a timer that has not fired yet; a no-op for 0, fired or unknown ids.
  virtual void cancel(TimerId id) = 0;
};

}  // namespace kiln::vfleet
