#pragma once
// Plain-text rendering for people: aligned tables and key/value blocks. Pure functions.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

// Columns left-aligned, two spaces apart, widths by UTF-8 code points; no trailing spaces.
// An empty cell prints as "-". Rows shorter than `headers` are padded with "-".
std::string renderTable(const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows);

// "key:   value" lines with the values aligned.
std::string renderKeyValues(const std::vector<std::pair<std::string, std::string>>& pairs);

// One JSON value as a table cell: strings as is, null as "", numbers and booleans as JSON,
// objects as "k=v k=v" (sorted by key), arrays as "a,b,c".
std::string cellText(const nlohmann::json& value);

// cellText of `object[key]`, or "" when `object` is not an object or lacks the key.
std::string field(const nlohmann::json& object, const std::string& key);

// A device's `bmc` (issue 32) as "address:port (protocol, credential NAME)", "" when it has none.
std::string bmcText(const nlohmann::json& device);

}  // namespace kiln::cli
