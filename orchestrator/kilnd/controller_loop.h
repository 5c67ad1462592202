#pragma once
// kilnd's controller loop: exactly one replica (the holder of the leader lock) drives timers,
// leases, run verdicts and rollouts. Each turn it tries to hold the lock and, holding it, runs
// the passes in order (the run service's, then the rollout controller's). A round that moved
// something may have made the next step due (a run finished, so its pod starts validating; a
// pod admitted, so it drains), so the loop turns again at once, up to max_streak rounds in a
// row; otherwise it waits leader_interval (follower_interval when another replica leads), or
// less when woken (an agent's report finished a run).
//
// A pass that throws is logged with its name and ends the round as failed; the passes after it
// still run (a failing run pass must not stop rollouts from being aborted, nor the reverse).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logger.h"

namespace kiln::kilnd {

// Who may run the controllers (db::LeaderLock in kilnd).
class Leadership {
 public:
  virtual ~Leadership() = default;
  // Holds or takes the lock: false while another replica holds it or the database is away.
  virtual bool tryHold() = 0;
};

struct ControllerPass {
  std::string name;          // in the log line of a pass that failed: "runs", "rollouts"
  std::function<int()> run;  // how many changes it made
};

struct ControllerLoopOptions {
  std::chrono::milliseconds leader_interval{200};
  std::chrono::milliseconds follower_interval{1000};
  // Rounds in a row, each after one that changed something, that run without waiting.
  int max_streak = 8;
  // On gaining or losing the lock (after the change is logged).
  std::function<void(bool leader)> on_leadership;
  // After each round: whether every pass ran without throwing, the round's monotonic duration
  // in seconds, and the wall time at its end (seconds since the epoch).
  std::function<void(bool ok, double seconds, double wall_seconds)> on_round;
};

class ControllerLoop {
 public:
  ControllerLoop(Leadership& leadership, std::vector<ControllerPass> passes, Clock& clock, Logger& log,
                 ControllerLoopOptions options = {});

  // One turn: tries to lead and, leading, runs one round of passes. Returns how long to wait
  // before the next turn (zero: turn again at once).
  std::chrono::milliseconds turn();

  // Turns until stop(), waiting between turns on the clock; wake() ends a wait early. Run it
  // on one thread.
  void run();
  void wake();
  void stop();

  bool leading() const { return leading_.load(); }

 private:
  Leadership& leadership_;
  std::vector<ControllerPass> passes_;
  Clock& clock_;
  Logger& log_;
  ControllerLoopOptions options_;
  std::atomic<bool> leading_{false};
  int streak_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  bool stopping_ = false;
};

}  // namespace kiln::kilnd
