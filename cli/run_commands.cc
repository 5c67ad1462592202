// run start | show | list | cancel | watch.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/run_client.h"
#include "cli/run_view.h"
#include "cli/table.h"
#include "cli/time_text.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

int start(CommandContext& ctx) {
  auto req = startRunRequest(ctx.command, ctx.command.args[0]);
  if (!req.ok()) return ctx.usageError(req.error().message);
  auto run = callJson(ctx, *req);
  if (!run) return kExitFailed;
  return printResult(ctx, *run, [](const json& r) {
    return "started " + field(r, "id") + ": " + progressLine(r) + "\nFollow it: kilnctl run watch " + field(r, "id") + "\n";
  });
}

int show(CommandContext& ctx) {
  ApiRequest req;
  req.path = runPath(ctx.command.args[0]);
  auto run = callJson(ctx, req);
  if (!run) return kExitFailed;
  return printResult(ctx, *run, renderRun);
}

int list(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req = listRequest(cmd, std::string(kApiPrefix) + "/workflow-runs");
  for (const char* filter : {"workflow", "state", "host", "purpose"})
    if (cmd.has(filter)) req.setQuery(filter, cmd.value(filter));
  auto page = fetchList(ctx, req, cmd.has("all"));
  if (!page) return kExitFailed;
  noteMorePages(ctx, *page);
  return printResult(ctx, *page, renderRunList);
}

int cancel(CommandContext& ctx) {
  ApiRequest req;
  req.method = "POST";
  req.path = runPath(ctx.command.args[0]) + "/cancel";
  auto run = callJson(ctx, req);
  if (!run) return kExitFailed;
  return printResult(ctx, *run, renderVerdict);
}

int watch(CommandContext& ctx) {
  const std::string& id = ctx.command.args[0];
  auto timeout = durationFlag(ctx.command, "timeout");
  if (!timeout.ok()) return ctx.usageError(timeout.error().message);
  auto interval = durationFlag(ctx.command, "poll-interval");
  if (!interval.ok()) return ctx.usageError(interval.error().message);
  FollowOptions options;
  options.timeout = *timeout;
  if (*interval) options.poll_interval = **interval;
  else options.poll_interval = std::chrono::seconds(5);

  ApiRequest req;
  req.path = runPath(id);
  auto run = callJson(ctx, req);
  if (!run) return kExitFailed;
  FollowResult r = followRun(ctx, std::move(*run), options);
  if (r.end == FollowEnd::kLost) return ctx.failure("lost track of " + id);
  if (r.end == FollowEnd::kTimedOut) {
    ctx.err << "kilnctl: stopped watching " << id << " after " << ctx.command.value("timeout")
            << "; the run goes on (kilnctl run cancel " << id << " stops it)\n";
    if (ctx.json()) ctx.out << r.run.dump(2) << "\n";
    return kExitFailed;
  }
  printResult(ctx, r.run, renderVerdict);
  return field(r.run, "state") == "passed" ? kExitOk : kExitFailed;
}

}  // namespace

CommandGroup runGroup() {
  std::vector<FlagSpec> start_flags = runTargetFlags();
  std::vector<FlagSpec> list_flags = {
      {.name = "workflow", .value_name = "NAME", .help = "only runs of this workflow"},
      {.name = "state", .value_name = "S", .help = "running, passed, failed or cancelled"},
      {.name = "host", .value_name = "ID", .help = "only runs on this host"},
      {.name = "purpose", .value_name = "P", .help = "burn_in, quarantine, pre_job, maintenance or manual"},
  };
  for (auto& f : pagingFlags()) list_flags.push_back(std::move(f));
  return {.name = "run",
          .summary = "Workflow runs: start a workflow on hosts or pods and follow it.",
          .commands = {
              {.name = "start",
               .summary = "Start a workflow on hosts or pods (operator)",
               .positionals = {{"WORKFLOW", "workflow name, e.g. l11-burn-in"}},
               .flags = std::move(start_flags),
               .run = start},
              {.name = "show",
               .summary = "Show a run: per host, per step outcome, exit code, time and message; the verdict",
               .positionals = {{"ID", "run id"}},
               .run = show},
              {.name = "list", .summary = "List runs, newest first", .flags = std::move(list_flags), .run = list},
              {.name = "cancel",
               .summary = "Cancel a running run (operator); steps running on agents are killed",
               .positionals = {{"ID", "run id"}},
               .run = cancel},
              {.name = "watch",
               .summary = "Follow a run until it ends; exit 0 when it passed, 1 when it failed, was cancelled or "
                          "--timeout passed",
               .positionals = {{"ID", "run id"}},
               .flags = {{.name = "timeout", .value_name = "D", .help = "stop watching after D (90s, 15m, 2h, 1h30m)"},
                         {.name = "poll-interval", .value_name = "D", .help = "time between polls (default 5s)"}},
               .run = watch},
          }};
}

}  // namespace kiln::cli
