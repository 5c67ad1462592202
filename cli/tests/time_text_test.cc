#include <gtest/gtest.h>

#include "cli/time_text.h"

namespace kiln::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ParseDurationTest, AcceptsHoursMinutesSecondsAndCombinations) {
  EXPECT_EQ(*parseDuration("90s"), seconds(90));
  EXPECT_EQ(*parseDuration("15m"), seconds(900));
  EXPECT_EQ(*parseDuration("2h"), seconds(7200));
  EXPECT_EQ(*parseDuration("1h30m"), seconds(5400));
  EXPECT_EQ(*parseDuration("1h30m15s"), seconds(5415));
  EXPECT_EQ(*parseDuration("1h15s"), seconds(3615));
}

TEST(ParseDurationTest, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "90", "1m1h", "1h1h", "1x", "0s", "0h0m", "-5m", "1.5h", "h", "2d", " 5m", "5m ", "999999999999h"}) {
    auto d = parseDuration(bad);
    EXPECT_FALSE(d.ok()) << "'" << bad << "'";
    if (!d.ok()) {
      EXPECT_EQ(d.error().code, ErrorCode::kInvalidArgument);
      EXPECT_NE(d.error().message.find(std::string("'") + bad + "'"), std::string::npos) << d.error().message;
    }
  }
}

TEST(FormatDurationTest, PicksAUnitByMagnitude) {
  EXPECT_EQ(formatDuration(milliseconds(-5)), "0ms");
  EXPECT_EQ(formatDuration(milliseconds(350)), "350ms");
  EXPECT_EQ(formatDuration(milliseconds(4250)), "4.2s");
  EXPECT_EQ(formatDuration(milliseconds(45000)), "45s");
  EXPECT_EQ(formatDuration(milliseconds(845000)), "14m05s");
  EXPECT_EQ(formatDuration(milliseconds(7380000)), "2h03m");
}

TEST(FormatTimestampTest, PrintsUtcIso8601) {
  EXPECT_EQ(formatTimestamp(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(formatTimestamp(1767225605999), "2026-01-01T00:00:05Z");
}

TEST(ShortenTest, CutsOnCodePointsAndMarksTheCut) {
  EXPECT_EQ(shorten("short", 10), "short");
  EXPECT_EQ(shorten("exactly10!", 10), "exactly10!");
  EXPECT_EQ(shorten("abcdefghijk", 10), "abcdefg...");
  EXPECT_EQ(shorten("\xC2\xB5\xC2\xB5\xC2\xB5\xC2\xB5\xC2\xB5", 4), "\xC2\xB5...");  // never half a µ
}

}  // namespace
}  // namespace kiln::cli
