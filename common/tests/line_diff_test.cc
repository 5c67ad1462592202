// Unified line diffs as `diff -u` prints them: hunks with context, new and emptied documents, a
// missing last newline, merged and separate hunks, the size cap, and the fallback for documents
// too large to compare line by line.

#include "common/line_diff.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

std::string numbered(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

TEST(LineDiffTest, EqualTextsHaveNoDiff) {
  const LineDiff d = unifiedLineDiff("a\nb\n", "a\nb\n");
  EXPECT_EQ(d.text, "");
  EXPECT_EQ(d.added + d.removed, 0);
  EXPECT_FALSE(d.truncated);
}

TEST(LineDiffTest, OneChangedLineWithThreeLinesOfContext) {
  std::string after = numbered(1, 10);
  after.replace(after.find("line 5"), 6, "line five");
  const LineDiff d = unifiedLineDiff(numbered(1, 10), after, {.old_label = "w@h1", .new_label = "w@h2"});
  EXPECT_EQ(d.text,
            "--- w@h1\n+++ w@h2\n"
            "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n");
  EXPECT_EQ(d.added, 1);
  EXPECT_EQ(d.removed, 1);
}

TEST(LineDiffTest, ANewDocumentIsAllAddedAndAnEmptiedOneAllRemoved) {
  const LineDiff added = unifiedLineDiff("", "a\nb\n", {.old_label = "/dev/null", .new_label = "w@h1"});
  EXPECT_EQ(added.text, "--- /dev/null\n+++ w@h1\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(added.added, 2);
  EXPECT_EQ(added.removed, 0);
  const LineDiff removed = unifiedLineDiff("a\nb\n", "");
  EXPECT_EQ(removed.text, "--- old\n+++ new\n@@ -1,2 +0,0 @@\n-a\n-b\n");
}

TEST(LineDiffTest, InsertionsAndRemovalsAreFoundBetweenUnchangedLines) {
  const LineDiff d = unifiedLineDiff("a\nb\nc\nd\n", "a\nx\nb\nd\n", {.context = 1});
  EXPECT_EQ(d.text, "--- old\n+++ new\n@@ -1,4 +1,4 @@\n a\n+x\n b\n-c\n d\n");
  EXPECT_EQ(d.added, 1);
  EXPECT_EQ(d.removed, 1);
}

TEST(LineDiffTest, ChangesFarApartAreSeparateHunksAndCloseOnesOne) {
  std::string far = numbered(1, 20);
  far.replace(far.find("line 2\n"), 6, "LINE 2");
  far.replace(far.find("line 19"), 7, "LINE 19");
  const LineDiff apart = unifiedLineDiff(numbered(1, 20), far);
  EXPECT_NE(apart.text.find("@@ -1,5 +1,5 @@\n"), std::string::npos) << apart.text;
  EXPECT_NE(apart.text.find("@@ -16,5 +16,5 @@\n"), std::string::npos) << apart.text;

  std::string near = numbered(1, 20);
  near.replace(near.find("line 5"), 6, "LINE 5");
  near.replace(near.find("line 11"), 7, "LINE 11");  // 5 unchanged lines between: within 2 * 3
  const LineDiff one = unifiedLineDiff(numbered(1, 20), near);
  EXPECT_NE(one.text.find("@@ -2,13 +2,13 @@\n"), std::string::npos) << one.text;
  EXPECT_EQ(one.text.find("@@ -", one.text.find("@@ -") + 1), std::string::npos) << "one hunk: " << one.text;
}

TEST(LineDiffTest, ALastLineWithoutNewlineIsMarked) {
  const LineDiff d = unifiedLineDiff("a\nb\n", "a\nb");
  EXPECT_EQ(d.text, "--- old\n+++ new\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n");
}

TEST(LineDiffTest, TheTextStopsAtTheCapOnALineBoundaryButTheCountsAreWhole) {
  const LineDiff d = unifiedLineDiff("", numbered(1, 1000), {.max_bytes = 100});
  EXPECT_TRUE(d.truncated);
  EXPECT_LE(d.text.size(), 100u);
  EXPECT_EQ(d.text.back(), '\n');
  EXPECT_EQ(d.added, 1000);
}

TEST(LineDiffTest, DocumentsTooLargeToCompareAreAllRemovedThenAllAdded) {
  // 3000 x 3000 lines, every one changed: past the table's cap; the common tail still counts.
  std::string before = numbered(1, 3000), after;
  for (int i = 1; i <= 3000; ++i) after += "other " + std::to_string(i) + "\n";
  before += "same\n";
  after += "same\n";
  const LineDiff d = unifiedLineDiff(before, after, {.max_bytes = std::size_t{1} << 20});
  EXPECT_FALSE(d.truncated);
  EXPECT_EQ(d.removed, 3000);
  EXPECT_EQ(d.added, 3000);
  EXPECT_NE(d.text.find("@@ -1,3001 +1,3001 @@\n-line 1\n"), std::string::npos);
  EXPECT_LT(d.text.find("-line 3000\n"), d.text.find("+other 1\n")) << "removals first";
}

}  // namespace
}  // namespace kiln
