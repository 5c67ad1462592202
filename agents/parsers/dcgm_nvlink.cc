// `dcgmi nvlink -e -g G -j` to the normalized document of README.md. dcgmi prints one document
// per GPU through its DcgmiOutputJson tree (read from DCGM's dcgmi/Nvlink.cpp and
// DcgmiOutput.cpp):
//   {"header": ["NVLINK Error Counts", "GPU 0"],
//    "body": {"Link 0": {"children": {"CRC FLIT Error": {"value": "0"}, ...}}, ...}}
// Counter values are strings. A counter DCGM could not read is missing from the tree and
// announced by a plain "Warning: Unable to retrieve ..." line on stdout. Several documents (one
// `dcgmi nvlink` run per GPU, concatenated) are read in order.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agents/parsers/formats.h"
#include "agents/parsers/text_util.h"

namespace kiln::parsers {
namespace {

constexpr std::string_view kWhat = "dcgmi nvlink JSON";

using nlohmann::json;

struct Counter {
  const char* dcgmName;
  const char* key;
};
constexpr Counter kCounters[] = {{"CRC FLIT Error", "crc_flit"},
                                 {"CRC Data Error", "crc_data"},
                                 {"Replay Error", "replay"},
                                 {"Recovery Error", "recovery"}};

kiln::Error problem(std::size_t document, const std::string& message) {
  return kiln::invalidContent(std::string(kWhat) + ": document " + std::to_string(document) +
                              ": " + message);
}

// The number N of a label "<prefix>N" ("GPU 3", "Link 17").
std::optional<std::int64_t> numberAfter(std::string_view label, std::string_view prefix) {
  if (!label.starts_with(prefix)) return std::nullopt;
  std::string_view digits = trim(label.substr(prefix.size()));
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return value;
}

json counterValue(const json& node) {
  const json* value = &node;
  if (node.is_object()) {
    auto it = node.find("value");
    if (it == node.end()) return nullptr;
    value = &*it;
  }
  std::optional<json> number;
  if (value->is_number_integer()) number = *value;
  else if (value->is_string()) number = parseJsonNumber(trim(value->get_ref<const std::string&>()));
  // Error counters count up from 0: a negative value, or one past int64 (which would wrap in
  // the totals), is not a reading.
  if (number && number->is_number_integer() && !number->is_number_unsigned() && number->get<std::int64_t>() >= 0)
    return *number;
  if (number && number->is_number_unsigned() &&
      number->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return number->get<std::int64_t>();
  return nullptr;  // "N/A" and other blanks
}

// a + b, held at the largest int64 rather than overflowing (undefined behaviour).
std::int64_t saturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::int64_t>::max() : sum;
}

}  // namespace

kiln::Result<json> parseDcgmNvlinkJson(std::string_view text) {
  kiln::Result<JsonDocuments> docs = parseJsonDocuments(text, kWhat);
  if (!docs) return docs.error();
  if (docs->documents.empty()) {
    return kiln::invalidContent(std::string(kWhat) + ": no JSON document in the output");
  }
  json gpus = json::array();
  json totals = json::object();
  for (const Counter& counter : kCounters) totals[counter.key] = 0;

  for (std::size_t d = 0; d < docs->documents.size(); ++d) {
    const json& doc = docs->documents[d];
    if (!doc.is_object()) return problem(d, "is not an object");
    std::optional<std::int64_t> gpuId;
    if (auto header = doc.find("header"); header != doc.end() && header->is_array()) {
      for (const json& line : *header) {
        if (line.is_string() && !gpuId) gpuId = numberAfter(line.get<std::string>(), "GPU ");
      }
    }
    if (!gpuId) return problem(d, "no \"GPU <id>\" in its \"header\"");

    // A GPU none of whose counters could be read has no "body" at all.
    std::vector<std::pair<std::int64_t, json>> links;
    if (auto body = doc.find("body"); body != doc.end()) {
      if (!body->is_object()) return problem(d, "\"body\" is not an object");
      for (const auto& [label, node] : body->items()) {
        std::optional<std::int64_t> link = numberAfter(label, "Link ");
        if (!link) continue;
        const json* children = node.is_object() && node.contains("children") ? &node["children"] : nullptr;
        if (children == nullptr || !children->is_object()) {
          return problem(d, "\"" + label + "\" has no \"children\" object");
        }
        json entry{{"link", *link}};
        for (const Counter& counter : kCounters) {
          auto it = children->find(counter.dcgmName);
          entry[counter.key] = it == children->end() ? json(nullptr) : counterValue(*it);
          if (entry[counter.key].is_number_integer()) {
            totals[counter.key] = saturatingAdd(totals[counter.key].get<std::int64_t>(),
                                                entry[counter.key].get<std::int64_t>());
          }
        }
        links.emplace_back(*link, std::move(entry));
      }
    }
    // jsoncpp sorts keys as strings ("Link 10" before "Link 2"); order by link number.
    std::sort(links.begin(), links.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    json linkArray = json::array();
    for (auto& [number, entry] : links) linkArray.push_back(std::move(entry));
    gpus.push_back({{"gpu_id", *gpuId}, {"links", std::move(linkArray)}});
  }
  return json{{"gpus", std::move(gpus)}, {"totals", std::move(totals)},
              {"notes", docs->otherLines}};
}

}  // namespace kiln::parsers
