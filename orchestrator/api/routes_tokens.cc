// POST/GET/DELETE /api/v1/tokens (admin).

#include "orchestrator/api/api.h"
#include "orchestrator/api/json_views.h"

namespace kiln::api {

void addTokenRoutes(Router& router, Services& s) {
  router.add({.method = "POST", .pattern = "/api/v1/tokens", .role = core::Role::kAdmin,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                if (!body->is_object()) return invalidContent("expected a JSON object {role, name, host}");
                Error bad = invalidContent("invalid token request");
                for (const auto& [k, _] : body->items())
                  if (k != "role" && k != "name" && k != "host") bad.fields.push_back({k, "unknown field"});
                std::optional<core::Role> role;
                if (body->contains("role") && (*body)["role"].is_string())
                  role = core::parseRole((*body)["role"].get<std::string>());
                if (!role) bad.fields.push_back({"role", "expected viewer, operator, admin, agent or enroll"});
                std::string name, host;
                if (!body->contains("name") || !(*body)["name"].is_string() ||
                    (*body)["name"].get<std::string>().empty() || (*body)["name"].get<std::string>().size() > 100)
                  bad.fields.push_back({"name", "expected a string of 1-100 characters"});
                else name = (*body)["name"].get<std::string>();
                if (body->contains("host")) {
                  if (!(*body)["host"].is_string()) bad.fields.push_back({"host", "expected a host id"});
                  else host = (*body)["host"].get<std::string>();
                }
                if (!bad.fields.empty()) {
                  bad.message = "invalid token request: " + bad.fields[0].path + ": " + bad.fields[0].message;
                  return bad;
                }
                auto t = s.store->createToken(*role, name, host, ctx.actor);
                if (!t.ok()) return t.error();
                auto j = toJson(t->info);
                j["token"] = t->secret;  // shown once
                return jsonResponse(201, j);
              }});

  router.add({.method = "GET", .pattern = "/api/v1/tokens", .role = core::Role::kAdmin,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto tokens = s.store->listTokens();
                if (!tokens.ok()) return tokens.error();
                nlohmann::json items = nlohmann::json::array();
                for (const auto& t : *tokens) items.push_back(toJson(t));
                return jsonResponse(200, {{"items", items}, {"next_cursor", nullptr}});
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
