// Bundles, compliance and rollouts.

#include "orchestrator/api/api.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/api/rollout_codecs.h"
#include "orchestrator/api/rollout_views.h"
#include "orchestrator/rollouts/rollout_service.h"

namespace kiln::api {
namespace {

Result<std::string> verbReason(const RequestContext& ctx) {
  return decodeVerbReason(ctx.req.body, ctx.req.header("content-type"));
}

// A bundle's answer with its `etag` as the ETag header too (If-Match takes it back).
http::Response withEtag(const nlohmann::json& body, const rollouts::Bundle& b, int status = 200) {
  http::Response resp = jsonResponse(status, body);
  resp.headers.emplace_back("ETag", rollouts::bundleEtag(b));
  return resp;
}

// A service answer rendered by `render` (rollout_views.h).
template <typename T, typename F>
Result<nlohmann::json> rendered(Result<T> r, F render) {
  if (!r.ok()) return r.error();
  return render(*r);
}

Result<nlohmann::json> viewJson(Result<rollouts::RolloutView> r) {
  return rendered(std::move(r), [](const rollouts::RolloutView& v) { return toJson(v); });
}

}  // namespace

void addRolloutRoutes(Router& router, Services& s) {
  router.add({.method = "POST", .pattern = "/api/v1/bundles", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody(/*yaml_ok=*/true);
                if (!body.ok()) return body.error();
                auto if_match = core::parseIfMatch(ctx.req.header("if-match"));
                if (!if_match.ok()) return if_match.error();
                auto bundle = decodeBundle(*body, [&s](const std::string& w) { return s.rollouts->workflowExists(w); });
                if (!bundle.ok()) return bundle.error();
                auto r = s.rollouts->putBundle(*bundle, ctx.actor, *if_match);
                if (!r.ok()) return r.error();
                const bool created = r->outcome == rollouts::RolloutStore::PutOutcome::kCreated;
                return withEtag(toJson(*r), r->row.bundle, created ? 201 : 200);
              }});
  router.add({.method = "GET", .pattern = "/api/v1/bundles", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Newest first, as before. Without limit: every bundle (the console and kilnctl
                // read the list whole).
                return pagedResult(ctx, rendered(s.rollouts->listBundles(), bundleListJson), [](const nlohmann::json& i) {
                  return nlohmann::json::array({-i["created_at_ms"].get<std::int64_t>(), i["id"]});
                });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/bundles/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto row = s.rollouts->getBundle(ctx.param("id"));
                if (!row.ok()) return row.error();
                return withEtag(bundleJson(*row), row->bundle);
              }});
  router.add({.method = "GET", .pattern = "/api/v1/bundles/{id}/compliance", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"site", "building", "platform", "pod"}); !q.ok()) return q.error();
                rollouts::Selector sel;
                if (!ctx.query("site").empty()) sel.sites = {ctx.query("site")};
                if (!ctx.query("building").empty()) sel.buildings = {ctx.query("building")};
                if (!ctx.query("platform").empty()) sel.platforms = {ctx.query("platform")};
                if (!ctx.query("pod").empty()) sel.pods = {ctx.query("pod")};
                return jsonResult(rendered(s.rollouts->compliance(ctx.param("id"), sel),
                                           [](const rollouts::ComplianceReport& r) { return toJson(r); }));
              }});

  router.add({.method = "POST", .pattern = "/api/v1/rollouts", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody(/*yaml_ok=*/true);
                if (!body.ok()) return body.error();
                return idempotentCreate(
                    ctx, *s.store, "rollout",
                    [&](const std::optional<core::IdempotencyClaim>& claim) -> Result<http::Response> {
                      auto req = decodeCreateRollout(
                          *body, [&s](const std::string& ref) { return s.rollouts->bundleFor(ref); },
                          [&s](const std::string& w) { return s.rollouts->workflowExists(w); });
                      if (!req.ok()) return req.error();
                      auto r = s.rollouts->create(*req, ctx.actor, "", claim);
                      if (!r.ok()) return r.error();
                      return jsonResponse(r->dry_run ? 200 : 201, toJson(*r));
                    },
                    [&](const std::string& id) { return viewJson(s.rollouts->view(id)); });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"state", "limit", "cursor"}); !q.ok()) return q.error();
                if (auto c = decodeChoice(ctx.query("state"), "state", rollouts::rolloutStates()); !c.ok()) return c.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                return jsonResult(rendered(s.rollouts->list(ctx.query("state"), *page), rolloutListJson));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return jsonResult(viewJson(s.rollouts->view(ctx.param("id"))));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts/{id}/pods", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Plan order. Without limit: every pod of the rollout (the console reads them whole).
                return pagedResult(ctx, rendered(s.rollouts->pods(ctx.param("id")), rolloutPodsJson),
                                   [](const nlohmann::json& i) { return nlohmann::json::array({i["position"]}); });
              }});
  router.add({.method = "GET", .pattern = "/api/v1/rollouts/{id}/events", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                // Newest first. Without limit: the newest 1000, as before paging (next_cursor
                // leads on to older ones now).
                return pagedResult(
                    ctx, rendered(s.rollouts->events(ctx.param("id")), rolloutEventsJson),
                    [](const nlohmann::json& i) { return nlohmann::json::array({-i["id"].get<std::int64_t>()}); }, 1000);
              }});
  for (const char* verb : {"start", "pause", "resume", "abort"}) {
    router.add({.method = "POST", .pattern = std::string("/api/v1/rollouts/{id}/") + verb, .role = core::Role::kOperator,
                .fn = [&s, verb](RequestContext& ctx) -> Result<http::Response> {
                  auto reason = verbReason(ctx);
                  if (!reason.ok()) return reason.error();
                  return jsonResult(viewJson(s.rollouts->verb(ctx.param("id"), verb, ctx.actor, *reason)));
                }});
  }
  router.add({.method = "POST", .pattern = "/api/v1/rollouts/{id}/rollback", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto reason = verbReason(ctx);
                if (!reason.ok()) return reason.error();
                return jsonResult(viewJson(s.rollouts->rollback(ctx.param("id"), ctx.actor, *reason)), 201);
              }});
  for (const char* verb : {"retry", "skip"}) {
    router.add({.method = "POST", .pattern = std::string("/api/v1/rollouts/{id}/pods/{pod}/") + verb,
                .role = core::Role::kOperator,
                .fn = [&s, verb](RequestContext& ctx) -> Result<http::Response> {
                  auto reason = verbReason(ctx);
                  if (!reason.ok()) return reason.error();
                  return jsonResult(viewJson(s.rollouts->podVerb(ctx.param("id"), ctx.param("pod"), verb, ctx.actor, *reason)));
                }});
  }
}

}  // namespace kiln::api
