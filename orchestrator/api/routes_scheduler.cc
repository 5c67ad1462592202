// The job scheduler: what kilnd's scheduler driver sees (GET /scheduler, /scheduler/nodes) and
// the pre-job check a Slurm prolog asks for (POST /scheduler/checks, kilnctl slurm prolog).

#include "orchestrator/api/api.h"
#include "orchestrator/api/run_views.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/runs/run_service.h"
#include "orchestrator/scheduler/driver.h"

namespace kiln::api {
namespace {

using nlohmann::json;

json nodeJson(const scheduler::NodeStatus& n) {
  json j = {{"node", n.node},
            {"host", n.host.empty() ? json(nullptr) : json(n.host)},
            {"host_state", n.host_state ? json(std::string(core::hostStateName(*n.host_state))) : json(nullptr)},
            {"known_to_slurm", n.known},
            {"slurm_state", n.state.empty() ? json(nullptr) : json(n.state)},
            {"reason", n.reason},
            {"reason_user", n.reason_user},
            {"drained_by_kiln", n.drained_by_kiln},
            {"jobs", n.jobs}};
  return j;
}

}  // namespace

void addSchedulerRoutes(Router& router, Services& s) {
  router.add({.method = "GET", .pattern = "/api/v1/scheduler", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                json j = {{"kind", s.scheduler != nullptr ? std::string(s.scheduler->kind()) : std::string("none")}};
                if (auto st = s.scheduler != nullptr ? s.scheduler->status() : std::nullopt) {
                  core::putTime(j, "last_pass", st->last_pass);
                  j["last_error"] = st->last_error.empty() ? json(nullptr) : json(st->last_error);
                  int kiln = 0, others = 0, unknown = 0;
                  for (const auto& n : st->nodes) {
                    if (n.drained_by_kiln) ++kiln;
                    else if (n.known && (n.state.find("DRAIN") != std::string::npos || n.state.rfind("DOWN", 0) == 0))
                      ++others;
                    if (!n.known && !n.host.empty()) ++unknown;
                  }
                  j["nodes"] = st->nodes.size();
                  j["drained_by_kiln"] = kiln;
                  j["unavailable_by_others"] = others;
                  j["hosts_without_node"] = unknown;
                }
                return jsonResponse(200, j);
              }});
  router.add({.method = "GET", .pattern = "/api/v1/scheduler/nodes", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"limit", "cursor"}); !q.ok()) return q.error();
                auto st = s.scheduler != nullptr ? s.scheduler->status() : std::nullopt;
                if (!st)
                  return Error(ErrorCode::kNotFound, "kilnd's scheduler driver keeps no node view (start it with --scheduler slurm)");
                json items = json::array();
                for (const auto& n : st->nodes) items.push_back(nodeJson(n));
                return pagedResult(ctx, json{{"items", std::move(items)}},
                                   [](const json& i) { return json::array({i["node"]}); });
              }});
  // The pre-job check: what the prolog's narrow prejob token may do (core/roles.h), as may
  // operators and admins.
  router.add({.method = "POST", .pattern = "/api/v1/scheduler/checks", .role = core::Role::kPreJob,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                Error bad = invalidContent("the pre-job check request is not valid");
                if (!body->is_object()) return invalidContent("expected a JSON object {nodes, job?}");
                for (const auto& [k, _] : body->items())
                  if (k != "nodes" && k != "job") bad.fields.push_back({k, "unknown field"});
                std::string job;
                if (auto j = body->find("job"); j != body->end()) {
                  if (j->is_string()) job = j->get<std::string>();
                  else if (j->is_number_integer()) job = std::to_string(j->get<std::int64_t>());
                  else bad.fields.push_back({"job", "expected a string or a whole number"});
                }
                std::vector<std::string> nodes;
                auto n = body->find("nodes");
                if (n == body->end() || !n->is_array() || n->empty() || n->size() > 10000) {
                  bad.fields.push_back({"nodes", "expected 1 to 10000 Slurm node names"});
                } else {
                  for (std::size_t i = 0; i < n->size(); ++i) {
                    if (!(*n)[i].is_string() || (*n)[i].get<std::string>().empty()) {
                      bad.fields.push_back({"nodes[" + std::to_string(i) + "]", "expected a node name"});
                      continue;
                    }
                    nodes.push_back((*n)[i].get<std::string>());
                  }
                }
                if (!bad.fields.empty()) return bad;
                // Scheduler node -> Kiln host: the driver's naming (its last pass), else a host of that id.
                // The names the driver does not know are read as host ids in one query (one
                // getHost per node took ~3 ms a node: 25 s for a 8,192-node job).
                json mapping = json::object();
                std::vector<std::string> hosts, unmapped;
                std::vector<std::string> host_of(nodes.size());
                for (std::size_t i = 0; i < nodes.size(); ++i) {
                  if (s.scheduler != nullptr) host_of[i] = s.scheduler->hostOfNode(nodes[i]);
                  if (host_of[i].empty()) unmapped.push_back(nodes[i]);
                }
                if (!unmapped.empty()) {
                  auto found = s.store->hostsById(unmapped);
                  if (!found.ok()) return found.error();
                  for (std::size_t i = 0; i < nodes.size(); ++i)
                    if (host_of[i].empty() && found->count(nodes[i])) host_of[i] = nodes[i];
                }
                for (std::size_t i = 0; i < nodes.size(); ++i) {
                  const std::string& host = host_of[i];
                  if (host.empty()) {
                    bad.fields.push_back({"nodes[" + std::to_string(i) + "]", "no Kiln host for Slurm node '" + nodes[i] + "'"});
                    continue;
                  }
                  mapping[nodes[i]] = host;
                  hosts.push_back(host);
                }
                if (!bad.fields.empty()) {
                  bad.message = "some Slurm nodes have no Kiln host";
                  return bad;
                }
                runs::StartRequest req;
                req.workflow = "pre-job-health";
                req.hosts = hosts;
                req.purpose = "pre_job";
                auto run = s.runs->startRun(req, ctx.actor);
                if (!run.ok()) return run.error();
                json answer = toJson(*run);
                answer["nodes"] = mapping;
                answer["job"] = job.empty() ? json(nullptr) : json(job);
                (void)s.store->audit(ctx.actor, "scheduler.check", run->row.id,
                                     json{{"job", job}, {"nodes", nodes}}.dump());  // the run's own audit is the record
                return jsonResponse(201, answer);
              }});
  // A pre-job check's run as GET /workflow-runs/{id} answers it; any other run is not found.
  // ?view=state: the run's row only (id, state, summary, times; no hosts), what a waiting
  // prolog polls: a 8,192-host check's whole view took 1.5-6 s to build for every poll.
  router.add({.method = "GET", .pattern = "/api/v1/scheduler/checks/{id}", .role = core::Role::kPreJob,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"view"}); !q.ok()) return q.error();
                const std::string view = ctx.query("view");
                if (!view.empty() && view != "state" && view != "full")
                  return invalidArgument("view must be state or full, not '" + view + "'").with("field", "view");
                if (view == "state") {
                  auto row = s.runs->runRow(ctx.param("id"));
                  if (!row.ok() && row.error().code != ErrorCode::kNotFound) return row.error();
                  if (!row.ok() || row->purpose != "pre_job")
                    return notFound("no pre-job check '" + ctx.param("id") + "'");
                  return jsonResponse(200, runStateJson(*row));
                }
                auto run = s.runs->runView(ctx.param("id"));
                if (!run.ok() && run.error().code != ErrorCode::kNotFound) return run.error();
                if (!run.ok() || run->row.purpose != "pre_job")
                  return notFound("no pre-job check '" + ctx.param("id") + "'");
                return jsonResponse(200, toJson(*run));
              }});
}

}  // namespace kiln::api
