#include "common/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kiln {
namespace {

TEST(ExecutorTest, JoinFinishesQueuedTasksAndThoseTheyPost) {
  std::atomic<int> done{0};
  Executor executor(2);
  for (int i = 0; i < 20; ++i)
    executor.post([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ++done;
      executor.post([&] { ++done; });  // posted while join() waits
    });
  executor.join();
  EXPECT_EQ(done.load(), 40);
  executor.post([&] { ++done; });  // after join: never runs
  executor.join();                 // idempotent
  EXPECT_EQ(done.load(), 40);
}

}  // namespace
}  // namespace kiln
