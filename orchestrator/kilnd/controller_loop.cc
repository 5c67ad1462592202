#include "orchestrator/kilnd/controller_loop.h"

#include <exception>
#include <utility>

namespace kiln::kilnd {

ControllerLoop::ControllerLoop(Leadership& leadership, std::vector<ControllerPass> passes, Clock& clock, Logger& log,
                               ControllerLoopOptions options)
    : leadership_(leadership), passes_(std::move(passes)), clock_(clock), log_(log), options_(std::move(options)) {}

std::chrono::milliseconds ControllerLoop::turn() {
  bool is_leader = false;
  try {
    is_leader = leadership_.tryHold();
  } catch (const std::exception& e) {
    log_.error(std::string("controller lock: ") + e.what());
  }
  if (is_leader != leading_.exchange(is_leader)) {
    log_.info(is_leader ? "this kilnd now runs the controllers" : "lost the controller lock");
    if (options_.on_leadership) options_.on_leadership(is_leader);
  }
  if (!is_leader) {
    streak_ = 0;
    return options_.follower_interval;
  }
  const auto began = clock_.monotonic();
  bool ok = true;
  int changes = 0;
  for (const auto& pass : passes_) {
    try {
      changes += pass.run();
    } catch (const std::exception& e) {
      ok = false;
      log_.error("controller pass '" + pass.name + "' failed: " + e.what());
    }
  }
  if (options_.on_round)
    options_.on_round(ok, std::chrono::duration<double>(clock_.monotonic() - began).count(),
                      std::chrono::duration<double>(clock_.now().time_since_epoch()).count());
  streak_ = changes > 0 ? streak_ + 1 : 0;
  if (streak_ > 0 && streak_ < options_.max_streak) return std::chrono::milliseconds(0);
  streak_ = 0;
  return options_.leader_interval;
}

void ControllerLoop::run() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    const auto wait = turn();
    if (wait.count() == 0) continue;
    std::unique_lock lock(mu_);
    clock_.waitFor(lock, cv_, wait, [&] { return woken_ || stopping_; });
    woken_ = false;
  }
}

void ControllerLoop::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

void ControllerLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
}

}  // namespace kiln::kilnd
