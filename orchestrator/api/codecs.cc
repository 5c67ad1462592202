#include "orchestrator/api/codecs.h"

#include <charconv>

#include "common/runner_key.h"
#include "common/yaml_json.h"

namespace kiln::api {
namespace {

using nlohmann::json;

// `text` as a whole int, or nullopt (sign, digits only; no spaces, no trailing characters).
std::optional<long long> wholeNumber(std::string_view text) {
  long long n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return n;
}

// body[key] as a list of ids, when present; a field error otherwise.
std::vector<std::string> stringList(const json& body, const char* key, std::vector<FieldError>& bad) {
  std::vector<std::string> out;
  auto it = body.find(key);
  if (it == body.end()) return out;
  bool ok = it->is_array();
  if (ok)
    for (const auto& e : *it) {
      if (!e.is_string()) {
        ok = false;
        break;
      }
      out.push_back(e.get<std::string>());
    }
  if (!ok) bad.push_back({key, "must be a list of ids"});
  return out;
}

// A 422 naming every bad field, its message naming the first.
Error fieldErrors(const std::string& what, std::vector<FieldError> fields, bool one_field_detail) {
  Error bad = invalidContent(what + ": " + (fields[0].path.empty() ? "" : fields[0].path + ": ") + fields[0].message);
  bad.fields = std::move(fields);
  if (one_field_detail && bad.fields.size() == 1) bad.with("field", bad.fields[0].path);
  return bad;
}

// body[key] as a string of at most `max` bytes, when present; a field error otherwise.
void optionalText(const json& body, const char* key, std::size_t max, const std::string& message, std::string& out,
                  std::vector<FieldError>& bad) {
  auto it = body.find(key);
  if (it == body.end()) return;
  if (!it->is_string() || it->get_ref<const std::string&>().size() > max) bad.push_back({key, message});
  else out = it->get<std::string>();
}

}  // namespace

Result<json> decodeDocument(std::string_view body, std::string_view content_type, bool yaml_ok) {
  const bool is_json = content_type.find("json") != std::string_view::npos;
  if (body.empty()) return invalidArgument("the request needs a body");
  if (yaml_ok && !is_json) {
    auto first = body.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || body[first] != '{') return yamlToJson(body);
  }
  return parseJson(body);  // its errors, number overflow included, are kInvalidArgument
}

Result<core::PageRequest> decodePage(std::string_view limit, std::string_view cursor) {
  core::PageRequest p;
  p.cursor = std::string(cursor);
  if (!limit.empty()) {
    auto n = wholeNumber(limit);
    if (!n || *n < 1 || *n > 1000) return invalidArgument("limit must be a whole number from 1 to 1000");
    p.limit = static_cast<int>(*n);
  }
  return p;
}

Result<int> decodeSeconds(std::string_view text, int min, int max, int fallback, const std::string& message) {
  if (text.empty()) return fallback;
  auto n = wholeNumber(text);
  if (!n || *n < min || *n > max) return invalidArgument(message);
  return static_cast<int>(*n);
}

Status decodeChoice(std::string_view value, const std::string& name, const std::vector<std::string>& choices) {
  if (value.empty()) return Ok{};
  for (const auto& c : choices)
    if (c == value) return Ok{};
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  return fieldErrors("invalid query", {{name, "expected one of " + list}}, /*one_field_detail=*/true);
}

Result<core::HostSort> decodeHostSort(std::string_view text) {
  static const std::vector<std::pair<std::string, core::HostSortKey>> kKeys = {
      {"id", core::HostSortKey::kId},       {"pod", core::HostSortKey::kPod},
      {"state", core::HostSortKey::kState}, {"state_since", core::HostSortKey::kStateSince},
      {"reason", core::HostSortKey::kReason}};
  core::HostSort sort;
  if (text.empty()) return sort;
  std::string_view key = text;
  if (key.front() == '-') {
    sort.descending = true;
    key.remove_prefix(1);
  }
  for (const auto& [name, k] : kKeys)
    if (name == key) {
      sort.key = k;
      return sort;
    }
  std::vector<std::string> choices;
  for (const auto& [name, _] : kKeys) choices.push_back(name);
  for (const auto& [name, _] : kKeys) choices.push_back("-" + name);
  return decodeChoice(text, "sort", choices).error();
}

Result<runs::StartRequest> decodeStartRun(const json& body) {
  if (!body.is_object())
    return fieldErrors("invalid workflow run", {{"", "expected a JSON object {workflow, hosts | pods, params}"}},
                       /*one_field_detail=*/false);
  std::vector<FieldError> bad;
  for (const auto& [k, _] : body.items())
    if (k != "workflow" && k != "hosts" && k != "pods" && k != "params" && k != "purpose") bad.push_back({k, "unknown field"});
  runs::StartRequest req;
  if (!body.contains("workflow") || !body["workflow"].is_string()) bad.push_back({"workflow", "is required (a string)"});
  else req.workflow = body["workflow"].get<std::string>();
  req.hosts = stringList(body, "hosts", bad);
  req.pods = stringList(body, "pods", bad);
  // Parameters are checked by the run service against the workflow, with its other fields.
  if (body.contains("params")) req.params = body["params"];
  if (body.contains("purpose")) {
    if (!body["purpose"].is_string()) bad.push_back({"purpose", "must be a string"});
    else req.purpose = body["purpose"].get<std::string>();
  }
  if (!bad.empty()) return fieldErrors("invalid workflow run", std::move(bad), /*one_field_detail=*/true);
  return req;
}

Result<HostActionBody> decodeHostAction(const json& body) {
  if (!body.is_object())
    return fieldErrors("invalid host action", {{"", "expected a JSON object {action, reason}"}}, /*one_field_detail=*/false);
  std::vector<FieldError> bad;
  for (const auto& [k, _] : body.items())
    if (k != "action" && k != "reason" && k != "to") bad.push_back({k, "unknown field"});
  HostActionBody out;
  std::string action_name;
  if (!body.contains("action") || !body["action"].is_string()) bad.push_back({"action", "is required (a string)"});
  else action_name = body["action"].get<std::string>();
  optionalText(body, "reason", 1000, "expected a string of at most 1000 characters", out.reason, bad);
  auto action = core::parseHostAction(action_name);
  if (!action_name.empty() && (!action || core::actionKind(*action) == core::ActionKind::kSystem))
    bad.push_back({"action", "unknown action '" + action_name +
                                 "' (expected allocate, release, drain, undrain, fail, repair, "
                                 "repair_complete, quarantine, retire or override)"});
  if (action == core::HostAction::kOverride) {
    if (out.reason.empty()) bad.push_back({"reason", "an override needs a reason"});
    auto t = body.contains("to") && body["to"].is_string() ? core::parseHostState(body["to"].get<std::string>())
                                                           : std::nullopt;
    if (!t) bad.push_back({"to", "an override needs a target state"});
    out.to = t;
  } else if (body.contains("to")) {
    bad.push_back({"to", "only an override takes a target state"});
  }
  if (!bad.empty()) return fieldErrors("invalid host action", std::move(bad), /*one_field_detail=*/false);
  out.action = *action;
  return out;
}

Result<TokenBody> decodeTokenRequest(const json& body) {
  if (!body.is_object())
    return fieldErrors("invalid token request", {{"", "expected a JSON object {role, name, host}"}}, /*one_field_detail=*/false);
  std::vector<FieldError> bad;
  for (const auto& [k, _] : body.items())
    if (k != "role" && k != "name" && k != "host" && k != "runner") bad.push_back({k, "unknown field"});
  TokenBody out;
  std::optional<core::Role> role;
  if (body.contains("role") && body["role"].is_string()) role = core::parseRole(body["role"].get<std::string>());
  if (!role) bad.push_back({"role", "expected viewer, operator, admin, agent, enroll or prejob"});
  if (!body.contains("name") || !body["name"].is_string() || body["name"].get_ref<const std::string&>().empty() ||
      body["name"].get_ref<const std::string&>().size() > 100)
    bad.push_back({"name", "expected a string of 1-100 characters"});
  else out.name = body["name"].get<std::string>();
  if (body.contains("host")) {
    if (!body["host"].is_string()) bad.push_back({"host", "expected a host id"});
    else out.host = body["host"].get<std::string>();
  }
  // An out-of-band runner's agent token (issue 32): bound to the key runner:NAME, no host.
  if (body.contains("runner")) {
    if (!body["runner"].is_string() || !validRunnerName(body["runner"].get_ref<const std::string&>()))
      bad.push_back({"runner", "expected a runner's name: 1 to 63 of a-z 0-9 . _ -, starting with a letter or digit"});
    else if (body.contains("host"))
      bad.push_back({"runner", "give host or runner, not both"});
    else if (role && *role != core::Role::kAgent)
      bad.push_back({"runner", "only agent tokens act for a runner"});
    else
      out.host = runnerKey(body["runner"].get<std::string>());
  }
  if (!bad.empty()) return fieldErrors("invalid token request", std::move(bad), /*one_field_detail=*/false);
  out.role = *role;
  return out;
}

Result<EnrolmentTokenBody> decodeEnrolmentTokenRequest(std::string_view raw, std::string_view content_type) {
  EnrolmentTokenBody out;
  if (raw.find_first_not_of(" \t\r\n") == std::string_view::npos) return out;
  auto body = decodeDocument(raw, content_type, /*yaml_ok=*/false);
  if (!body.ok()) return body.error();
  if (!body->is_object())
    return fieldErrors("invalid enrolment token request", {{"", "expected no body or a JSON object {ttl_s, reenroll}"}},
                       /*one_field_detail=*/false);
  std::vector<FieldError> bad;
  for (const auto& [k, _] : body->items())
    if (k != "ttl_s" && k != "reenroll") bad.push_back({k, "unknown field (ttl_s, reenroll)"});
  constexpr std::int64_t kMin = 60, kMax = 7 * 24 * 3600;
  if (body->contains("ttl_s")) {
    const json& t = (*body)["ttl_s"];
    if (!t.is_number_integer() || t.get<std::int64_t>() < kMin || t.get<std::int64_t>() > kMax)
      bad.push_back({"ttl_s", "expected whole seconds from 60 to 604800 (7 days)"});
    else out.ttl = std::chrono::seconds(t.get<std::int64_t>());
  }
  if (body->contains("reenroll")) {
    if (!(*body)["reenroll"].is_boolean()) bad.push_back({"reenroll", "expected true or false"});
    else out.reenroll = (*body)["reenroll"].get<bool>();
  }
  if (!bad.empty()) return fieldErrors("invalid enrolment token request", std::move(bad), /*one_field_detail=*/false);
  return out;
}

Result<std::string> decodeVerbReason(std::string_view raw, std::string_view content_type) {
  if (raw.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::string();
  auto body = decodeDocument(raw, content_type, /*yaml_ok=*/false);
  if (!body.ok()) return body.error();
  if (!body->is_object())
    return fieldErrors("invalid body", {{"", "expected no body or a JSON object {\"reason\": \"...\"}"}}, /*one_field_detail=*/false);
  std::vector<FieldError> bad;
  for (const auto& [k, _] : body->items())
    if (k != "reason") bad.push_back({k, "unknown field (the only one is reason)"});
  std::string reason;
  optionalText(*body, "reason", 1000, "expected a string of at most 1000 characters", reason, bad);
  if (!bad.empty()) return fieldErrors("invalid body", std::move(bad), /*one_field_detail=*/true);
  return reason;
}

}  // namespace kiln::api
