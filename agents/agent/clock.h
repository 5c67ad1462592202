#pragma once
// Time for the agent: a monotonic clock, the wall clock (journal deadlines must survive a
// reboot, the monotonic clock does not) and waiting on a condition variable. SystemClock is the
// real one; FakeClock moves only when the code waits on it (or the test advances it), so unit
// tests never sleep.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace kiln::agent {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
  // Milliseconds since the Unix epoch.
  virtual std::int64_t wallMs() const = 0;
  // Waits on `cv` until `done()` is true or `timeout` has passed. `lock` holds the mutex `cv`
  // is used with, on entry and on return; `done` is evaluated with it held. Returns done().
  // Thread-safe.
  virtual bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                       std::chrono::milliseconds timeout, const std::function<bool()>& done) = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override;
  std::int64_t wallMs() const override;
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
               std::chrono::milliseconds timeout, const std::function<bool()>& done) override;
};

// Simulated time. In the default (auto-advance) mode a wait whose condition is false moves the
// clock forward by its whole timeout at once and returns: code that backs off or polls runs at
// full speed. In hold mode time never moves on its own: a wait blocks until its condition
// becomes true (the code under test notifies the condition variable). Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::int64_t wall_start_ms = 1'750'000'000'000);
  std::chrono::steady_clock::time_point now() const override;
  std::int64_t wallMs() const override;
  bool waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
               std::chrono::milliseconds timeout, const std::function<bool()>& done) override;

  void advance(std::chrono::milliseconds d);
  void setHold(bool hold);
  // Timeouts of the waits that let time pass, in order.
  std::vector<std::chrono::milliseconds> waits() const;

 private:
  mutable std::mutex mu_;
  std::chrono::milliseconds elapsed_{0};
  std::int64_t wall_start_ms_;
  bool hold_ = false;
  std::vector<std::chrono::milliseconds> waits_;
};

}  // namespace kiln::agent
