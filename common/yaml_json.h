#pragma once
// YAML documents as JSON values, so that fleet files and bundles are validated one way whether
// they arrive as YAML or JSON. Plain scalars become numbers, booleans or null where YAML 1.2's
// core schema says so; quoted scalars stay strings.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"

namespace kiln {

// Documents nested deeper than this are refused (both parsers below): the libraries recurse
// (yaml-cpp's parser; copies and dumps of a JSON value), and no Kiln document needs more.
inline constexpr std::size_t kMaxDocumentDepth = 256;

// Parses YAML (JSON is YAML too). Errors: kInvalidArgument with line and column (also for text
// that is not UTF-8); a document
// nested deeper than kMaxDocumentDepth, or whose aliases expand to more than 4 values per byte
// of text (a "billion laughs"), is refused as well.
Result<nlohmann::json> yamlToJson(std::string_view text);
// Where text stops being UTF-8: the offending byte and its 1-based line and column (YAML
// documents must be UTF-8; yaml-cpp passes other bytes through, and JSON cannot carry them).
struct Utf8Problem {
  std::size_t line = 0, column = 0;
  unsigned char byte = 0;
};
std::optional<Utf8Problem> findInvalidUtf8(std::string_view text);
// "not UTF-8 text (byte 0xFF)": the words every loader uses for a Utf8Problem.
std::string describe(const Utf8Problem& problem);

// kInvalidArgument when YAML text may nest deeper than kMaxDocumentDepth (a cheap upper bound
// computed without parsing): call it before handing text to yaml-cpp, whose parser recurses.
Status checkYamlNesting(std::string_view text);
// Parses JSON; errors: kInvalidArgument with the byte offset and what was expected.
Result<nlohmann::json> parseJson(std::string_view text);

}  // namespace kiln
