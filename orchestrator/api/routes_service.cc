// GET /healthz and GET /metrics (also under /api/v1).

#include "orchestrator/api/api.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/runs/agent_gateway.h"
#include "orchestrator/reliability/reliability_service.h"
#include "orchestrator/rollouts/rollout_service.h"

namespace kiln::api {

void addServiceRoutes(Router& router, Services& s) {
  auto healthz = [&s](RequestContext&) -> Result<http::Response> {
    auto ping = s.store->ping();
    if (!ping.ok())
      return jsonResponse(503, {{"status", "unavailable"}, {"database", ping.error().message}});
    return jsonResponse(200, {{"status", "ok"}, {"database", "ok"}});
  };
  for (const char* path : {"/healthz", "/api/v1/healthz"})
    router.add({.method = "GET", .pattern = path, .role = std::nullopt, .fn = healthz});

  router.add({.method = "GET", .pattern = "/api/v1/whoami", .role = core::Role::kViewer,
              .fn = [](RequestContext& ctx) -> Result<http::Response> {
                nlohmann::json j = {{"token_id", ctx.actor.token_id}, {"name", ctx.actor.name},
                                    {"role", core::roleName(ctx.role)}};
                j["host"] = ctx.agent_host.empty() ? nlohmann::json() : nlohmann::json(ctx.agent_host);
                return jsonResponse(200, j);
              }});

  auto metrics = [&s](RequestContext& ctx) -> Result<http::Response> {
    if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
    std::string out;
    s.metrics->render(out);
    auto counts = s.store->fleetCounts();
    if (counts.ok()) {
      out += "# HELP kiln_hosts Hosts by lifecycle state.\n# TYPE kiln_hosts gauge\n";
      for (auto st : core::allHostStates()) {
        auto it = counts->hosts_by_state.find(std::string(core::hostStateName(st)));
        out += "kiln_hosts{state=\"" + std::string(core::hostStateName(st)) + "\"} " +
               std::to_string(it == counts->hosts_by_state.end() ? 0 : it->second) + "\n";
      }
      out += "# HELP kiln_pods Pods (NVL72 domains) by platform.\n# TYPE kiln_pods gauge\n";
      for (auto p : core::allPlatforms()) {
        auto it = counts->pods_by_platform.find(std::string(core::platformName(p)));
        out += "kiln_pods{platform=\"" + std::string(core::platformName(p)) + "\"} " +
               std::to_string(it == counts->pods_by_platform.end() ? 0 : it->second) + "\n";
      }
    }
    if (s.agents) out += s.agents->metrics();
    if (s.rollouts) out += s.rollouts->metrics();
    if (s.reliability) out += s.reliability->metrics();
    out += "# HELP kiln_up 1 while kilnd serves and its database answers.\n# TYPE kiln_up gauge\n";
    out += std::string("kiln_up ") + (counts.ok() ? "1" : "0") + "\n";
    http::Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = std::move(out);
    return r;
  };
  for (const char* path : {"/metrics", "/api/v1/metrics"})
    router.add({.method = "GET", .pattern = path, .role = core::Role::kViewer, .fn = metrics});
}

}  // namespace kiln::api
