#include "common/log_context.h"

#include <gtest/gtest.h>

#include <thread>

namespace kiln {
namespace {

TEST(LogScopeTest, NestedScopesAddAndRemoveTheirFieldsOnThisThreadOnly) {
  EXPECT_TRUE(LogScope::current().empty());
  {
    LogScope request({{"request_id", "r1"}, {"actor", "ci"}});
    {
      LogScope object(LogFields{{"rollout", "ro-3"}});
      ASSERT_EQ(LogScope::current().size(), 3u);
      EXPECT_EQ(LogScope::current()[2].second, "ro-3");
      std::thread([] { EXPECT_TRUE(LogScope::current().empty()); }).join();
    }
    ASSERT_EQ(LogScope::current().size(), 2u);
    EXPECT_EQ(LogScope::current()[0].first, "request_id");
  }
  EXPECT_TRUE(LogScope::current().empty());
}

}  // namespace
}  // namespace kiln
