// Fleet inventory, host actions and the capacity planner.

#include "orchestrator/api/api.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/api/fleet_document.h"
#include "orchestrator/api/json_views.h"
#include "orchestrator/core/capacity.h"
#include "orchestrator/fleet/fleet_service.h"

namespace kiln::api {
namespace {

using nlohmann::json;

template <typename T>
Result<http::Response> okJson(const Result<T>& r, int status = 200) {
  if (!r.ok()) return r.error();
  return jsonResponse(status, toJson(r.value()));
}

template <typename T>
Result<http::Response> okPage(const Result<core::Page<T>>& r) {
  if (!r.ok()) return r.error();
  return jsonResponse(200, pageJson(r.value()));
}

std::vector<std::string> platformNames() {
  std::vector<std::string> out;
  for (auto p : core::allPlatforms()) out.emplace_back(core::platformName(p));
  return out;
}

std::vector<std::string> podStateNames() {
  std::vector<std::string> out;
  for (auto s : core::allPodStates()) out.emplace_back(core::podStateName(s));
  return out;
}

std::vector<std::string> hostStateNames() {
  std::vector<std::string> out;
  for (auto s : core::allHostStates()) out.emplace_back(core::hostStateName(s));
  return out;
}

}  // namespace

void addFleetRoutes(Router& router, Services& s) {
  router.add({.method = "POST", .pattern = "/api/v1/fleet/import", .role = core::Role::kAdmin,
              .body_limit = s.options.import_body_limit,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto doc = ctx.jsonBody(/*yaml_ok=*/true);
                if (!doc.ok()) return doc.error();
                auto fleet = parseFleetSpec(*doc);
                if (!fleet.ok()) return fleet.error();
                auto sum = s.store->importFleet(*fleet, ctx.actor);
                if (!sum.ok()) return sum.error();
                return jsonResponse(sum->pods_created > 0 ? 201 : 200, toJson(*sum));
              }});

  router.add({.method = "GET", .pattern = "/api/v1/sites", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                auto sites = s.store->listSites();
                if (!sites.ok()) return sites.error();
                json items = json::array();
                for (const auto& site : *sites) items.push_back(toJson(site));
                // Without limit: every site (a handful), as before paging.
                return pagedResult(ctx, json{{"items", items}, {"next_cursor", nullptr}},
                                   [](const json& i) { return json::array({i["id"]}); });
              }});

  // The console's heatmap: every pod in one answer, as rows under named columns (a 1,000,000-GPU
  // fleet is ~14,000 rows, ~1 MB, one query; /pods pages stay the API for scripts).
  router.add({.method = "GET", .pattern = "/api/v1/fleet/heatmap", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto pods = s.store->heatmapPods();
                if (!pods.ok()) return pods.error();
                json rows = json::array();
                for (const auto& p : *pods)
                  rows.push_back({p.id, p.site, p.building, p.platform, std::string(core::podStateName(p.state)),
                                  p.healthy_gpus, p.labels.empty() ? json() : json(p.labels), p.hosts_out});
                // hosts_out last: clients that read rows by position before it came see the same.
                return jsonResponse(200, {{"count", pods->size()},
                                          {"columns", {"id", "site", "building", "platform", "state", "healthy_gpus", "labels",
                                                       "hosts_out"}},
                                          {"rows", std::move(rows)}});
              }});

  router.add({.method = "GET", .pattern = "/api/v1/pods", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"site", "building", "platform", "state", "label", "limit", "cursor"}); !q.ok())
                  return q.error();
                if (auto c = decodeChoice(ctx.query("platform"), "platform", platformNames()); !c.ok()) return c.error();
                if (auto c = decodeChoice(ctx.query("state"), "state", podStateNames()); !c.ok())
                  return c.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                // A state that is not one was refused above (400); none: any state.
                return okPage(s.store->listPods({ctx.query("site"), ctx.query("building"), ctx.query("platform"),
                                                 core::parsePodState(ctx.query("state")), ctx.query("label")},
                                                *page));
              }});

  router.add({.method = "GET", .pattern = "/api/v1/pods/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return okJson(s.store->getPod(ctx.param("id")));
              }});

  router.add({.method = "GET", .pattern = "/api/v1/hosts", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"pod", "building", "site", "state", "label", "reason", "id_prefix", "sort",
                                            "limit", "cursor"});
                    !q.ok())
                  return q.error();
                if (auto c = decodeChoice(ctx.query("state"), "state", hostStateNames()); !c.ok()) return c.error();
                auto sort = decodeHostSort(ctx.query("sort"));
                if (!sort.ok()) return sort.error();
                const std::string label = ctx.query("label");
                if (!label.empty() && label.find('=') == std::string::npos)
                  return invalidArgument("label filter must be key=value");
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                core::HostFilter f{ctx.query("pod"), ctx.query("building"), ctx.query("site"), ctx.query("state")};
                f.label = label;
                f.reason = ctx.query("reason");
                f.id_prefix = ctx.query("id_prefix");
                f.sort = *sort;
                return okPage(s.store->listHosts(f, *page));
              }});

  // The console's header: how many hosts are in each state (every state, zeros included), from
  // one GROUP BY. Registered before /hosts/{id}, which would otherwise take "counts" for an id.
  router.add({.method = "GET", .pattern = "/api/v1/hosts/counts", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                auto counts = s.store->hostsByState();
                if (!counts.ok()) return counts.error();
                json by_state = json::object();
                std::int64_t total = 0, out = 0;
                for (auto st : core::allHostStates()) {
                  const std::string name(core::hostStateName(st));
                  auto it = counts->find(name);
                  const std::int64_t n = it == counts->end() ? 0 : it->second;
                  by_state[name] = n;
                  total += n;
                  if (core::outOfService(st)) out += n;
                }
                return jsonResponse(200, {{"by_state", by_state}, {"total", total}, {"out_of_service", out}});
              }});

  router.add({.method = "GET", .pattern = "/api/v1/hosts/{id}", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                return okJson(s.store->getHost(ctx.param("id")));
              }});

  router.add({.method = "GET", .pattern = "/api/v1/hosts/{id}/events", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                return okPage(s.store->hostEvents(ctx.param("id"), *page));
              }});

  router.add({.method = "POST", .pattern = "/api/v1/hosts/{id}/actions", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                auto decoded = decodeHostAction(*body);
                if (!decoded.ok()) return decoded.error();
                const core::HostAction action = decoded->action;
                const std::string action_name(core::hostActionName(action));
                if (core::actionKind(action) == core::ActionKind::kAdmin && ctx.role != core::Role::kAdmin)
                  return Error(ErrorCode::kPermissionDenied, "'" + action_name + "' needs the admin role");
                // The fleet service applies the move and what follows it (quarantine validation
                // after a repair, the scheduler's drain or resume): fleet/fleet_service.h.
                auto r = s.fleet->move({ctx.param("id"), action, decoded->to, decoded->reason}, ctx.actor);
                if (!r.ok()) return r.error();
                json out = toJson(r->host);
                if (r->quarantine_run) out["quarantine_run"] = *r->quarantine_run;
                if (r->quarantine_run_error) out["quarantine_run_error"] = *r->quarantine_run_error;
                return jsonResponse(200, out);
              }});

  router.add({.method = "GET", .pattern = "/api/v1/capacity/plan", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"active_gpus", "reserve_fraction", "platform"}); !q.ok()) return q.error();
                core::CapacityRequest req;
                try {
                  const std::string n = ctx.query("active_gpus");
                  if (n.empty()) return invalidArgument("active_gpus is required");
                  std::size_t used = 0;
                  req.active_gpus = std::stoll(n, &used);
                  if (used != n.size()) throw std::invalid_argument(n);
                  const std::string r = ctx.query("reserve_fraction");
                  if (!r.empty()) {
                    req.reserve_fraction = std::stod(r, &used);
                    if (used != r.size()) throw std::invalid_argument(r);
                  }
                } catch (...) {
                  return invalidArgument("active_gpus must be a whole number and reserve_fraction a number");
                }
                const std::string platform = ctx.query("platform").empty() ? "clemente" : ctx.query("platform");
                auto p = core::parsePlatform(platform);
                if (!p) {
                  std::string names;
                  for (const auto& n : platformNames()) names += (names.empty() ? "" : ", ") + n;
                  return invalidArgument("platform must be one of " + names).with("field", "platform");
                }
                req.platform = *p;
                auto plan = core::planCapacity(req);
                if (!plan.ok()) return plan.error();
                auto healthy = s.store->countHealthyPods(platform);
                if (!healthy.ok()) return healthy.error();
                json j = toJson(*plan);
                j["active_gpus"] = req.active_gpus;
                j["platform"] = platform;
                j["requested_reserve_fraction"] = req.reserve_fraction;
                j["healthy_pods_now"] = *healthy;
                j["pod_shortfall"] = std::max<std::int64_t>(0, plan->pods - *healthy);
                j["platforms"] = platformNames();  // what kilnd plans for (the console's menu)
                return jsonResponse(200, j);
              }});
}

}  // namespace kiln::api
