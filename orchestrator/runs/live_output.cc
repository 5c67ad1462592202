#include "orchestrator/runs/live_output.h"

#include <algorithm>

namespace kiln::runs {
namespace {

bool isContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The first character boundary at or after `at`.
std::size_t boundaryFrom(const std::string& s, std::size_t at) {
  while (at < s.size() && isContinuation(s[at])) ++at;
  return at;
}

}  // namespace

void appendLive(LiveStream& s, const LiveChunk& chunk, std::size_t keep) {
  const auto size = static_cast<std::int64_t>(chunk.data.size());
  if (chunk.offset < 0 || chunk.offset + size <= s.end) return;
  if (chunk.offset > s.end || s.text.empty()) {
    s.text = chunk.data;
    s.start = chunk.offset;
  } else {
    s.text.append(chunk.data, static_cast<std::size_t>(s.end - chunk.offset), std::string::npos);
  }
  s.end = chunk.offset + size;
  if (s.text.size() > keep) {
    const std::size_t cut = boundaryFrom(s.text, s.text.size() - keep);
    s.text.erase(0, cut);
    s.start += static_cast<std::int64_t>(cut);
  }
  s.start = s.end - static_cast<std::int64_t>(s.text.size());
}

LiveSlice sliceLive(const LiveStream& s, std::int64_t since) {
  LiveSlice out;
  out.end = s.end;
  const std::int64_t from = std::clamp(since, s.start, s.end);
  const std::size_t at = boundaryFrom(s.text, static_cast<std::size_t>(from - s.start));
  out.offset = s.start + static_cast<std::int64_t>(at);
  out.data = s.text.substr(at);
  return out;
}

}  // namespace kiln::runs
