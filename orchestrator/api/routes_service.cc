// GET /healthz and GET /metrics (also under /api/v1).

#include "orchestrator/api/api.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/reliability/reliability_service.h"
#include "orchestrator/retention/sweeper.h"
#include "orchestrator/rollouts/rollout_service.h"
#include "orchestrator/runs/agent_gateway.h"
#include "orchestrator/runs/agent_work_service.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::api {
namespace {

// The fleet's series, read from the database: every replica exports the same values.
void renderFleetMetrics(const core::FleetCounts& c, std::string& out) {
  auto count = [](const std::map<std::string, std::int64_t>& m, std::string_view key) {
    auto it = m.find(std::string(key));
    return std::to_string(it == m.end() ? 0 : it->second);
  };
  out += "# HELP kiln_hosts Hosts by lifecycle state.\n# TYPE kiln_hosts gauge\n";
  for (auto st : core::allHostStates())
    out += "kiln_hosts{state=\"" + std::string(core::hostStateName(st)) + "\"} " + count(c.hosts_by_state, core::hostStateName(st)) + "\n";
  out += "# HELP kiln_building_hosts Hosts by building and lifecycle state.\n# TYPE kiln_building_hosts gauge\n";
  for (const auto& [building, states] : c.hosts_by_building)
    for (auto st : core::allHostStates())
      out += "kiln_building_hosts{building=\"" + promLabel(building) + "\",state=\"" + std::string(core::hostStateName(st)) +
             "\"} " + count(states, core::hostStateName(st)) + "\n";
  out += "# HELP kiln_gpus GPUs on the hosts in each lifecycle state (available and allocated serve jobs).\n"
         "# TYPE kiln_gpus gauge\n";
  for (auto st : core::allHostStates())
    out += "kiln_gpus{state=\"" + std::string(core::hostStateName(st)) + "\"} " + count(c.gpus_by_state, core::hostStateName(st)) + "\n";
  out += "# HELP kiln_agents Hosts whose agent has registered, by building and whether it polls (unreachable: silent past --unreachable-after).\n"
         "# TYPE kiln_agents gauge\n";
  for (const auto& [building, a] : c.agents_by_building) {
    out += "kiln_agents{building=\"" + promLabel(building) + "\",status=\"reachable\"} " + std::to_string(a.reachable) + "\n";
    out += "kiln_agents{building=\"" + promLabel(building) + "\",status=\"unreachable\"} " + std::to_string(a.unreachable) + "\n";
  }
  out += "# HELP kiln_agent_versions Hosts whose agent has registered (retired ones left out), by the agent version it registered with.\n"
         "# TYPE kiln_agent_versions gauge\n";
  for (const auto& [version, n] : c.agents_by_version)
    out += "kiln_agent_versions{version=\"" + promLabel(version) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP kiln_pods Pods (NVL72 domains) by platform.\n# TYPE kiln_pods gauge\n";
  for (auto p : core::allPlatforms())
    out += "kiln_pods{platform=\"" + std::string(core::platformName(p)) + "\"} " + count(c.pods_by_platform, core::platformName(p)) + "\n";
}

}  // namespace

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
    const bool database_up = s.store->ping().ok();
    auto counts = s.store->fleetCounts();
    if (counts.ok()) renderFleetMetrics(*counts, out);
    if (s.controller) s.controller->render(out);
    if (s.agent_work) out += s.agent_work->stepMetrics();
    if (s.agents) out += s.agents->metrics();
    if (s.retention) out += s.retention->metrics();
    if (!s.options.min_agent_version.empty())
      out += "# HELP kiln_agent_min_version_info The oldest kiln-agent version this kilnd registers (--min-agent-version).\n"
             "# TYPE kiln_agent_min_version_info gauge\n"
             "kiln_agent_min_version_info{version=\"" + promLabel(s.options.min_agent_version) + "\"} 1\n";
    if (s.rollouts) out += s.rollouts->metrics();
    if (s.reliability) out += s.reliability->metrics();
    out += "# HELP kiln_database_up 1 while this replica's PostgreSQL connection answers.\n# TYPE kiln_database_up gauge\n";
    out += std::string("kiln_database_up ") + (database_up ? "1" : "0") + "\n";
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
