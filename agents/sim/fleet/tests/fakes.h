#pragma once
// Fakes for the virtual fleet's tests: a loop whose clock moves only when the test advances it,
// and a transport that records requests for the test to answer.

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "agents/sim/fleet/loop.h"
#include "agents/sim/fleet/transport.h"

namespace kiln::vfleet::testing {

class FakeLoop : public Loop {
 public:
  SteadyClock::time_point now() const override { return now_; }
  TimerId after(SteadyClock::duration delay, std::function<void()> fn) override {
    if (delay < SteadyClock::duration::zero()) delay = SteadyClock::duration::zero();
    const TimerId id = next_++;
    timers_.emplace(std::make_pair(now_ + delay, id), std::move(fn));
    return id;
  }
  void cancel(TimerId id) override {
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
      if (it->first.second == id) {
        timers_.erase(it);
        return;
      }
    }
  }
  // Moves the clock forward by `d`, running due timers in deadline order.
  void advance(SteadyClock::duration d) {
    const auto until = now_ + d;
    while (!timers_.empty() && timers_.begin()->first.first <= until) {
      auto it = timers_.begin();
      now_ = std::max(now_, it->first.first);
      auto fn = std::move(it->second);
      timers_.erase(it);
      fn();
    }
    now_ = until;
  }
  std::size_t pending() const { return timers_.size(); }

 private:
  SteadyClock::time_point now_{std::chrono::hours(1)};
  TimerId next_ = 1;
  std::map<std::pair<SteadyClock::time_point, TimerId>, std::function<void()>> timers_;
};

class FakeTransport : public Transport {
 public:
  struct Sent {
    HttpRequest req;
    ResponseHandler done;
  };
  void send(HttpRequest request, ResponseHandler done) override {
    sent_.push_back({std::move(request), std::move(done)});
  }
  std::deque<Sent>& sent() { return sent_; }
  bool empty() const { return sent_.empty(); }
  // Takes the oldest request whose target starts with `prefix`; fails the test if none.
  Sent take(const std::string& prefix) {
    for (auto it = sent_.begin(); it != sent_.end(); ++it) {
      if (it->req.target.rfind(prefix, 0) == 0) {
        Sent s = std::move(*it);
        sent_.erase(it);
        return s;
      }
    }
    ADD_FAILURE() << "no request to " << prefix << " among " << sent_.size();
    return Sent{{}, [](Result<HttpResponse>) {}};
  }
  bool has(const std::string& prefix) const {
    for (const auto& s : sent_) {
      if (s.req.target.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }

 private:
  std::deque<Sent> sent_;
};

}  // namespace kiln::vfleet::testing
