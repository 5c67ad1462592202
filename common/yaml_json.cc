#include "common/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <nlohmann/json.hpp>

namespace kiln {
namespace {

using nlohmann::json;

json scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted: always a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::int64_t i = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && p == s.data() + s.size()) return i;
  double d = 0;
  auto [p2, ec2] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec2 == std::errc() && p2 == s.data() + s.size() && s.find_first_of("0123456789") == 0)
    return d;
  return s;
}

// YAML -> JSON with bounds: aliases are shared nodes in yaml-cpp, and a document of a few KB
// can name one a billion times (or itself); depth and the number of values made are capped.
class Converter {
 public:
  explicit Converter(std::size_t max_values) : max_values_(max_values) {}

  json convert(const YAML::Node& node, std::size_t depth) {
    if (depth > kMaxDocumentDepth)
      throw Bound{"YAML nested deeper than " + std::to_string(kMaxDocumentDepth) + " levels (an alias cycle?)"};
    if (++values_ > max_values_)
      throw Bound{"YAML expands to more than " + std::to_string(max_values_) + " values (aliases repeated?)"};
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        return scalar(node);
      case YAML::NodeType::Sequence: {
        json arr = json::array();
        for (const auto& item : node) arr.push_back(convert(item, depth + 1));
        return arr;
      }
      case YAML::NodeType::Map: {
        json obj = json::object();
        for (const auto& kv : node) obj[kv.first.as<std::string>()] = convert(kv.second, depth + 1);
        return obj;
      }
    }
    return nullptr;
  }

  struct Bound {
    std::string what;
  };

 private:
  std::size_t max_values_;
  std::size_t values_ = 0;
};

// An upper bound of the nesting yaml-cpp's recursive parser would meet, without parsing: per
// line, the indentation plus the block indicators ("- ", "? ", ": ") on it, plus the flow
// brackets open at that point. Quoted scalars and comments are skipped.
std::size_t yamlNestingBound(std::string_view text) {
  std::size_t worst = 0, flow = 0, line_depth = 0;
  bool at_indent = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      at_indent = true;
      line_depth = 0;
      continue;
    }
    if (at_indent && c == ' ') {
      ++line_depth;
    } else {
      at_indent = false;
      if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
        while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      } else if (c == '"' || c == '\'') {
        for (++i; i < text.size() && text[i] != c; ++i)
          if (c == '"' && text[i] == '\\') ++i;
      } else if (c == '[' || c == '{') {
        ++flow;
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      } else if ((c == '-' || c == '?' || c == ':') && (i + 1 == text.size() || text[i + 1] == ' ')) {
        ++line_depth;
      }
    }
    worst = std::max(worst, line_depth + flow);
  }
  return worst;
}

// The deepest bracket nesting of a JSON text (strings skipped).
std::size_t jsonNesting(std::string_view text) {
  std::size_t depth = 0, worst = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '[' || c == '{') {
      worst = std::max(worst, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return worst;
}

}  // namespace

std::optional<Utf8Problem> findInvalidUtf8(std::string_view text) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = 0;
    std::uint32_t min = 0, cp = 0;
    if (c < 0x80) len = 1;
    else if ((c & 0xE0) == 0xC0) len = 2, min = 0x80, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000, cp = c & 0x07;
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 either.
    if (ok && len > 1) ok = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) return Utf8Problem{line, column, c};
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += len;
  }
  return std::nullopt;
}

std::string describe(const Utf8Problem& problem) {
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", problem.byte);
  return std::string("not UTF-8 text (byte ") + byte + ")";
}

Status checkYamlNesting(std::string_view text) {
  if (yamlNestingBound(text) > kMaxDocumentDepth)
    return invalidArgument("YAML nested deeper than " + std::to_string(kMaxDocumentDepth) + " levels");
  return Ok{};
}

Result<json> yamlToJson(std::string_view text) {
  try {
    if (auto bad = findInvalidUtf8(text)) {
      return invalidArgument("YAML error at line " + std::to_string(bad->line) + ", column " +
                             std::to_string(bad->column) + ": " + describe(*bad));
    }
    if (auto nesting = checkYamlNesting(text); !nesting.ok()) return nesting.error();
    YAML::Node root = YAML::Load(std::string(text));
    // A document without aliases makes fewer values than it has bytes; aliases may repeat
    // values, within reason.
    return Converter(4 * text.size() + 1024).convert(root, 0);
  } catch (const Converter::Bound& e) {
    return invalidArgument(e.what);
  } catch (const YAML::Exception& e) {
    return invalidArgument("YAML error at line " + std::to_string(e.mark.line + 1) + ", column " +
                           std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

Result<json> parseJson(std::string_view text) {
  // nlohmann's parser is iterative, but copies, dumps and comparisons of the value recurse.
  if (jsonNesting(text) > kMaxDocumentDepth)
    return invalidArgument("malformed JSON: nested deeper than " + std::to_string(kMaxDocumentDepth) + " levels");
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for numbers that overflow ("1e999999"): both bad input.
    std::string msg = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> drop the prefix.
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    return invalidArgument("malformed JSON: " + msg);
  }
}

}  // namespace kiln
