#pragma once
// A unified diff of two texts by lines, in the shape `diff -u` prints: what a change did to a
// document, small enough to keep in an audit record (a workflow's YAML: PUT /workflows/{name}
// and the workflow directory at kilnd's start). Pure; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

struct LineDiffOptions {
  std::string old_label = "old";  // the "--- " line; "/dev/null" for a document that is new
  std::string new_label = "new";  // the "+++ " line
  int context = 3;                // unchanged lines shown around each change
  // The text stops at the last whole line within this many bytes (then `truncated`). Counts
  // are of the whole diff all the same.
  std::size_t max_bytes = 64 * 1024;
};

struct LineDiff {
  std::string text;            // "--- old\n+++ new\n@@ -1,3 +1,4 @@\n line\n-old\n+new\n..."; empty when equal
  int added = 0, removed = 0;  // lines
  bool truncated = false;      // text was cut at max_bytes
};

// Lines are what '\n' ends; a last line without one is marked "\ No newline at end of file" as
// diff does. The edit is a longest common subsequence of lines (common head and tail set
// aside first); where the rest would need more than a few million cells (megabyte documents
// rewritten throughout) it says "every old line removed, every new one added" instead, which
// is still a true diff, only not the shortest.
LineDiff unifiedLineDiff(std::string_view old_text, std::string_view new_text, const LineDiffOptions& options = {});

}  // namespace kiln
