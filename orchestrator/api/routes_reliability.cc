// The reliability ledger: interruptions and the report.

#include "orchestrator/api/api.h"
#include "orchestrator/api/codecs.h"
#include "orchestrator/api/reliability_views.h"
#include "orchestrator/reliability/reliability_service.h"

namespace kiln::api {

void addReliabilityRoutes(Router& router, Services& s) {
  router.add({.method = "POST", .pattern = "/api/v1/interruptions", .role = core::Role::kOperator,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                auto body = ctx.jsonBody();
                if (!body.ok()) return body.error();
                auto r = s.reliability->record(*body, ctx.actor);
                if (!r.ok()) return r.error();
                return jsonResponse(r->created ? 201 : 200, toJson(*r));
              }});
  router.add({.method = "GET", .pattern = "/api/v1/interruptions", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"from", "to", "cause", "candidate", "limit", "cursor"}); !q.ok())
                  return q.error();
                if (auto c = decodeChoice(ctx.query("cause"), "cause", reliability::causes()); !c.ok()) return c.error();
                auto page = ctx.page();
                if (!page.ok()) return page.error();
                auto r = s.reliability->list(ctx.query("from"), ctx.query("to"), ctx.query("cause"), ctx.query("candidate"),
                                             *page);
                if (!r.ok()) return r.error();
                return jsonResponse(200, interruptionListJson(*r));
              }});
  // The targets kilnd is configured with, for the console (and scripts) to compare against.
  router.add({.method = "GET", .pattern = "/api/v1/targets", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({}); !q.ok()) return q.error();
                const reliability::ReliabilityTargets r{s.targets.per_8k_gpus_per_day};
                return jsonResponse(200, {{"reliability", {{"per_8k_gpus_per_day", r.per_8k_gpus_per_day},
                                                            {"mtbi_gpu_hours", r.mtbiGpuHours()}}},
                                          {"rollouts", {{"pod_p90_s", s.targets.pod_p90_s}}}});
              }});
  router.add({.method = "GET", .pattern = "/api/v1/reliability", .role = core::Role::kViewer,
              .fn = [&s](RequestContext& ctx) -> Result<http::Response> {
                if (auto q = ctx.onlyQuery({"from", "to", "site", "building", "platform", "lemon_threshold"}); !q.ok())
                  return q.error();
                int threshold = 2;
                if (!ctx.query("lemon_threshold").empty()) {
                  try {
                    threshold = std::stoi(ctx.query("lemon_threshold"));
                  } catch (...) {
                    return invalidArgument("lemon_threshold must be a whole number");
                  }
                  if (threshold < 0 || threshold > 1000) return invalidArgument("lemon_threshold must be 0-1000");
                }
                auto r = s.reliability->report(ctx.query("from"), ctx.query("to"),
                                               {ctx.query("site"), ctx.query("building"), ctx.query("platform")}, threshold);
                if (!r.ok()) return r.error();
                return jsonResponse(200, toJson(*r));
              }});
}

}  // namespace kiln::api
