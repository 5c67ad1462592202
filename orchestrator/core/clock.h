#pragma once
// Injected time (STYLE.md): core code asks a Clock, tests move a FakeClock by hand.

#include <atomic>
#include <chrono>

namespace kiln::core {

using Clock_ = std::chrono::system_clock;
using TimePoint = Clock_::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  // Thread-safe.
  virtual TimePoint now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return Clock_::now(); }
};

// Moves only when the test moves it. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(24 * 365 * 56))
      : now_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint(Clock_::duration(now_.load())); }
  void advance(Clock_::duration d) { now_ += d.count(); }

 private:
  std::atomic<Clock_::rep> now_;
};

}  // namespace kiln::core
