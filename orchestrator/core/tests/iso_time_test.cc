// REST times: ISO-8601 UTC with milliseconds, beside the deprecated epoch-millisecond field.

#include "orchestrator/core/iso_time.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(IsoTimeTest, FormatsUtcWithMilliseconds) {
  const TimePoint t = TimePoint{} + std::chrono::milliseconds(1764669600123);  // 2025-12-02T10:00:00.123Z
  EXPECT_EQ(isoTime(t), "2025-12-02T10:00:00.123Z");
  EXPECT_EQ(isoTime(TimePoint{} - std::chrono::milliseconds(1)), "1969-12-31T23:59:59.999Z");
}

TEST(IsoTimeTest, PutTimeSetsBothFormsOrBothNull) {
  nlohmann::json j = nlohmann::json::object();
  putTime(j, "created_at", TimePoint{} + std::chrono::milliseconds(1764669600123));
  putTime(j, "finished_at", std::nullopt);
  EXPECT_EQ(j["created_at"], "2025-12-02T10:00:00.123Z");
  EXPECT_EQ(j["created_at_ms"], 1764669600123);
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_TRUE(j["finished_at_ms"].is_null());
}

}  // namespace
}  // namespace kiln::core
