// reliability report; interruption record | list.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/reliability_view.h"
#include "cli/table.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

int report(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/reliability";
  for (const char* filter : {"from", "to", "site", "building", "platform"})
    if (cmd.has(filter)) req.setQuery(filter, cmd.value(filter));
  if (cmd.has("lemon-threshold")) req.setQuery("lemon_threshold", cmd.value("lemon-threshold"));
  auto r = callJson(ctx, req);
  if (!r) return kExitFailed;
  return printResult(ctx, *r, renderReliability);
}

int record(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  if (!cmd.has("hosts") && !cmd.has("pod")) return ctx.usageError("give --hosts or --pod: what the interruption hit");
  json body = {{"id", cmd.value("id")}, {"at", cmd.value("at")}, {"cause", cmd.value("cause")}};
  if (cmd.has("hosts")) {
    json hosts = json::array();
    const std::string list = cmd.value("hosts");
    std::size_t start = 0;
    while (true) {
      const auto comma = list.find(',', start);
      const std::string host = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (host.empty()) return ctx.usageError("--hosts needs a comma-separated list of host ids, not '" + list + "'");
      hosts.push_back(host);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    body["hosts"] = hosts;
  }
  if (cmd.has("pod")) body["pod"] = cmd.value("pod");
  if (cmd.has("job")) body["job"] = cmd.value("job");
  if (cmd.has("job-gpus")) body["job_gpus"] = cmd.integer("job-gpus", 1);
  if (cmd.has("owner")) body["owner"] = cmd.value("owner");
  if (cmd.has("description")) body["description"] = cmd.value("description");
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/interruptions";
  req.body = body.dump();
  auto r = callJson(ctx, req);
  if (!r) return kExitFailed;
  return printResult(ctx, *r, [](const json& i) {
    const bool created = i.is_object() && i.value("created", false);
    return "interruption " + field(i, "id") + (created ? " recorded: " : " was already recorded (unchanged): ") +
           field(i, "cause") + " at " + field(i, "at") + "\n";
  });
}

int list(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req = listRequest(cmd, std::string(kApiPrefix) + "/interruptions");
  for (const char* filter : {"from", "to", "cause"})
    if (cmd.has(filter)) req.setQuery(filter, cmd.value(filter));
  if (cmd.has("candidate")) req.setQuery("candidate", "true");
  auto page = fetchList(ctx, req, cmd.has("all"));
  if (!page) return kExitFailed;
  noteMorePages(ctx, *page);
  return printResult(ctx, *page, renderInterruptions);
}

std::vector<FlagSpec> windowFlags() {
  return {{.name = "from", .value_name = "T", .help = "window start, UTC: 2026-11-01 or 2026-11-01T00:00:00Z (default: to - 28 days)"},
          {.name = "to", .value_name = "T", .help = "window end, UTC (default: now)"}};
}

}  // namespace

CommandGroup reliabilityGroup() {
  std::vector<FlagSpec> flags = windowFlags();
  flags.push_back({.name = "site", .value_name = "S", .help = "only this site"});
  flags.push_back({.name = "building", .value_name = "B", .help = "only this building"});
  flags.push_back({.name = "platform", .value_name = "P", .help = "only this platform"});
  flags.push_back({.name = "lemon-threshold", .type = FlagType::kInt, .value_name = "N",
                   .help = "a lemon has more than N interruptions plus repairs in the window (default 2)", .min = 0, .max = 1000});
  return {.name = "reliability",
          .summary = "Fleet reliability: interruption rate and MTBI against the north star, causes, lemons.",
          .commands = {{.name = "report",
                        .summary = "GPU-hours, interruptions per 8K GPUs per day vs 2, MTBI vs 96,000 GPU-hours, causes, "
                                   "weekly series, lemon hosts",
                        .flags = std::move(flags),
                        .run = report}}};
}

CommandGroup interruptionGroup() {
  std::vector<FlagSpec> list_flags = windowFlags();
  list_flags.push_back({.name = "cause", .value_name = "C", .help = "only this cause"});
  list_flags.push_back({.name = "candidate", .type = FlagType::kBool,
                        .help = "only candidates Kiln recorded when an allocated host failed"});
  for (auto& f : pagingFlags()) list_flags.push_back(std::move(f));
  return {.name = "interruption",
          .summary = "Job interruptions: record them (from a scheduler or by hand) and list them.",
          .commands = {
              {.name = "record",
               .summary = "Record an interruption (operator); the same --id again is a no-op",
               .flags = {{.name = "id", .value_name = "ID", .help = "your id for it (a retry with the same id changes nothing)",
                          .required = true},
                         {.name = "at", .value_name = "T", .help = "when, UTC: 2026-12-02T10:00:00Z", .required = true},
                         {.name = "cause", .value_name = "C",
                          .help = "nvlink_signal_integrity, hbm, lpddr, nvswitch_fabric, backend_network, storage, thermal, "
                                  "power, software, gpu, host_maintenance or unknown",
                          .required = true},
                         {.name = "hosts", .value_name = "H1,H2", .help = "the hosts it hit"},
                         {.name = "pod", .value_name = "P", .help = "the pod it hit"},
                         {.name = "job", .value_name = "J", .help = "the interrupted job"},
                         {.name = "job-gpus", .type = FlagType::kInt, .value_name = "N", .help = "GPUs of that job",
                          .min = 1},
                         {.name = "owner", .value_name = "O", .help = "who follows it up"},
                         {.name = "description", .value_name = "D", .help = "what happened"}},
               .run = record},
              {.name = "list", .summary = "List interruptions in a window, newest first", .flags = std::move(list_flags),
               .run = list},
          }};
}

}  // namespace kiln::cli
