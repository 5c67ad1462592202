#pragma once
// A fixed pool of worker threads running posted tasks in FIFO order. Request handlers post
// their slow work (database, long polls) here instead of blocking network threads.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class Executor {
 public:
  explicit Executor(int threads);
  ~Executor();  // join()
  // Finishes the queued tasks (and those they post meanwhile), then joins the threads; a task
  // posted afterwards never runs. Call it before destroying what the tasks use. Idempotent;
  // not from a task.
  void join();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Thread-safe. A task must not throw (the caller wraps it); if it does, the process aborts.
  void post(std::function<void()> task);
  std::size_t queued() const;

 private:
  void run();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kiln
