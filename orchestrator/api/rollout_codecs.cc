#include "orchestrator/api/rollout_codecs.h"

#include <optional>

#include "orchestrator/api/rollout_documents.h"

namespace kiln::api {

using nlohmann::json;

Result<rollouts::Bundle> decodeBundle(const json& doc, const std::function<bool(const std::string&)>& workflow_exists) {
  // The workflow is checked with the rest, so one 422 names every bad field.
  std::string workflow = rollouts::Bundle{}.workflow;
  if (doc.is_object() && doc.contains("workflow") && doc["workflow"].is_string()) workflow = doc["workflow"].get<std::string>();
  const bool no_workflow = !workflow.empty() && !workflow_exists(workflow);
  const std::string no_workflow_message = "bundle workflow '" + workflow + "' does not exist";
  std::string validation;
  if (doc.is_object() && doc.contains("validation_workflow") && doc["validation_workflow"].is_string())
    validation = doc["validation_workflow"].get<std::string>();
  const bool no_validation = !validation.empty() && !workflow_exists(validation);
  const std::string no_validation_message = "validation workflow '" + validation + "' does not exist";
  auto b = parseBundle(doc);
  if (!b.ok()) {
    Error e = b.error();
    if (no_workflow && !e.fields.empty()) e.fields.push_back({"workflow", no_workflow_message});
    if (no_validation && !e.fields.empty()) e.fields.push_back({"validation_workflow", no_validation_message});
    return e;
  }
  if (no_workflow) return Error(invalidContent(no_workflow_message)).with("field", "workflow");
  if (no_validation) return Error(invalidContent(no_validation_message)).with("field", "validation_workflow");
  return b;
}

Result<rollouts::CreateRequest> decodeCreateRollout(
    const json& body, const std::function<Result<rollouts::Bundle>(const std::string&)>& find_bundle,
    const std::function<bool(const std::string&)>& workflow_exists) {
  if (!body.is_object()) return invalidContent("expected {bundle, selector, policy, dry_run, start, allow_downgrade, reason}");
  // Every bad field of the request in one 422, and nothing written before all are checked.
  Error bad = invalidContent("invalid rollout");
  auto fail = [&](const std::string& path, const std::string& message) { bad.fields.push_back({path, message}); };
  auto take = [&](const Error& e, const char* part) {
    if (e.fields.empty()) fail(part, e.message);
    for (const auto& f : e.fields) bad.fields.push_back(f);
  };
  for (const auto& [k, _] : body.items())
    if (k != "bundle" && k != "selector" && k != "policy" && k != "dry_run" && k != "start" && k != "allow_downgrade" &&
        k != "reason")
      fail(k, "unknown field");
  for (const char* flag : {"dry_run", "start", "allow_downgrade"})
    if (body.contains(flag) && !body[flag].is_boolean()) fail(flag, "expected true or false");
  if (body.contains("reason") && !body["reason"].is_string()) fail("reason", "expected text");
  rollouts::CreateRequest req;
  req.allow_downgrade = body.contains("allow_downgrade") && body["allow_downgrade"].is_boolean() &&
                        body["allow_downgrade"].get<bool>();
  req.reason = body.contains("reason") && body["reason"].is_string() ? body["reason"].get<std::string>() : "";
  if (req.allow_downgrade && req.reason.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("reason", "allow_downgrade needs a reason: why these pods go back to older versions (it is audited)");
  if (!body.contains("bundle") || !body["bundle"].is_string()) {
    fail("bundle", "required: a bundle id like b-3 or name@version");
  } else {
    auto found = find_bundle(body["bundle"].get<std::string>());
    if (found.ok()) req.bundle = std::move(*found);
    else if (found.error().code == ErrorCode::kNotFound) fail("bundle", found.error().message);
    else return found.error();
  }
  auto selector = parseSelector(body.contains("selector") ? body["selector"] : json());
  if (!selector.ok()) take(selector.error(), "selector");
  auto policy = parsePolicy(body.contains("policy") ? body["policy"] : json());
  if (!policy.ok()) take(policy.error(), "policy");
  else if (const auto& v = policy->validation_workflow; !v.empty() && workflow_exists && !workflow_exists(v))
    fail("policy.validation_workflow", "validation workflow '" + v + "' does not exist");
  if (!bad.fields.empty()) {
    bad.message = "invalid rollout: " + bad.fields[0].path + ": " + bad.fields[0].message;
    // The one-field form as well (details.field), as the console and scripts read it.
    if (bad.fields.size() == 1) bad.with("field", bad.fields[0].path);
    return bad;
  }
  req.selector = std::move(*selector);
  req.policy = std::move(*policy);
  req.dry_run = body.value("dry_run", false);
  req.start = body.value("start", false);
  return req;
}

}  // namespace kiln::api
