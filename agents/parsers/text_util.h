#pragma once
// Helpers shared by the parsers of this folder (not part of the public API).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::parsers {

// "line L column C" (both 1-based, columns in bytes) of byte `offset` in `text`; an offset past
// the end names the end of the text.
std::string describePosition(std::string_view text, std::size_t offset);

// `text` with every byte sequence that is not valid UTF-8 replaced by U+FFFD.
std::string sanitizeUtf8(std::string_view text);

// `text` without leading and trailing ASCII white space.
std::string_view trim(std::string_view text);

// The number `text` spells in JSON number grammar ("12", "-3", "0.5", "1e3"; not "012", "+1",
// "0x1F", "16x"), as an integer when it is one that fits 64 bits, else as a double.
std::optional<nlohmann::json> parseJsonNumber(std::string_view text);

// Parses all of `text` as one JSON document. Errors: kInvalidContent "<what>: line L column C:
// <reason>".
kiln::Result<nlohmann::json> parseJsonText(std::string_view text, std::string_view what);

// Tools such as dcgmi print JSON documents mixed with plain lines ("Warning: ...", banners).
// A document starts on a line whose first non-blank character is '{' and ends where its braces
// balance; every other non-blank line is returned in `otherLines`.
struct JsonDocuments {
  std::vector<nlohmann::json> documents;
  std::vector<std::string> otherLines;
};
// Errors: kInvalidContent "<what>: line L column C: <reason>" (positions in all of `text`).
kiln::Result<JsonDocuments> parseJsonDocuments(std::string_view text, std::string_view what);

}  // namespace kiln::parsers
