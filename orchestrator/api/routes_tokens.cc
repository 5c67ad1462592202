// POST/GET/DELETE /api/v1/tokens (admin).

#include "orchestrator/api/api.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/api/json_views.h"

namespace kiln::api {

void addTokenRoutes(Router& router, Services& s) {
  router.add({.method = "POST", .pattern = "/api/v1/tokens", .role = core::Role::kAdmin,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                auto req = decodeTokenRequest(*body);
                if (!req.ok()) return req.error();
                auto t = s.store->createToken(req->role, req->name, req->host, ctx.actor);
                if (!t.ok()) return t.error();
                auto j = toJson(t->info);
                j["token"] = t->secret;  // shown once
                return jsonResponse(201, j);
              }});

  router.add({.method = "GET", .pattern = "/api/v1/tokens", .role = core::Role::kAdmin,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                auto tokens = s.store->listTokens();
                if (!tokens.ok()) return tokens.error();
                nlohmann::json items = nlohmann::json::array();
                for (const auto& t : *tokens) items.push_back(toJson(t));
                // Oldest first as before (created_at is ISO-8601 UTC: text order is time order).
                // Without limit: every token.
                return pagedResult(ctx, nlohmann::json{{"items", items}, {"next_cursor", nullptr}},
                                   [](const nlohmann::json& i) { return nlohmann::json::array({i["created_at"], i["id"]}); });
              }});

  router.add({.method = "DELETE", .pattern = "/api/v1/tokens/{id}", .role = core::Role::kAdmin,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto r = s.store->revokeToken(ctx.param("id"), ctx.actor);
                if (!r.ok()) return r.error();
                if (s.forget_token) s.forget_token(ctx.param("id"));
                return jsonResponse(200, {{"id", ctx.param("id")}, {"revoked", true}});
              }});
}

}  // namespace kiln::api
