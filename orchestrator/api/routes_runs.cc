// Workflows, workflow runs, the quarantine queue, and the agent endpoints.

#include "common/agent_protocol.h"
#include "orchestrator/api/api.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/api/run_views.h"
#include "orchestrator/core/enrolment.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/runs/agent_gateway.h"
#include "orchestrator/runs/live_output.h"
#include "orchestrator/runs/run_service.h"
#include "orchestrator/runs/workflow_catalog.h"

namespace kiln::api {
using nlohmann::json;

namespace {

// The answer to a registration or a renewal: the token, and its lifetime from now.
protocol::Enrolment agentEnrolment(const std::string& host, const core::NewToken& t) {
  protocol::Enrolment e{host, t.secret, t.info.id, 0};
  if (t.info.expires_at)
    e.expires_in_s = std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::seconds>(*t.info.expires_at - std::chrono::system_clock::now()).count());
  return e;
}

// One stream of POST /assignments/{id}/output: {"offset": N, "data": "..."}, or absent.
Result<std::optional<runs::LiveChunk>> decodeLiveChunk(const json& body, const char* name) {
  if (!body.contains(name) || body[name].is_null()) return std::optional<runs::LiveChunk>();
  const json& j = body[name];
  const std::string field = name;
  if (!j.is_object()) return invalidContent(field + " must be an object {offset, data}").with("field", field);
  if (!j.contains("offset") || !j["offset"].is_number_integer() || j["offset"].get<std::int64_t>() < 0)
    return invalidContent(field + ".offset must be a byte offset (an integer >= 0)").with("field", field + ".offset");
  if (!j.contains("data") || !j["data"].is_string())
    return invalidContent(field + ".data must be a string").with("field", field + ".data");
  runs::LiveChunk c{j["offset"].get<std::int64_t>(), j["data"].get<std::string>()};
  // PostgreSQL text holds no NUL; the agent sends U+FFFD for it (its offsets count that).
  if (c.data.find('\0') != std::string::npos)
    return invalidContent(field + ".data must not contain NUL characters").with("field", field + ".data");
  return std::optional<runs::LiveChunk>(std::move(c));
}

Result<std::int64_t> decodeOffset(const std::string& text, const char* name) {
  if (text.empty()) return std::int64_t{0};
  std::int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || v > (std::int64_t{1} << 50))
      return invalidArgument(std::string(name) + " must be a byte offset (an integer >= 0)").with("field", name);
    v = v * 10 + (c - '0');
  }
  return v;
}

json sliceJson(const runs::LiveStream& s, std::int64_t since) {
  runs::LiveSlice slice = runs::sliceLive(s, since);
  return {{"offset", slice.offset}, {"end", slice.end}, {"data", std::move(slice.data)}};
}

// A service answer rendered by `render` (run_views.h).
template <typename T, typename F>
Result<json> rendered(Result<T> r, F render) {
  if (!r.ok()) return r.error();
  return render(*r);
}

Result<json> runJson(Result<runs::RunView> r) {
  return rendered(std::move(r), [](const runs::RunView& v) { return toJson(v); });
}

// A workflow's answer with its version's ETag (If-Match on PUT takes it back).
http::Response withWorkflowEtag(const json& body, const std::string& hash) {
  http::Response resp = jsonResponse(200, body);
  resp.headers.emplace_back("ETag", runs::workflowEtag(hash));
  return resp;
}

}  // namespace

void addRunRoutes(Router& router, Services& s) {
  router.add({.method = "GET", .pattern = "/api/v1/workflows", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Without limit: every workflow (the console and kilnctl read the list whole).
                return pagedResult(ctx, rendered(s.workflows->listWorkflows(), workflowListJson),
                                   [](const json& i) { return json::array({i["name"]}); });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflows/{name}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto workflow = s.workflows->getWorkflow(ctx.param("name"));
                if (!workflow.ok()) return workflow.error();
                return withWorkflowEtag(workflowJson(*workflow), workflow->row.hash);
              }});
  // Admin: a workflow's steps run as root on every host it is started on (issue 31), so
  // changing one is the admin's, starting one stays the operator's.
  router.add({.method = "PUT", .pattern = "/api/v1/workflows/{name}", .role = core::Role::kAdmin,
              .body_limit = 1 << 20,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (ctx.req.body.empty()) return invalidArgument("the request needs a YAML body");
                auto if_match = core::parseIfMatch(ctx.req.header("if-match"));
                if (!if_match.ok()) return if_match.error();
                auto put = s.workflows->putWorkflow(ctx.param("name"), ctx.req.body, ctx.actor, *if_match);
                if (!put.ok()) return put.error();
                return withWorkflowEtag(toJson(*put), put->hash);
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflows/{name}/versions", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                auto versions = s.workflows->versions(ctx.param("name"));
                if (!versions.ok()) return versions.error();
                // Newest first, as the store answers: by creation time (descending), then hash.
                std::map<std::string, std::int64_t> newest_first;
                for (const auto& v : *versions)
                  newest_first[v.hash] =
                      -std::chrono::duration_cast<std::chrono::microseconds>(v.created_at.time_since_epoch()).count();
                return pagedResult(ctx, workflowVersionsJson(ctx.param("name"), *versions), [&](const json& i) {
                  const std::string hash = i["hash"];
                  return json::array({newest_first.at(hash), hash});
                });
              }});

  router.add({.method = "POST", .pattern = "/api/v1/workflow-runs", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                auto req = decodeStartRun(*body);
                if (!req.ok()) return req.error();
                return idempotentCreate(
                    ctx, *s.store, "workflow_run",
                    [&](const std::optional<core::IdempotencyClaim>& claim) -> Result<http::Response> {
                      req->claim = claim;
                      return jsonResult(runJson(s.runs->startRun(*req, ctx.actor)), 201);
                    },
                    [&](const std::string& id) { return runJson(s.runs->runView(id)); });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflow-runs", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"workflow", "state", "host", "purpose", "limit", "cursor"}); !q.ok())
                  return q.error();
                if (auto c = decodeChoice(ctx.query("state"), "state", runs::runStates()); !c.ok()) return c.error();
                if (auto c = decodeChoice(ctx.query("purpose"), "purpose", runs::runPurposes()); !c.ok()) return c.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                return jsonResult(rendered(
                    s.runs->listRuns({ctx.query("workflow"), ctx.query("state"), ctx.query("host"), ctx.query("purpose")}, *page),
                    runListJson));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/workflow-runs/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(runJson(s.runs->runView(ctx.param("id"))));
              }});
  router.add({.method = "POST", .pattern = "/api/v1/workflow-runs/{id}/cancel", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                return jsonResult(runJson(s.runs->cancelRun(ctx.param("id"), ctx.actor)));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/quarantine", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Longest in quarantine first, as before. Without limit: the whole queue (the
                // console and kilnctl read it whole).
                return pagedResult(ctx, rendered(s.runs->quarantineView(), quarantineJson),
                                   [](const json& i) { return json::array({i["since_ms"], i["host"]}); });
              }});

  router.add({.method = "POST", .pattern = "/api/v1/agents/register", .role = core::Role::kEnroll,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                auto reg = protocol::registrationFromJson(*body);
                if (!reg.ok()) return reg.error();
                if (s.options.agent_client_certs && !certificateNames(ctx.req, reg->host))
                  return Error(ErrorCode::kPermissionDenied,
                               "registering host " + reg->host +
                                   " needs a client certificate naming that host (kilnd requires mutual TLS for agents)");
                if (auto v = core::acceptAgentVersion(reg->agent_version, s.options.min_agent_version); !v.ok())
                  return v.error();
                auto e = s.agent_link->enrollAgent(reg->host, reg->boot_id, reg->agent_version, reg->inventory,
                                                   ctx.actor, s.options.agent_token_ttl);
                if (!e.ok()) return e.error();
                // Here at once; other replicas within a second (their revocation feed).
                if (s.forget_token)
                  for (const auto& id : e->revoked) s.forget_token(id);
                return jsonResponse(200, protocol::toJson(agentEnrolment(reg->host, e->token)));
              }});

  // An agent renews its own token before it expires (issue 31): a new one with a fresh expiry;
  // the old one stays good for agent_token_grace at most.
  router.add({.method = "POST", .pattern = "/api/v1/agents/{host}/token", .role = core::Role::kAgent,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (ctx.param("host") != ctx.agent_host)
                  return Error(ErrorCode::kPermissionDenied, "this agent token acts only for host " + ctx.agent_host);
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto e = s.agent_link->renewAgentToken(ctx.agent_host, ctx.actor, s.options.agent_token_ttl,
                                                       s.options.agent_token_grace);
                if (!e.ok()) return e.error();
                // The old token's shortened expiry reaches this replica's cache at once.
                if (s.forget_token) s.forget_token(ctx.actor.token_id);
                return jsonResponse(200, protocol::toJson(agentEnrolment(ctx.agent_host, e->token)));
              }});

  // A host's own enrolment token, for the provisioning system: single use, short-lived; with
  // reenroll, it replaces the host's live agent (core/enrolment.h).
  router.add({.method = "POST", .pattern = "/api/v1/hosts/{id}/enrolment-tokens", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto req = decodeEnrolmentTokenRequest(ctx.req.body, ctx.req.header("content-type"));
                if (!req.ok()) return req.error();
                auto e = s.agent_link->issueEnrolment(ctx.param("id"), req->ttl, req->reenroll, ctx.actor);
                if (!e.ok()) return e.error();
                json j = toJson(e->token.info);
                j["token"] = e->token.secret;  // shown once
                j["expires_at"] = core::isoTime(e->expires_at);
                j["reenroll"] = e->reenroll;
                return jsonResponse(201, j);
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
                auto wait = decodeSeconds(ctx.query("wait"), 0, 60, 25, "wait must be a number of seconds (0-60)");
                if (!wait.ok()) {
                  done(wait.error());
                  return;
                }
                s.agents->poll(ctx.agent_host, ctx.query("boot_id"), *wait, ctx.query("running"),
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

  // Live output of a running step (issue 18; live_output.h says why polling, not SSE). Not
  // audited, like the reports: a high-volume agent channel that changes no decision.
  router.add({.method = "POST", .pattern = "/api/v1/assignments/{id}/output", .role = core::Role::kAgent,
              .body_limit = 512 << 10, .quiet = true,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (!s.live_output) return unavailable("live output is not configured on this kilnd");
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                if (!body->is_object()) return invalidContent("the body must be an object {lease, stdout, stderr}");
                if (body->contains("host") && (*body)["host"] != ctx.agent_host)
                  return Error(ErrorCode::kPermissionDenied, "this agent token acts only for host " + ctx.agent_host);
                if (!body->contains("lease") || !(*body)["lease"].is_number_integer())
                  return invalidContent("lease must be the assignment's lease (an integer)").with("field", "lease");
                auto out = decodeLiveChunk(*body, "stdout");
                if (!out.ok()) return out.error();
                auto err = decodeLiveChunk(*body, "stderr");
                if (!err.ok()) return err.error();
                auto ends = s.live_output->append(ctx.param("id"), ctx.agent_host, (*body)["lease"].get<int>(), *out, *err);
                if (!ends.ok()) return ends.error();
                return jsonResponse(200, {{"stdout_end", ends->out}, {"stderr_end", ends->err}});
              }});
  router.add({.method = "GET", .pattern = "/api/v1/assignments/{id}/output", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (!s.live_output) return unavailable("live output is not configured on this kilnd");
                if (auto q = ctx.onlyQuery({"stdout_since", "stderr_since"}); !q.ok()) return q.error();
                auto out_since = decodeOffset(ctx.query("stdout_since"), "stdout_since");
                if (!out_since.ok()) return out_since.error();
                auto err_since = decodeOffset(ctx.query("stderr_since"), "stderr_since");
                if (!err_since.ok()) return err_since.error();
                auto live = s.live_output->read(ctx.param("id"));
                if (!live.ok()) return live.error();
                json j = {{"assignment", live->assignment_id}, {"run", live->run_id},   {"host", live->host},
                          {"step", live->step_id},             {"attempt", live->attempt}, {"state", live->state},
                          {"stdout", sliceJson(live->out, *out_since)},
                          {"stderr", sliceJson(live->err, *err_since)}};
                core::putTime(j, "updated_at", live->updated_at);
                return jsonResponse(200, j);
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
                                 [done, id](Result<runs::ReportAnswer> answer) {
                                   if (!answer.ok()) return done(answer.error());
                                   protocol::ReportReply reply;
                                   switch (answer->outcome) {
                                     case runs::ReportOutcome::kAccepted:
                                       reply.outcome = protocol::ReportOutcome::kAccepted;
                                       break;
                                     case runs::ReportOutcome::kDuplicate:
                                       reply.outcome = protocol::ReportOutcome::kDuplicate;
                                       break;
                                     case runs::ReportOutcome::kCancelled:
                                       reply.outcome = protocol::ReportOutcome::kCancelled;
                                       break;
                                     case runs::ReportOutcome::kStale:
                                       return done(
                                           conflict("the lease of assignment " + id +
                                                    " is stale: the step was reassigned or expired; drop this report"));
                                   }
                                   if (answer->next) reply.assignment = protocol::toJson(*answer->next);
                                   done(jsonResponse(200, protocol::toJson(reply)));
                                 });
              }});
}

}  // namespace kiln::api
