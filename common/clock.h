#pragma once
// The one time source (docs/STYLE.md: injected time): wall time, monotonic time and waiting. Core
// code asks a Clock; kilnd passes SystemClock, tests a FakeClock they move by hand, or that
// moves by itself when the code under test waits on it, so unit tests never sleep.
// orchestrator/core/clock.h names these kiln::core::Clock etc. for the orchestrator's code.
// kiln-agent uses it too (its journal's deadlines in wall milliseconds: wallMs; its tests the
// FakeClock's hold mode).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace kiln {

using WallClock = std::chrono::system_clock;
using TimePoint = WallClock::time_point;
using MonoTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall time (what the database and people see). Thread-safe.
  virtual TimePoint now() const = 0;
  // Monotonic time, for durations and deadlines within this process. Thread-safe.
  virtual MonoTime monotonic() const = 0;
  // Waits on `cv` until `done()` is true or `timeout` has passed. `lock` holds the mutex `cv`
  // is used with, on entry and on return; `done` is evaluated with it held. Returns done().
  virtual bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                       std::chrono::milliseconds timeout, const std::function<bool()>& done) = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return WallClock::now(); }
  MonoTime monotonic() const override { return std::chrono::steady_clock::now(); }
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, std::chrono::milliseconds timeout,
               const std::function<bool()>& done) override {
    return cv.wait_for(lock, timeout, done);
  }
};

// Milliseconds since the Unix epoch, of the clock's wall time.
inline std::int64_t wallMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.now().time_since_epoch()).count();
}

// Moves only when the test moves it (advance), or when code waits on it: a wait whose
// condition is false moves both times forward by its whole timeout at once and returns.
// In hold mode (setHold(true)) time never moves on its own: a wait blocks until its condition
// becomes true (the code under test notifies the condition variable), and lets no time pass.
// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(24 * 365 * 56))
      : wall_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint(WallClock::duration(wall_.load())); }
  MonoTime monotonic() const override { return MonoTime(std::chrono::nanoseconds(mono_ns_.load())); }
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, std::chrono::milliseconds timeout,
               const std::function<bool()>& done) override {
    if (done()) return true;
    if (hold_.load()) {
      cv.wait(lock, done);
      return true;
    }
    advance(timeout);
    std::lock_guard l(mu_);
    waits_.push_back(timeout);
    return done();
  }
  template <typename Rep, typename Period>
  void advance(std::chrono::duration<Rep, Period> d) {
    wall_ += std::chrono::duration_cast<WallClock::duration>(d).count();
    mono_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
  void setHold(bool hold) { hold_.store(hold); }
  // The timeouts of the waits that let time pass, in order.
  std::vector<std::chrono::milliseconds> waits() const {
    std::lock_guard l(mu_);
    return waits_;
  }

 private:
  std::atomic<WallClock::rep> wall_;
  std::atomic<std::int64_t> mono_ns_{0};
  std::atomic<bool> hold_{false};
  mutable std::mutex mu_;
  std::vector<std::chrono::milliseconds> waits_;
};

}  // namespace kiln
