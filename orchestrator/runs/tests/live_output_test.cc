// The live output kilnd keeps of a running step (orchestrator/runs/live_output.h).

#include "orchestrator/runs/live_output.h"

#include <gtest/gtest.h>

namespace kiln::runs {
namespace {

TEST(LiveOutputTest, ChunksInOrderAppendAndReadersGetWhatFollowsTheirOffset) {
  LiveStream s;
  appendLive(s, {0, "line 1\n"});
  appendLive(s, {7, "line 2\n"});
  EXPECT_EQ(s.text, "line 1\nline 2\n");
  EXPECT_EQ(s.start, 0);
  EXPECT_EQ(s.end, 14);
  LiveSlice all = sliceLive(s, 0);
  EXPECT_EQ(all.offset, 0);
  EXPECT_EQ(all.data, "line 1\nline 2\n");
  LiveSlice rest = sliceLive(s, 7);
  EXPECT_EQ(rest.offset, 7);
  EXPECT_EQ(rest.end, 14);
  EXPECT_EQ(rest.data, "line 2\n");
  EXPECT_EQ(sliceLive(s, 14).data, "");
}

TEST(LiveOutputTest, AChunkSentAgainAfterALostAnswerAddsOnlyItsNewBytes) {
  LiveStream s;
  appendLive(s, {0, "abc"});
  appendLive(s, {0, "abcdef"});  // the agent did not learn that "abc" arrived
  EXPECT_EQ(s.text, "abcdef");
  EXPECT_EQ(s.end, 6);
  appendLive(s, {2, "cd"});  // wholly known: nothing changes
  EXPECT_EQ(s.text, "abcdef");
  EXPECT_EQ(s.end, 6);
}

TEST(LiveOutputTest, AGapStartsTheKeptTextAnewAndReadersLearnWhereItBegins) {
  LiveStream s;
  appendLive(s, {0, "head\n"});
  appendLive(s, {100, "tail\n"});  // the agent dropped 95 bytes it could not send
  EXPECT_EQ(s.text, "tail\n");
  EXPECT_EQ(s.start, 100);
  EXPECT_EQ(s.end, 105);
  LiveSlice r = sliceLive(s, 5);
  EXPECT_EQ(r.offset, 100);
  EXPECT_EQ(r.data, "tail\n");
}

TEST(LiveOutputTest, OnlyTheLastKeepBytesAreKeptCutAtACharacterBoundary) {
  LiveStream s;
  appendLive(s, {0, "0123456789"}, 8);
  EXPECT_EQ(s.text, "23456789");
  EXPECT_EQ(s.start, 2);
  EXPECT_EQ(s.end, 10);
  // "é" is two bytes: a cut inside it moves past it.
  LiveStream u;
  appendLive(u, {0, "a\xC3\xA9" "bcdefg"}, 7);
  EXPECT_EQ(u.text, "bcdefg");
  EXPECT_EQ(u.start, 3);
  EXPECT_EQ(u.end, 9);
}

TEST(LiveOutputTest, AReaderAheadOfTheStreamOrInsideACharacterGetsWholeCharacters) {
  LiveStream s;
  appendLive(s, {0, "x\xC3\xA9y"});
  LiveSlice inside = sliceLive(s, 2);  // between the two bytes of "é"
  EXPECT_EQ(inside.offset, 3);
  EXPECT_EQ(inside.data, "y");
  LiveSlice ahead = sliceLive(s, 50);  // e.g. after PostgreSQL lost the unlogged table
  EXPECT_EQ(ahead.offset, 4);
  EXPECT_EQ(ahead.end, 4);
  EXPECT_EQ(ahead.data, "");
}

}  // namespace
}  // namespace kiln::runs
