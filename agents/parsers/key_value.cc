// Lines "key=value" or "key: value" (whichever separator comes first on the line), as printed
// by simple tools and scripts; blank lines and lines starting with '#' are skipped.

#include <cctype>
#include <optional>
#include <string>

#include "agents/parsers/formats.h"
#include "agents/parsers/text_util.h"

namespace kiln::parsers {
namespace {

using nlohmann::json;

std::optional<bool> boolWord(std::string_view value) {
  std::string lower(value);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true") return true;
  if (lower == "false") return false;
  return std::nullopt;
}

json typedValue(std::string_view value) {
  if (std::optional<json> number = parseJsonNumber(value)) return *number;
  if (std::optional<bool> flag = boolWord(value)) return *flag;
  return sanitizeUtf8(value);
}

}  // namespace

kiln::Result<json> parseKeyValue(std::string_view text) {
  json out = json::object();
  std::size_t lineNumber = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++lineNumber;
    if (line.empty() || line.front() == '#') continue;
    std::size_t separator = line.find_first_of("=:");
    std::string where = "key-value: line " + std::to_string(lineNumber);
    if (separator == std::string_view::npos) {
      return kiln::invalidContent(where + " has neither '=' nor ':'");
    }
    std::string_view key = trim(line.substr(0, separator));
    if (key.empty()) return kiln::invalidContent(where + " has an empty key");
    out[sanitizeUtf8(key)] = typedValue(trim(line.substr(separator + 1)));  // the last one wins
    if (out.size() > kMaxJsonValues) {
      return kiln::invalidContent(where + ": more than " + std::to_string(kMaxJsonValues) + " keys");
    }
  }
  return out;
}

}  // namespace kiln::parsers
