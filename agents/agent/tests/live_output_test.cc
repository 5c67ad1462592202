// The agent's live output buffers (agents/agent/live_output.h): valid UTF-8 whatever the step
// prints, and only the tail of what kilnd has not acknowledged.
#include "agents/agent/live_output.h"

#include <gtest/gtest.h>

namespace kiln::agent {
namespace {

std::string sanitized(const std::vector<std::string>& pieces) {
  Utf8Sanitizer s;
  std::string out;
  for (const auto& p : pieces) s.feed(p, out);
  return out;
}

TEST(LiveOutputBufferTest, ACharacterSplitAcrossReadsIsKeptWhole) {
  EXPECT_EQ(sanitized({"temp 42 \xC2", "\xB0" "C\n"}), "temp 42 \xC2\xB0" "C\n");
  EXPECT_EQ(sanitized({"\xE2\x9C", "\x93"}), "\xE2\x9C\x93");
}

TEST(LiveOutputBufferTest, InvalidBytesAndNulBecomeTheReplacementCharacter) {
  EXPECT_EQ(sanitized({std::string("a\0b", 3)}), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(sanitized({"\xFF" "x"}), "\xEF\xBF\xBD" "x");
  EXPECT_EQ(sanitized({"\xC3" "x"}), "\xEF\xBF\xBD" "x");           // a lead byte without its continuation
  EXPECT_EQ(sanitized({"\xED\xA0\x80"}), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
}

TEST(LiveOutputBufferTest, KeepsTheTailOfWhatIsNotAcknowledgedAndCountsOffsets) {
  LiveBuffer b(8);
  b.add("0123");
  b.acknowledge(4);
  EXPECT_FALSE(b.pending());
  EXPECT_EQ(b.start(), 4);
  b.add("456789abcdef");  // 12 new bytes, cap 8
  b.trim();
  EXPECT_EQ(b.text(), "89abcdef");
  EXPECT_EQ(b.start(), 8);  // 4 bytes that will never be sent: the next chunk's offset says so
  b.acknowledge(12);        // kilnd has part of it
  EXPECT_EQ(b.text(), "cdef");
  EXPECT_EQ(b.start(), 12);
}

}  // namespace
}  // namespace kiln::agent
