#include "agents/agent/clock.h"

namespace kiln::agent {

std::chrono::steady_clock::time_point SystemClock::now() const {
  return std::chrono::steady_clock::now();
}

std::int64_t SystemClock::wallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool SystemClock::waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          std::chrono::milliseconds timeout, const std::function<bool()>& done) {
  return cv.wait_for(lock, timeout, done);
}

FakeClock::FakeClock(std::int64_t wall_start_ms) : wall_start_ms_(wall_start_ms) {}

std::chrono::steady_clock::time_point FakeClock::now() const {
  std::lock_guard l(mu_);
  return std::chrono::steady_clock::time_point(elapsed_);
}

std::int64_t FakeClock::wallMs() const {
  std::lock_guard l(mu_);
  return wall_start_ms_ + elapsed_.count();
}

bool FakeClock::waitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                        std::chrono::milliseconds timeout, const std::function<bool()>& done) {
  if (done()) return true;
  bool hold;
  {
    std::lock_guard l(mu_);
    hold = hold_;
  }
  if (hold) {
    cv.wait(lock, done);
    return true;
  }
  {
    std::lock_guard l(mu_);
    elapsed_ += timeout;
    waits_.push_back(timeout);
  }
  return done();
}

void FakeClock::advance(std::chrono::milliseconds d) {
  std::lock_guard l(mu_);
  elapsed_ += d;
}

void FakeClock::setHold(bool hold) {
  std::lock_guard l(mu_);
  hold_ = hold;
}

std::vector<std::chrono::milliseconds> FakeClock::waits() const {
  std::lock_guard l(mu_);
  return waits_;
}

}  // namespace kiln::agent
