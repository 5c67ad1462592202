#include "cli/time_text.h"

#include <cstdio>
#include <ctime>

namespace kiln::cli {

Result<std::chrono::seconds> parseDuration(std::string_view text) {
  const std::string shown(text);
  auto bad = [&](const std::string& why) -> Error {
    return invalidArgument("'" + shown + "' is not a duration (" + why + "; e.g. 90s, 15m, 2h, 1h30m)");
  };
  if (text.empty()) return bad("empty");
  constexpr std::string_view kUnits = "hms";
  constexpr std::int64_t kUnitSeconds[] = {3600, 60, 1};
  std::size_t next_unit = 0;  // units must come in the order h, m, s
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::int64_t n = 0;
    const std::size_t digits_start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > 1'000'000'000) return bad("too large");
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    if (i == digits_start) return bad("expected a number");
    if (i == text.size()) return bad("every number needs a unit: h, m or s");
    const auto unit = kUnits.find(text[i]);
    if (unit == std::string_view::npos) return bad("unknown unit '" + std::string(1, text[i]) + "'");
    if (unit < next_unit) return bad("units go h, m, s, each once");
    next_unit = unit + 1;
    total += n * kUnitSeconds[unit];
    ++i;
  }
  if (total <= 0) return bad("must be above zero");
  if (total > 30 * 86400) return bad("at most 30 days");
  return std::chrono::seconds(total);
}

std::string formatDuration(std::chrono::milliseconds d) {
  const std::int64_t ms = d.count() < 0 ? 0 : d.count();
  char buf[48];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
  } else if (ms < 10'000) {
    std::snprintf(buf, sizeof buf, "%lld.%llds", static_cast<long long>(ms / 1000),
                  static_cast<long long>(ms % 1000 / 100));
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ms / 1000));
  } else if (ms < 3'600'000) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(ms / 60'000),
                  static_cast<long long>(ms % 60'000 / 1000));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(ms / 3'600'000),
                  static_cast<long long>(ms % 3'600'000 / 60'000));
  }
  return buf;
}

std::string formatTimestamp(std::int64_t epoch_ms) {
  const std::time_t seconds = static_cast<std::time_t>(epoch_ms / 1000 - (epoch_ms % 1000 < 0 ? 1 : 0));
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return std::to_string(epoch_ms);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string shorten(std::string_view text, std::size_t max_chars) {
  std::size_t chars = 0, cut = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == max_chars - 3) cut = i;
    if (++chars > max_chars) return std::string(text.substr(0, cut)) + "...";
  }
  return std::string(text);
}

}  // namespace kiln::cli
