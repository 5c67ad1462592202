#include "cli/table.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kiln::cli {
namespace {

std::size_t displayWidth(const std::string& s) {
  // Count code points: every byte that is not a UTF-8 continuation byte.
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

const std::string& orDash(const std::string& s) {
  static const std::string kDash = "-";
  return s.empty() ? kDash : s;
}

void appendRow(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths,
               std::string& out) {
  std::string line;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const std::string& cell = i < cells.size() ? orDash(cells[i]) : orDash("");
    line += cell;
    if (i + 1 < widths.size()) line.append(widths[i] - displayWidth(cell) + 2, ' ');
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
}

}  // namespace

std::string renderTable(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(headers.size(), 1);
  for (std::size_t i = 0; i < headers.size(); ++i) widths[i] = std::max(widths[i], displayWidth(headers[i]));
  for (const auto& row : rows)
    for (std::size_t i = 0; i < headers.size() && i < row.size(); ++i)
      widths[i] = std::max(widths[i], displayWidth(orDash(row[i])));
  std::string out;
  appendRow(headers, widths, out);
  for (const auto& row : rows) appendRow(row, widths, out);
  return out;
}

std::string renderKeyValues(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::size_t width = 0;
  for (const auto& [k, _] : pairs) width = std::max(width, displayWidth(k) + 1);
  std::string out;
  for (const auto& [k, v] : pairs) {
    std::string line = k + ":";
    line.append(width - displayWidth(k) - 1 + 2, ' ');
    line += orDash(v);
    out += line + "\n";
  }
  return out;
}

std::string cellText(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    std::string out;
    for (const auto& [k, v] : value.items()) out += (out.empty() ? "" : " ") + k + "=" + cellText(v);
    return out;
  }
  if (value.is_array()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : ",") + cellText(v);
    return out;
  }
  return value.dump();
}

std::string field(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it == object.end() ? "" : cellText(*it);
}

std::string bmcText(const nlohmann::json& device) {
  const nlohmann::json b = device.is_object() ? device.value("bmc", nlohmann::json()) : nlohmann::json();
  if (!b.is_object()) return "";
  return field(b, "address") + ":" + field(b, "port") + " (" + field(b, "protocol") + ", credential " +
         field(b, "credential") + ")";
}

}  // namespace kiln::cli
