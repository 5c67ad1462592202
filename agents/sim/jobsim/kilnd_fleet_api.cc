#include "agents/sim/jobsim/kilnd_fleet_api.h"

namespace kiln::jobsim {

using nlohmann::json;

namespace {

// kilnd's error body {"error": {"code", "message"}} as an Error with the matching code.
Error errorFrom(const std::string& what, const http::ClientResponse& r) {
  ErrorCode code = ErrorCode::kInternal;
  if (r.status == 404) code = ErrorCode::kNotFound;
  else if (r.status == 409) code = ErrorCode::kConflict;
  else if (r.status == 401) code = ErrorCode::kUnauthenticated;
  else if (r.status == 403) code = ErrorCode::kPermissionDenied;
  else if (r.status == 400) code = ErrorCode::kInvalidArgument;
  else if (r.status == 422) code = ErrorCode::kInvalidContent;
  else if (r.status == 503 || r.status == 502 || r.status == 504) code = ErrorCode::kUnavailable;
  std::string message = r.body;
  const json doc = json::parse(r.body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object() && doc["error"].contains("message") &&
      doc["error"]["message"].is_string())
    message = doc["error"]["message"].get<std::string>();
  return Error(code, what + ": HTTP " + std::to_string(r.status) + ": " + message);
}

}  // namespace

KilndFleetApi::KilndFleetApi(const std::string& base_url, const std::string& token)
    : client_(http::ClientOptions{.base_url = base_url, .token = token, .timeout = std::chrono::milliseconds(10000)}) {}

Result<json> KilndFleetApi::get(const std::string& path) {
  auto r = client_.request("GET", path);
  if (!r.ok()) return r.error();
  if (r->status != 200) return errorFrom("GET " + path, *r);
  json doc = json::parse(r->body, nullptr, false);
  if (doc.is_discarded()) return invalidContent("GET " + path + ": the answer is not JSON");
  return doc;
}

Result<std::vector<std::string>> KilndFleetApi::listPods() {
  std::vector<std::string> out;
  std::string cursor;
  do {
    auto page = get("/api/v1/pods?limit=500" + (cursor.empty() ? std::string() : "&cursor=" + http::urlEncode(cursor)));
    if (!page.ok()) return page.error();
    if (!page->contains("items") || !(*page)["items"].is_array()) return invalidContent("GET /api/v1/pods: no items");
    for (const auto& p : (*page)["items"])
      if (p.contains("id") && p["id"].is_string()) out.push_back(p["id"].get<std::string>());
    cursor = page->contains("next_cursor") && (*page)["next_cursor"].is_string()
                 ? (*page)["next_cursor"].get<std::string>()
                 : std::string();
  } while (!cursor.empty());
  return out;
}

Result<std::vector<HostView>> KilndFleetApi::podHosts(const std::string& pod) {
  auto doc = get("/api/v1/pods/" + http::urlEncode(pod));
  if (!doc.ok()) return doc.error();
  return parsePodHosts(*doc);
}

Result<HostView> KilndFleetApi::host(const std::string& id) {
  auto doc = get("/api/v1/hosts/" + http::urlEncode(id));
  if (!doc.ok()) return doc.error();
  return parseHost(*doc);
}

Status KilndFleetApi::hostAction(const std::string& id, const std::string& action, const std::string& reason) {
  const std::string path = "/api/v1/hosts/" + http::urlEncode(id) + "/actions";
  auto r = client_.request("POST", path, json{{"action", action}, {"reason", reason}}.dump());
  if (!r.ok()) return r.error();
  if (r->status != 200) return errorFrom("POST " + path + " " + action, *r);
  return Ok{};
}

}  // namespace kiln::jobsim
