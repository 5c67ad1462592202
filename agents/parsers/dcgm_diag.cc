// `dcgmi diag -r N -j` to the normalized document of README.md. Two layouts (read from DCGM's
// dcgmi/Diag.cpp and nvvs/include/NvvsJsonStrings.h):
// - DCGM 3.x: root "DCGM GPU Diagnostic" {version, "Driver Version Detected", test_categories};
//   per-GPU results carry "gpu_id" as a string ("0"); Deployment results carry gpu_id (a
//   number) only when they have an error, and their warning text under "warnings"; CPU EUD
//   results carry "cpu_id". Older NVVS builds wrote "gpu_ids" and plain-string warnings.
// - DCGM 4.x: root "DCGM Diagnostic" {test_categories} beside top-level "metadata" {version,
//   "Driver Version Detected"} and "entity_groups"; results carry entity_group, entity_group_id,
//   entity_id; each test may carry a "test_summary" result without an entity.
// Both: a diagnostic that could not run prints {root: {version, runtime_error}}.

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "agents/parsers/formats.h"
#include "agents/parsers/text_util.h"

namespace kiln::parsers {
namespace {

constexpr std::string_view kWhat = "dcgmi diag JSON";
constexpr const char* kRoot4 = "DCGM Diagnostic";
constexpr const char* kRoot3 = "DCGM GPU Diagnostic";

using nlohmann::json;

kiln::Error problem(const std::string& where, const std::string& message) {
  return kiln::invalidContent(std::string(kWhat) + ": " + where + (where.empty() ? "" : ": ") +
                              message);
}

// Canonical status ("Pass", "Skip", "Warn", "Fail", "Not Run") of a status word in any case.
std::optional<std::string> canonicalStatus(const json& value) {
  if (!value.is_string()) return std::nullopt;
  std::string word = value.get<std::string>();
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (word == "pass" || word == "passed") return "Pass";
  if (word == "skip" || word == "skipped") return "Skip";
  if (word == "warn" || word == "warning") return "Warn";
  if (word == "fail" || word == "failed") return "Fail";
  if (word == "not run" || word == "not_run") return "Not Run";
  return std::nullopt;
}

// Severity order used for "overall": Fail > Warn > everything else.
int rank(const std::string& status) {
  if (status == "Fail") return 2;
  if (status == "Warn") return 1;
  return 0;
}

json stringOrNull(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? *it : json(nullptr);
}

// An entity id given as a number or a decimal string ("0"); nullopt when it is neither.
std::optional<json> entityId(const json& value) {
  if (value.is_number_integer()) return value;
  if (value.is_string()) {
    std::optional<json> number = parseJsonNumber(trim(value.get_ref<const std::string&>()));
    if (number && number->is_number_integer()) return number;
  }
  return std::nullopt;
}

kiln::Result<json> warning(const json& raw, const std::string& where) {
  if (raw.is_string()) return json{{"error_id", nullptr}, {"message", raw}};
  if (!raw.is_object()) return problem(where, "a warning is neither an object nor a string");
  json message = stringOrNull(raw, "warning");
  if (message.is_null()) message = stringOrNull(raw, "warnings");  // 3.x Deployment tests
  if (message.is_null()) return problem(where, "a warning has no \"warning\" text");
  json out{{"error_id", raw.value("error_id", json(nullptr))}, {"message", message}};
  if (!out["error_id"].is_number_integer()) out["error_id"] = nullptr;
  for (const char* key : {"error_category", "error_severity"}) {
    if (raw.contains(key) && raw[key].is_number_integer()) out[key] = raw[key];
  }
  return out;
}

// One entry of a test's "results" (or its "test_summary").
kiln::Result<json> result(const json& raw, const std::string& where) {
  if (!raw.is_object()) return problem(where, "is not an object");
  std::optional<std::string> status = canonicalStatus(raw.value("status", json(nullptr)));
  if (!status) {
    return problem(where, "unknown status " + raw.value("status", json(nullptr)).dump());
  }
  json entityGroup = stringOrNull(raw, "entity_group");
  json id = nullptr;
  for (const char* key : {"entity_id", "gpu_id", "gpu_ids", "cpu_id"}) {
    auto it = raw.find(key);
    if (it == raw.end()) continue;
    std::optional<json> parsed = entityId(*it);
    if (!parsed) return problem(where, std::string("\"") + key + "\" " + it->dump() + " is not an id");
    id = *parsed;
    if (entityGroup.is_null()) entityGroup = std::string_view(key) == "cpu_id" ? "CPU" : "GPU";
    break;
  }
  json warnings = json::array();
  if (auto it = raw.find("warnings"); it != raw.end()) {
    if (!it->is_array()) return problem(where, "\"warnings\" is not an array");
    for (const json& w : *it) {
      if (w.is_null()) continue;  // jsoncpp leaves nulls where an error index was skipped
      kiln::Result<json> parsed = warning(w, where);
      if (!parsed) return parsed.error();
      warnings.push_back(std::move(*parsed));
    }
  }
  json info = json::array();
  if (auto it = raw.find("info"); it != raw.end()) {
    if (it->is_string()) info.push_back(*it);  // 3.x: one string
    if (it->is_array()) {
      for (const json& line : *it) {
        if (line.is_string()) info.push_back(line);
      }
    }
  }
  return json{{"entity_group", entityGroup}, {"entity_id", id}, {"status", *status},
              {"warnings", std::move(warnings)}, {"info", std::move(info)}};
}

std::string joinMessages(const json& warnings) {
  std::string joined;
  for (const json& w : warnings) {
    if (!joined.empty()) joined += "; ";
    joined += w["message"].get<std::string>();
  }
  return joined;
}

json failedEntry(const std::string& test, const json& r) {
  json errorIds = json::array();
  for (const json& w : r["warnings"]) {
    if (!w["error_id"].is_null()) errorIds.push_back(w["error_id"]);
  }
  return {{"test", test}, {"entity_group", r["entity_group"]}, {"entity_id", r["entity_id"]},
          {"message", joinMessages(r["warnings"])}, {"error_ids", std::move(errorIds)}};
}

}  // namespace

kiln::Result<json> parseDcgmDiagJson(std::string_view text) {
  kiln::Result<JsonDocuments> docs = parseJsonDocuments(text, kWhat);
  if (!docs) return docs.error();
  if (docs->documents.size() != 1) {
    return problem("", "expected one JSON document, found " +
                           std::to_string(docs->documents.size()));
  }
  const json& doc = docs->documents.front();
  int major = 0;
  const json* root = nullptr;
  if (doc.is_object() && doc.contains(kRoot4) && doc[kRoot4].is_object()) {
    major = 4, root = &doc[kRoot4];
  } else if (doc.is_object() && doc.contains(kRoot3) && doc[kRoot3].is_object()) {
    major = 3, root = &doc[kRoot3];
  } else {
    return problem("", std::string("no \"") + kRoot4 + "\" (DCGM 4.x) or \"" + kRoot3 +
                           "\" (DCGM 3.x) object at the top level");
  }
  const json& metadata = major == 4 && doc.contains("metadata") && doc["metadata"].is_object()
                             ? doc["metadata"]
                             : *root;

  json out{{"dcgm_major", major},
           {"dcgm_version", stringOrNull(metadata, "version")},
           {"driver_version", stringOrNull(metadata, "Driver Version Detected")},
           {"runtime_error", stringOrNull(*root, "runtime_error")},
           {"tests", json::array()},
           {"failed", json::array()}};
  int worst = out["runtime_error"].is_null() ? 0 : 2;
  if (!out["runtime_error"].is_null()) {
    out["failed"].push_back({{"test", "runtime"}, {"entity_group", nullptr}, {"entity_id", nullptr},
                             {"message", out["runtime_error"]}, {"error_ids", json::array()}});
  }

  auto categories = root->find("test_categories");
  if (categories == root->end()) {
    if (out["runtime_error"].is_null()) return problem("", "no test_categories and no runtime_error");
  } else if (!categories->is_array()) {
    return problem("", "test_categories is not an array");
  } else {
    for (std::size_t c = 0; c < categories->size(); ++c) {
      const json& category = (*categories)[c];
      std::string where = "test_categories[" + std::to_string(c) + "]";
      if (!category.is_object()) return problem(where, "is not an object");
      json categoryName = stringOrNull(category, "category");
      auto tests = category.find("tests");
      if (tests == category.end()) continue;
      if (!tests->is_array()) return problem(where, "\"tests\" is not an array");
      for (std::size_t t = 0; t < tests->size(); ++t) {
        const json& test = (*tests)[t];
        std::string testWhere = where + ".tests[" + std::to_string(t) + "]";
        if (test.is_null()) continue;  // jsoncpp hole left by a test that did not run
        if (!test.is_object() || !test.contains("name") || !test["name"].is_string()) {
          return problem(testWhere, "has no name");
        }
        std::string name = test["name"].get<std::string>();
        json normalized{{"name", name}, {"category", categoryName}, {"results", json::array()},
                        {"summary", nullptr}};
        bool anyResultFailed = false;
        if (auto results = test.find("results"); results != test.end()) {
          if (!results->is_array()) return problem(testWhere, "\"results\" is not an array");
          for (std::size_t r = 0; r < results->size(); ++r) {
            if ((*results)[r].is_null()) continue;
            kiln::Result<json> parsed =
                result((*results)[r], testWhere + ".results[" + std::to_string(r) + "]");
            if (!parsed) return parsed.error();
            const std::string& status = (*parsed)["status"].get_ref<const std::string&>();
            worst = std::max(worst, rank(status));
            if (status == "Fail") {
              anyResultFailed = true;
              out["failed"].push_back(failedEntry(name, *parsed));
            }
            normalized["results"].push_back(std::move(*parsed));
          }
        }
        if (auto summary = test.find("test_summary"); summary != test.end()) {
          kiln::Result<json> parsed = result(*summary, testWhere + ".test_summary");
          if (!parsed) return parsed.error();
          const std::string& status = (*parsed)["status"].get_ref<const std::string&>();
          worst = std::max(worst, rank(status));
          // A failing summary names errors no entity owns; report it once if no entity did.
          if (status == "Fail" && !anyResultFailed) out["failed"].push_back(failedEntry(name, *parsed));
          normalized["summary"] = std::move(*parsed);
        }
        out["tests"].push_back(std::move(normalized));
      }
    }
  }
  out["overall"] = worst == 2 ? "Fail" : worst == 1 ? "Warn" : "Pass";
  return out;
}

}  // namespace kiln::parsers
