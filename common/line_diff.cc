#include "common/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kiln {
namespace {

// A workflow is a few hundred lines: a full table is a few hundred thousand cells. Past this
// (16 MiB of table) the diff is the plain "all removed, all added".
constexpr std::size_t kMaxCells = std::size_t{4} << 20;

struct Line {
  std::string_view text;
  bool eol = true;  // ended by '\n'
  bool operator==(const Line& o) const { return text == o.text && eol == o.eol; }
};

std::vector<Line> splitLines(std::string_view s) {
  std::vector<Line> out;
  std::size_t at = 0;
  while (at < s.size()) {
    const auto nl = s.find('\n', at);
    if (nl == std::string_view::npos) {
      out.push_back({s.substr(at), false});
      break;
    }
    out.push_back({s.substr(at, nl - at), true});
    at = nl + 1;
  }
  return out;
}

enum class Op { kSame, kRemove, kAdd };

struct Edit {
  Op op;
  std::size_t old_line, new_line;  // 0-based; of the line this edit shows
};

// The edits that turn a[lo_a, hi_a) into b[lo_b, hi_b): removals before additions at each place.
void middleEdits(const std::vector<Line>& a, const std::vector<Line>& b, std::size_t lo_a, std::size_t hi_a,
                 std::size_t lo_b, std::size_t hi_b, std::vector<Edit>& out) {
  const std::size_t n = hi_a - lo_a, m = hi_b - lo_b;
  if (n == 0 || m == 0 || (n + 1) * (m + 1) > kMaxCells) {
    for (std::size_t i = lo_a; i < hi_a; ++i) out.push_back({Op::kRemove, i, lo_b});
    for (std::size_t j = lo_b; j < hi_b; ++j) out.push_back({Op::kAdd, hi_a, j});
    return;
  }
  // lcs[i][j]: the longest common subsequence of a[lo_a + i, hi_a) and b[lo_b + j, hi_b).
  std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return lcs[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = a[lo_a + i] == b[lo_b + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo_a + i] == b[lo_b + j]) {
      out.push_back({Op::kSame, lo_a + i, lo_b + j});
      ++i;
      ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      out.push_back({Op::kRemove, lo_a + i, lo_b + j});
      ++i;
    } else {
      out.push_back({Op::kAdd, lo_a + i, lo_b + j});
      ++j;
    }
  }
}

// "@@ -3,4 +3,5 @@": a range's start is 1-based, or the line before it when it is empty.
std::string hunkHeader(std::size_t old_start, std::size_t old_count, std::size_t new_start, std::size_t new_count) {
  auto range = [](std::size_t start, std::size_t count) {
    return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
  };
  return "@@ -" + range(old_start, old_count) + " +" + range(new_start, new_count) + " @@\n";
}

}  // namespace

LineDiff unifiedLineDiff(std::string_view old_text, std::string_view new_text, const LineDiffOptions& options) {
  LineDiff diff;
  if (old_text == new_text) return diff;
  const auto a = splitLines(old_text), b = splitLines(new_text);
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;

  std::vector<Edit> edits;
  edits.reserve(a.size() + b.size());
  for (std::size_t i = 0; i < head; ++i) edits.push_back({Op::kSame, i, i});
  middleEdits(a, b, head, a.size() - tail, head, b.size() - tail, edits);
  for (std::size_t k = tail; k-- > 0;) edits.push_back({Op::kSame, a.size() - 1 - k, b.size() - 1 - k});

  std::vector<std::string> lines = {"--- " + options.old_label + "\n", "+++ " + options.new_label + "\n"};
  const std::size_t context = static_cast<std::size_t>(std::max(0, options.context));
  std::size_t k = 0;
  while (k < edits.size()) {
    if (edits[k].op == Op::kSame) {
      ++k;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` lines after the last change
    // that is at most 2 * context unchanged lines from the one before it.
    const std::size_t first = k >= context ? k - context : 0;
    std::size_t last = k;  // the hunk's last change
    for (std::size_t next = k + 1; next < edits.size(); ++next) {
      if (edits[next].op == Op::kSame) continue;
      if (next - last - 1 > 2 * context) break;
      last = next;
    }
    const std::size_t end = std::min(edits.size(), last + 1 + context);
    std::size_t old_count = 0, new_count = 0;
    for (std::size_t e = first; e < end; ++e) {
      if (edits[e].op != Op::kAdd) ++old_count;
      if (edits[e].op != Op::kRemove) ++new_count;
    }
    lines.push_back(hunkHeader(edits[first].old_line, old_count, edits[first].new_line, new_count));
    for (std::size_t e = first; e < end; ++e) {
      const Edit& d = edits[e];
      const Line& line = d.op == Op::kAdd ? b[d.new_line] : a[d.old_line];
      const char mark = d.op == Op::kSame ? ' ' : d.op == Op::kAdd ? '+' : '-';
      if (d.op == Op::kAdd) ++diff.added;
      if (d.op == Op::kRemove) ++diff.removed;
      lines.push_back(mark + std::string(line.text) + "\n");
      if (!line.eol) lines.push_back("\\ No newline at end of file\n");
    }
    k = end;
  }

  for (const auto& line : lines) {
    if (diff.text.size() + line.size() > options.max_bytes) {
      diff.truncated = true;
      break;
    }
    diff.text += line;
  }
  return diff;
}

}  // namespace kiln
