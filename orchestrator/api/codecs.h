#pragma once
// REST request decoding: the bytes and documents that callers send, turned into typed values
// once, at the edge. Every function is pure and thread-safe; bad input is an Error (400 for
// malformed bytes, 422 with FieldErrors for well-formed but invalid content), never an
// exception. The route handlers (routes_*.cc) call these and pass the typed values on; the fuzz
// targets (tests/fuzz) call the same functions.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/host_lifecycle.h"
#include "orchestrator/core/roles.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/start_request.h"

namespace kiln::api {

// A request body as a document: JSON, or YAML when `yaml_ok` and the content type does not say
// JSON and the body does not start with '{'. Errors: kInvalidArgument ("the request needs a
// body", "malformed JSON: ...", YAML errors with line and column).
Result<nlohmann::json> decodeDocument(std::string_view body, std::string_view content_type, bool yaml_ok);

// The standard `limit` and `cursor` query parameters ("" = absent). limit: 1..1000, default 100.
Result<core::PageRequest> decodePage(std::string_view limit, std::string_view cursor);

// A whole number of seconds from `min` to `max` in a query parameter, or `fallback` when "".
// Error: kInvalidArgument with `message`.
Result<int> decodeSeconds(std::string_view text, int min, int max, int fallback, const std::string& message);

// An enum-valued query parameter: "" (absent) or one of `choices`. Error: kInvalidContent (422)
// with details.fields [{path: name, message: "expected one of ..."}].
Status decodeChoice(std::string_view value, const std::string& name, const std::vector<std::string>& choices);

// GET /api/v1/hosts `sort`: "" (id order) or id | pod | state | state_since | reason, with a
// leading '-' for descending order. Error: kInvalidContent (422), as decodeChoice.
Result<core::HostSort> decodeHostSort(std::string_view text);

// POST /api/v1/workflow-runs: {workflow, hosts?, pods?, params?, purpose?}.
Result<runs::StartRequest> decodeStartRun(const nlohmann::json& body);

// POST /api/v1/hosts/{id}/actions: {action, reason?, to?} (`to` only with override).
// Every bad field in one 422. The caller checks the role an admin action needs.
struct HostActionBody {
  core::HostAction action = core::HostAction::kDrain;
  std::optional<core::HostState> to;
  std::string reason;
};
Result<HostActionBody> decodeHostAction(const nlohmann::json& body);

// POST /api/v1/tokens: {role, name, host?}.
struct TokenBody {
  core::Role role = core::Role::kViewer;
  std::string name, host;
};
Result<TokenBody> decodeTokenRequest(const nlohmann::json& body);

// POST /api/v1/hosts/{id}/enrolment-tokens: nothing (blank), or {ttl_s?, reenroll?}. ttl_s from
// 60 s to 7 days, default 1 h.
struct EnrolmentTokenBody {
  std::chrono::seconds ttl{3600};
  bool reenroll = false;
};
Result<EnrolmentTokenBody> decodeEnrolmentTokenRequest(std::string_view body, std::string_view content_type);

// A rollout verb's optional body: nothing (blank), or {"reason": "..."} (at most 1000 characters).
Result<std::string> decodeVerbReason(std::string_view body, std::string_view content_type);

// POST /api/v1/agents/register is the agent protocol's (common/agent_protocol.h:
// protocol::registrationFromJson).

}  // namespace kiln::api
