#include "agents/parsers/text_util.h"

#include "agents/parsers/parsers.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace kiln::parsers {

std::string describePosition(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::string_view before = text.substr(0, offset);
  std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  std::size_t lastNewline = before.rfind('\n');
  std::size_t column = lastNewline == std::string_view::npos ? offset + 1 : offset - lastNewline;
  return "line " + std::to_string(line) + " column " + std::to_string(column);
}

std::string sanitizeUtf8(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t lowest = 0;  // smallest code point this length may encode (no overlongs)
    if (byte < 0x80) {
      out.push_back(static_cast<char>(byte));
      ++i;
      continue;
    } else if ((byte & 0xE0) == 0xC0) {
      length = 2, lowest = 0x80;
    } else if ((byte & 0xF0) == 0xE0) {
      length = 3, lowest = 0x800;
    } else if ((byte & 0xF8) == 0xF0) {
      length = 4, lowest = 0x10000;
    }
    bool valid = length != 0 && i + length <= text.size();
    std::uint32_t codePoint = length == 0 ? 0 : byte & (0x7F >> length);
    for (std::size_t k = 1; valid && k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xC0) == 0x80;
      codePoint = (codePoint << 6) | (next & 0x3F);
    }
    valid = valid && codePoint >= lowest && codePoint <= 0x10FFFF &&
            !(codePoint >= 0xD800 && codePoint <= 0xDFFF);
    if (valid) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out.append(kReplacement);
      ++i;
    }
  }
  return out;
}

std::string_view trim(std::string_view text) {
  static constexpr std::string_view kSpace = " \t\r\n\f\v";
  std::size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  std::size_t last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Whether `text` is exactly one JSON number; sets `integral` when it has no fraction/exponent.
bool isJsonNumber(std::string_view text, bool& integral) {
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  if (i >= text.size() || !isDigit(text[i])) return false;
  if (text[i] == '0') {
    ++i;
  } else {
    while (i < text.size() && isDigit(text[i])) ++i;
  }
  integral = true;
  if (i < text.size() && text[i] == '.') {
    integral = false;
    ++i;
    if (i >= text.size() || !isDigit(text[i])) return false;
    while (i < text.size() && isDigit(text[i])) ++i;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    integral = false;
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (i >= text.size() || !isDigit(text[i])) return false;
    while (i < text.size() && isDigit(text[i])) ++i;
  }
  return i == text.size();
}

// The message of a nlohmann parse error without its "[json.exception...] parse error at line
// L, column C: " prefix: positions are given by describePosition over the whole text instead.
std::string parseErrorReason(const nlohmann::json::parse_error& e) {
  std::string_view what = e.what();
  std::size_t column = what.find("column ");
  std::size_t colon = column == std::string_view::npos ? what.find(": ") : what.find(": ", column);
  return std::string(colon == std::string_view::npos ? what : what.substr(colon + 2));
}

kiln::Error jsonError(std::string_view what, std::string_view text, std::size_t offset,
                      const nlohmann::json::parse_error& e) {
  return kiln::invalidContent(std::string(what) + ": " + describePosition(text, offset) + ": " +
                              parseErrorReason(e));
}

kiln::Error numberTooLarge(std::string_view what, const nlohmann::json::out_of_range& e) {
  std::string reason = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e999'"
  if (auto pos = reason.find("] "); pos != std::string::npos) reason.erase(0, pos + 2);
  return kiln::invalidContent(std::string(what) + ": " + reason);
}

// The end (one past the closing brace) of the JSON value starting at `start`, or text.size()
// when its brackets never balance (truncated output).
std::size_t jsonValueEnd(std::string_view text, std::size_t start) {
  int depth = 0;
  bool inString = false;
  bool escaped = false;
  for (std::size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return text.size();
}

// The first reason not to hand `text` to nlohmann, with the offset where it shows: nesting
// deeper than kMaxNestingDepth (its parser keeps its own stack, but dump() and comparisons
// recurse) or more than kMaxJsonValues values (its DOM costs ~250 bytes per small value: 16 MiB
// of tiny objects would take ~350 MB). Values are counted as the '[', '{' and ',' outside
// strings, which is at least the number of values less one; `values` carries the count over
// the documents of one output.
struct ShapeProblem {
  std::size_t offset;
  std::string reason;
};

std::optional<ShapeProblem> jsonShapeProblem(std::string_view text, std::size_t& values) {
  std::size_t depth = 0;
  ++values;
  bool inString = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNestingDepth) {
        return ShapeProblem{i, "nested more than " + std::to_string(kMaxNestingDepth) + " levels deep"};
      }
      ++values;
    } else if (c == '}' || c == ']') {
      if (depth > 0) --depth;
    } else if (c == ',') {
      ++values;
    }
    if (values > kMaxJsonValues) {
      return ShapeProblem{i, "more than " + std::to_string(kMaxJsonValues) + " values"};
    }
  }
  return std::nullopt;
}

kiln::Error shapeError(std::string_view what, std::string_view text, std::size_t base,
                       const ShapeProblem& problem) {
  return kiln::invalidContent(std::string(what) + ": " + describePosition(text, base + problem.offset) +
                              ": " + problem.reason);
}

}  // namespace

std::optional<nlohmann::json> parseJsonNumber(std::string_view text) {
  bool integral = false;
  if (!isJsonNumber(text, integral)) return std::nullopt;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (integral) {
    std::int64_t signedValue = 0;
    if (std::from_chars(first, last, signedValue).ec == std::errc()) return nlohmann::json(signedValue);
    std::uint64_t unsignedValue = 0;
    if (std::from_chars(first, last, unsignedValue).ec == std::errc()) {
      return nlohmann::json(unsignedValue);
    }
  }
  double value = 0;
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end != last) return std::nullopt;
  return nlohmann::json(value);
}

kiln::Result<nlohmann::json> parseJsonText(std::string_view text, std::string_view what) {
  std::size_t values = 0;
  if (std::optional<ShapeProblem> shape = jsonShapeProblem(text, values)) {
    return shapeError(what, text, 0, *shape);
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts the characters read, the offending one included.
    return jsonError(what, text, e.byte == 0 ? 0 : e.byte - 1, e);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number too large for a double ("1e999"): nlohmann throws out_of_range, not parse_error.
    return numberTooLarge(what, e);
  }
}

kiln::Result<JsonDocuments> parseJsonDocuments(std::string_view text, std::string_view what) {
  JsonDocuments result;
  std::size_t values = 0;  // over all documents
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t lineEnd = text.find('\n', pos);
    if (lineEnd == std::string_view::npos) lineEnd = text.size();
    std::string_view line = text.substr(pos, lineEnd - pos);
    std::string_view content = trim(line);
    if (content.empty()) {
      pos = lineEnd + 1;
      continue;
    }
    if (content.front() != '{') {
      result.otherLines.push_back(sanitizeUtf8(content));
      pos = lineEnd + 1;
      continue;
    }
    std::size_t start = pos + static_cast<std::size_t>(content.data() - line.data());
    std::size_t end = jsonValueEnd(text, start);
    std::string_view slice = text.substr(start, end - start);
    if (std::optional<ShapeProblem> shape = jsonShapeProblem(slice, values)) {
      return shapeError(what, text, start, *shape);
    }
    try {
      result.documents.push_back(nlohmann::json::parse(slice.begin(), slice.end()));
    } catch (const nlohmann::json::parse_error& e) {
      return jsonError(what, text, start + (e.byte == 0 ? 0 : e.byte - 1), e);
    } catch (const nlohmann::json::out_of_range& e) {
      return numberTooLarge(what, e);
    }
    pos = end;  // the rest of the closing line is looked at like any other line
  }
  return result;
}

}  // namespace kiln::parsers
