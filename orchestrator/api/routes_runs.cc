// Workflows, workflow runs, the quarantine queue, and the agent endpoints.

#include "orchestrator/api/api.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/runs/agent_gateway.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::api {
namespace {

using nlohmann::json;

Result<std::vector<std::string>> stringList(const json& body, const char* key) {
  std::vector<std::string> out;
  if (!body.contains(key)) return out;
  const json& v = body[key];
  if (!v.is_array()) return Error(invalidContent(std::string(key) + " must be a list of ids")).with("field", key);
  for (const auto& e : v) {
    if (!e.is_string()) return Error(invalidContent(std::string(key) + " must be a list of ids")).with("field", key);
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

void addRunRoutes(Router& router, Services& s) {
  router.add({.method = "GET", .pattern = "/api/v1/workflows", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(s.runs->listWorkflows());
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflows/{name}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(s.runs->getWorkflow(ctx.param("name")));
              }});
  router.add({.method = "PUT", .pattern = "/api/v1/workflows/{name}", .role = core::Role::kOperator,
              .body_limit = 1 << 20,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (ctx.req.body.empty()) return invalidArgument("the request needs a YAML body");
                return jsonResult(s.runs->putWorkflow(ctx.param("name"), ctx.req.body, ctx.actor));
              }});

  router.add({.method = "POST", .pattern = "/api/v1/workflow-runs", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                if (!body->is_object()) return invalidContent("expected {workflow, hosts | pods, params}");
                for (const auto& [k, _] : body->items())
                  if (k != "workflow" && k != "hosts" && k != "pods" && k != "params" && k != "purpose")
                    return Error(invalidContent("unknown field '" + k + "'")).with("field", k);
                runs::StartRequest req;
                if (!body->contains("workflow") || !(*body)["workflow"].is_string())
                  return Error(invalidContent("workflow is required")).with("field", "workflow");
                req.workflow = (*body)["workflow"].get<std::string>();
                auto hosts = stringList(*body, "hosts");
                if (!hosts.ok()) return hosts.error();
                auto pods = stringList(*body, "pods");
                if (!pods.ok()) return pods.error();
                req.hosts = *hosts;
                req.pods = *pods;
                if (body->contains("params")) req.params = (*body)["params"];
                if (body->contains("purpose")) {
                  if (!(*body)["purpose"].is_string()) return invalidContent("purpose must be a string");
                  req.purpose = (*body)["purpose"].get<std::string>();
                }
                return jsonResult(s.runs->startRun(req, ctx.actor), 201);
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflow-runs", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"workflow", "state", "host", "purpose", "limit", "cursor"}); !q.ok())
                  return q.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                return jsonResult(s.runs->listRuns(
                    {ctx.query("workflow"), ctx.query("state"), ctx.query("host"), ctx.query("purpose")}, *page));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflow-runs/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(s.runs->runView(ctx.param("id")));
              }});
  router.add({.method = "POST", .pattern = "/api/v1/workflow-runs/{id}/cancel", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                return jsonResult(s.runs->cancelRun(ctx.param("id"), ctx.actor));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/quarantine", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(s.runs->quarantineView());
              }});

  router.add({.method = "POST", .pattern = "/api/v1/agents/register", .role = core::Role::kEnroll,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                if (!body->is_object() || !body->contains("host") || !(*body)["host"].is_string())
                  return Error(invalidContent("host is required")).with("field", "host");
                const std::string host = (*body)["host"].get<std::string>();
                const std::string boot_id = body->value("boot_id", "");
                const std::string version = body->value("agent_version", "");
                json inventory = body->contains("inventory") ? (*body)["inventory"] : json::object();
                auto t = s.run_store->enrollAgent(host, boot_id, version, inventory, ctx.actor);
                if (!t.ok()) return t.error();
                return jsonResponse(200, {{"host", host}, {"token", t->secret}, {"token_id", t->info.id}});
              }});

  router.add({.method = "GET", .pattern = "/api/v1/agents/{host}/work", .role = core::Role::kAgent,
              .inline_ok = true, .quiet = true,
              .async_fn = [&s](RequestContext& ctx, std::function<void(Result<http::Response>)> done) {
                if (ctx.param("host") != ctx.agent_host) {
                  done(Error(ErrorCode::kPermissionDenied, "this agent token acts only for host " + ctx.agent_host));
                  return;
                }
                if (auto q = ctx.onlyQuery({"wait", "boot_id", "running"}); !q.ok()) {
                  done(q.error());
                  return;
                }
                int wait = 25;
                if (!ctx.query("wait").empty()) {
                  try {
                    wait = std::stoi(ctx.query("wait"));
                  } catch (...) {
                    done(invalidArgument("wait must be a number of seconds (0-60)"));
                    return;
                  }
                  if (wait < 0 || wait > 60) {
                    done(invalidArgument("wait must be a number of seconds (0-60)"));
                    return;
                  }
                }
                s.agents->poll(ctx.agent_host, ctx.query("boot_id"), wait, ctx.query("running"),
                               [done](Result<std::optional<json>> r) {
                                 if (!r.ok()) return done(r.error());
                                 if (!*r) {
                                   http::Response none;
                                   none.status = 204;
                                   none.content_type = "application/json";
                                   return done(none);
                                 }
                                 done(jsonResponse(200, **r));
                               });
              }});

  router.add({.method = "POST", .pattern = "/api/v1/assignments/{id}/result", .role = core::Role::kAgent,
              .body_limit = 4 << 20, .quiet = true,
              .async_fn = [&s](RequestContext& ctx, std::function<void(Result<http::Response>)> done) {
                auto body = ctx.jsonBody();
                if (!body.ok()) return done(body.error());
                if (body->is_object() && body->contains("host") && (*body)["host"] != ctx.agent_host)
                  return done(Error(ErrorCode::kPermissionDenied, "this agent token acts only for host " + ctx.agent_host));
                const std::string id = ctx.param("id");
                s.agents->report(ctx.agent_host, id, std::move(*body), ctx.req.body,
                                 [done, id](Result<runs::RunService::ReportAnswer> answer) {
                                   if (!answer.ok()) return done(answer.error());
                                   const char* outcome = nullptr;
                                   switch (answer->outcome) {
                                     case runs::ReportOutcome::kAccepted: outcome = "accepted"; break;
                                     case runs::ReportOutcome::kDuplicate: outcome = "duplicate"; break;
                                     case runs::ReportOutcome::kCancelled: outcome = "cancelled"; break;
                                     case runs::ReportOutcome::kStale: break;
                                   }
                                   if (!outcome)
                                     return done(conflict("the lease of assignment " + id +
                                                          " is stale: the step was reassigned or expired; drop this report"));
                                   json reply = {{"acknowledged", true}, {"outcome", outcome}};
                                   if (answer->next) reply["assignment"] = std::move(*answer->next);
                                   done(jsonResponse(200, reply));
                                 });
              }});
}

}  // namespace kiln::api
