#include "cli/yaml_writer.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace kiln::cli {
namespace {

using nlohmann::json;

// Plain (unquoted) only for a conservative set: starts with a letter, then letters, digits
// and "_.-/", and not a word some YAML reader takes for a boolean, null or special float.
bool plainIsSafe(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' && c != '/') return false;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* const kReserved[] = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf"};
  for (const char* r : kReserved)
    if (lower == r) return false;
  return true;
}

std::string scalarText(const json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return plainIsSafe(s) ? s : v.dump();  // a JSON string is a valid YAML double-quoted scalar
  }
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();  // null, booleans, numbers
}

bool isInline(const json& v) { return !v.is_structured() || v.empty(); }

void writeBlock(const json& v, int indent, std::string& out);

void writeEntry(const std::string& key, const json& v, int indent, std::string& out) {
  out.append(static_cast<std::size_t>(indent), ' ');
  out += scalarText(json(key)) + ":";
  if (isInline(v)) {
    out += " " + scalarText(v) + "\n";
  } else {
    out += "\n";
    writeBlock(v, indent + 2, out);
  }
}

// Writes a non-empty object or array, every line starting with `indent` spaces.
void writeBlock(const json& v, int indent, std::string& out) {
  if (v.is_object()) {
    if (auto it = v.find("name"); it != v.end()) writeEntry("name", *it, indent, out);
    for (const auto& [k, item] : v.items())
      if (k != "name") writeEntry(k, item, indent, out);
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  for (const auto& item : v) {
    if (isInline(item)) {
      out += pad + "- " + scalarText(item) + "\n";
      continue;
    }
    // Write the item two deeper, then put "- " in the first line's extra indentation.
    std::string nested;
    writeBlock(item, indent + 2, nested);
    nested.replace(0, static_cast<std::size_t>(indent) + 2, pad + "- ");
    out += nested;
  }
}

}  // namespace

std::string toYaml(const json& value) {
  if (isInline(value)) return scalarText(value) + "\n";
  std::string out;
  writeBlock(value, 0, out);
  return out;
}

}  // namespace kiln::cli
