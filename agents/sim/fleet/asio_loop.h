#pragma once
// Loop on a Boost.Asio io_context: one steady_timer per pending callback (asio keeps them in a
// heap: thousands of hosts cost no thread). Use from the thread that runs the io_context.

#include <memory>
#include <unordered_map>

#include "agents/sim/fleet/loop.h"

namespace boost::asio {
class io_context;
}

namespace kiln::vfleet {

class AsioLoop : public Loop {
 public:
  explicit AsioLoop(boost::asio::io_context& io);
  ~AsioLoop() override;
  SteadyClock::time_point now() const override;
  TimerId after(SteadyClock::duration delay, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  std::size_t pending() const { return timers_.size(); }

 private:
  struct Timer;
  boost::asio::io_context& io_;
  TimerId next_ = 1;
  std::unordered_map<TimerId, std::unique_ptr<Timer>> timers_;
};

}  // namespace kiln::vfleet
