#pragma once
// Durations and timestamps as people type and read them. Pure functions.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace kiln::cli {

// "90s", "15m", "2h", "1h30m", "1h30m15s": hours, minutes and seconds, each at most once and in
// that order, whole numbers, at least one; the total must be above zero and at most 30 days.
// Errors: kInvalidArgument with a message naming the text.
Result<std::chrono::seconds> parseDuration(std::string_view text);

// A duration for tables and progress lines: "350ms", "4.2s", "45s", "14m05s", "2h03m".
// Negative durations print as "0ms".
std::string formatDuration(std::chrono::milliseconds d);

// Milliseconds since the Unix epoch as UTC "2026-03-01T12:00:05Z".
std::string formatTimestamp(std::int64_t epoch_ms);

// At most `max_chars` code points of UTF-8 `text`, ending in "..." when shortened; never
// splits a multi-byte sequence. Pre-condition: max_chars >= 3.
std::string shorten(std::string_view text, std::size_t max_chars);

}  // namespace kiln::cli
