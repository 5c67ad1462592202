#include "agents/sim/fleet/asio_loop.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace kiln::vfleet {

struct AsioLoop::Timer {
  explicit Timer(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
};

AsioLoop::AsioLoop(boost::asio::io_context& io) : io_(io) {}

AsioLoop::~AsioLoop() {
  for (auto& [_, t] : timers_) t->timer.cancel();
}

SteadyClock::time_point AsioLoop::now() const { return SteadyClock::now(); }

Loop::TimerId AsioLoop::after(SteadyClock::duration delay, std::function<void()> fn) {
  const TimerId id = next_++;
  auto t = std::make_unique<Timer>(io_);
  t->timer.expires_after(delay < SteadyClock::duration::zero() ? SteadyClock::duration::zero() : delay);
  t->timer.async_wait([this, id, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the Timer may be gone already
    auto it = timers_.find(id);
    if (it == timers_.end()) return;
    auto keep = std::move(it->second);  // destroyed after the callback, not inside asio's call
    timers_.erase(it);
    fn();
  });
  timers_.emplace(id, std::move(t));
  return id;
}

void AsioLoop::cancel(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  it->second->timer.cancel();
  timers_.erase(it);
}

}  // namespace kiln::vfleet
