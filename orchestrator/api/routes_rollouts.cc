// Bundles, compliance and rollouts.

#include "orchestrator/api/api.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/rollouts/rollout_service.h"

namespace kiln::api {
namespace {

Result<std::string> verbReason(const RequestContext& ctx) {
  return decodeVerbReason(ctx.req.body, ctx.req.header("content-type"));
}

// A bundle's answer with its `etag` as the ETag header too (If-Match takes it back).
Result<http::Response> withEtag(const Result<nlohmann::json>& r, int status = 200) {
  if (!r.ok()) return r.error();
  http::Response resp = jsonResponse(status, *r);
  if (auto etag = r->find("etag"); etag != r->end() && etag->is_string()) resp.headers.emplace_back("ETag", etag->get<std::string>());
  return resp;
}

}  // namespace

void addRolloutRoutes(Router& router, Services& s) {
  router.add({.method = "POST", .pattern = "/api/v1/bundles", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody(/*yaml_ok=*/true);
                if (!body.ok()) return body.error();
                auto if_match = core::parseIfMatch(ctx.req.header("if-match"));
                if (!if_match.ok()) return if_match.error();
                bool created = false;
                auto r = s.rollouts->putBundle(*body, ctx.actor, &created, *if_match);
                return withEtag(r, created ? 201 : 200);
              }});
  router.add({.method = "GET", .pattern = "/api/v1/bundles", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Newest first, as before. Without limit: every bundle (the console and kilnctl
                // read the list whole).
                return pagedResult(ctx, s.rollouts->listBundles(), [](const nlohmann::json& i) {
                  return nlohmann::json::array({-i["created_at_ms"].get<std::int64_t>(), i["id"]});
                });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/bundles/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return withEtag(s.rollouts->getBundle(ctx.param("id")));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/bundles/{id}/compliance", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"site", "building", "platform", "pod"}); !q.ok()) return q.error();
                rollouts::Selector sel;
                if (!ctx.query("site").empty()) sel.sites = {ctx.query("site")};
                if (!ctx.query("building").empty()) sel.buildings = {ctx.query("building")};
                if (!ctx.query("platform").empty()) sel.platforms = {ctx.query("platform")};
                if (!ctx.query("pod").empty()) sel.pods = {ctx.query("pod")};
                return jsonResult(s.rollouts->compliance(ctx.param("id"), sel));
              }});

  router.add({.method = "POST", .pattern = "/api/v1/rollouts", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody(/*yaml_ok=*/true);
                if (!body.ok()) return body.error();
                return idempotentCreate(
                    ctx, *s.store, "rollout",
                    [&](const std::optional<core::IdempotencyClaim>& claim) -> Result<http::Response> {
                      bool dry_run = false;
                      auto r = s.rollouts->create(*body, ctx.actor, &dry_run, "", claim);
                      return jsonResult(std::move(r), dry_run ? 200 : 201);
                    },
                    [&](const std::string& id) { return s.rollouts->view(id); });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"state", "limit", "cursor"}); !q.ok()) return q.error();
                if (auto c = decodeChoice(ctx.query("state"), "state", rollouts::rolloutStates()); !c.ok()) return c.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                return jsonResult(s.rollouts->list(ctx.query("state"), *page));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(s.rollouts->view(ctx.param("id")));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts/{id}/pods", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Plan order. Without limit: every pod of the rollout (the console reads them whole).
                return pagedResult(ctx, s.rollouts->pods(ctx.param("id")),
                                   [](const nlohmann::json& i) { return nlohmann::json::array({i["position"]}); });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts/{id}/events", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Newest first. Without limit: the newest 1000, as before paging (next_cursor
                // leads on to older ones now).
                return pagedResult(
                    ctx, s.rollouts->events(ctx.param("id")),
                    [](const nlohmann::json& i) { return nlohmann::json::array({-i["id"].get<std::int64_t>()}); }, 1000);
              }});
  for (const char* verb : {"start", "pause", "resume", "abort"}) {
    router.add({.method = "POST", .pattern = std::string("/api/v1/rollouts/{id}/") + verb, .role = core::Role::kOperator,
                .fn = [&s, verb](RequestContext& ctx) -> Result<http::Response> {
                  auto reason = verbReason(ctx);
                  if (!reason.ok()) return reason.error();
                  return jsonResult(s.rollouts->verb(ctx.param("id"), verb, ctx.actor, *reason));
                }});
  }
  router.add({.method = "POST", .pattern = "/api/v1/rollouts/{id}/rollback", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto reason = verbReason(ctx);
                if (!reason.ok()) return reason.error();
                return jsonResult(s.rollouts->rollback(ctx.param("id"), ctx.actor, *reason), 201);
              }});
  for (const char* verb : {"retry", "skip"}) {
    router.add({.method = "POST", .pattern = std::string("/api/v1/rollouts/{id}/pods/{pod}/") + verb,
                .role = core::Role::kOperator,
                .fn = [&s, verb](RequestContext& ctx) -> Result<http::Response> {
                  auto reason = verbReason(ctx);
                  if (!reason.ok()) return reason.error();
                  return jsonResult(s.rollouts->podVerb(ctx.param("id"), ctx.param("pod"), verb, ctx.actor, *reason));
                }});
  }
}

}  // namespace kiln::api
