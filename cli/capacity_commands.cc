// capacity plan.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/table.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string percent(const json& plan, const char* key) {
  auto it = plan.find(key);
  if (it == plan.end() || !it->is_number()) return field(plan, key);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", it->get<double>() * 100);
  return buf;
}

std::string renderPlan(const json& plan) {
  return renderKeyValues({{"active_gpus", field(plan, "active_gpus")},
                          {"platform", field(plan, "platform")},
                          {"slices (64 GPUs)", field(plan, "slices")},
                          {"pods", field(plan, "pods")},
                          {"racks", field(plan, "racks")},
                          {"gpus", field(plan, "gpus")},
                          {"spare_gpus", field(plan, "spare_gpus")},
                          {"overhead", percent(plan, "overhead_fraction")},
                          {"  slice geometry", percent(plan, "geometry_fraction")},
                          {"  rack reserve", percent(plan, "reserve_fraction")},
                          {"healthy_pods_now", field(plan, "healthy_pods_now")},
                          {"pod_shortfall", field(plan, "pod_shortfall")}});
}

int plan(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/capacity/plan";
  req.setQuery("active_gpus", cmd.value("active-gpus"));
  if (cmd.has("reserve-fraction")) req.setQuery("reserve_fraction", cmd.value("reserve-fraction"));
  if (cmd.has("platform")) req.setQuery("platform", cmd.value("platform"));
  auto result = callJson(ctx, req);
  if (!result) return kExitFailed;
  return printResult(ctx, *result, renderPlan);
}

}  // namespace

CommandGroup capacityGroup() {
  return {.name = "capacity",
          .summary = "Capacity planning: 64-GPU slices of NVL72 pods plus a whole-rack reserve.",
          .commands = {
              {.name = "plan",
               .summary = "Pods, racks and GPUs to provision for N active GPUs",
               .flags = {{.name = "active-gpus", .type = FlagType::kInt, .value_name = "N",
                          .help = "GPUs the job needs", .required = true},
                         {.name = "reserve-fraction", .type = FlagType::kNumber, .value_name = "F",
                          .help = "whole racks held in reserve (default 0.02)"},
                         {.name = "platform", .value_name = "P", .help = "catalina, clemente (default) or san_miguel"}},
               .run = plan},
          }};
}

}  // namespace kiln::cli
