// gate: start a workflow run, follow it, write a JUnit report, exit by the verdict (for CI).

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/junit.h"
#include "cli/run_client.h"
#include "cli/run_view.h"
#include "cli/table.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

// Exit codes: a CI job tells "the hardware failed" (1) from "the gate did not run" (2).
constexpr int kGatePassed = kExitOk;
constexpr int kGateFailed = kExitFailed;     // a host failed, the run was cancelled, timed out or lost
constexpr int kGateNotStarted = kExitUsage;  // bad usage, or the server refused / never took the run

// POSTs the run; nullopt (the reason printed) when it did not start.
std::optional<json> startRun(CommandContext& ctx, const ApiRequest& req) {
  auto response = ctx.transport->send(req);
  if (!response.ok()) {
    ctx.err << "kilnctl: " << response.error().message << "\n";
    return std::nullopt;
  }
  if (response->status >= 400) {
    ctx.err << renderApiError(response->status, response->body);
    return std::nullopt;
  }
  json run = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (!run.is_object() || field(run, "id").empty()) {
    ctx.err << "kilnctl: the server's answer names no run\n";
    return std::nullopt;
  }
  return run;
}

int gate(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  auto timeout = durationFlag(cmd, "timeout");
  if (!timeout.ok()) return ctx.usageError(timeout.error().message);
  auto interval = durationFlag(cmd, "poll-interval");
  if (!interval.ok()) return ctx.usageError(interval.error().message);
  auto req = startRunRequest(cmd, cmd.value("workflow"));
  if (!req.ok()) return ctx.usageError(req.error().message);
  FollowOptions options;
  options.timeout = *timeout;
  if (*interval) options.poll_interval = **interval;

  auto started = startRun(ctx, *req);
  if (!started) {
    ctx.err << "kilnctl: gate: the " << cmd.value("workflow") << " run could not be started\n";
    return kGateNotStarted;
  }
  const std::string id = field(*started, "id");
  std::ostream& log = ctx.json() ? ctx.err : ctx.out;
  log << "gate: started " << id << " (" << cmd.value("workflow") << ")\n";

  FollowResult r = followRun(ctx, std::move(*started), options);
  std::string note;
  if (r.end == FollowEnd::kTimedOut)
    note = "the gate stopped waiting after " + cmd.value("timeout") + "; " + id + " was left running";
  else if (r.end == FollowEnd::kLost)
    note = "the gate lost track of " + id + "; the report shows its last known state";

  int code = r.end == FollowEnd::kFinished && field(r.run, "state") == "passed" ? kGatePassed : kGateFailed;
  if (cmd.has("junit")) {
    const std::string file = cmd.value("junit");
    if (auto st = ctx.system.write_file(file, junitReport(r.run, note)); !st.ok()) {
      ctx.err << "kilnctl: " << st.error().message << "\n";
      code = kGateFailed;
    } else {
      log << "gate: JUnit report written to " << file << "\n";
    }
  }
  if (ctx.json()) ctx.out << r.run.dump(2) << "\n";
  else ctx.out << renderVerdict(r.run);
  if (!note.empty()) ctx.err << "kilnctl: " << note << " (kilnctl run cancel " << id << " stops it)\n";
  log << "gate: " << (code == kGatePassed ? "PASSED" : "FAILED") << "\n";
  return code;
}

}  // namespace

CommandGroup gateGroup() {
  std::vector<FlagSpec> flags = {
      {.name = "workflow", .value_name = "NAME", .help = "the workflow to gate on, e.g. l11-burn-in", .required = true},
  };
  for (auto& f : runTargetFlags()) flags.push_back(std::move(f));
  flags.push_back({.name = "junit", .value_name = "FILE", .help = "write a JUnit XML report (a test case per host and step)"});
  flags.push_back({.name = "timeout", .value_name = "D",
                   .help = "stop waiting after D (90s, 15m, 2h, 1h30m); the run is left running; default: none"});
  flags.push_back({.name = "poll-interval", .value_name = "D", .help = "time between polls (default 10s)"});
  return {.name = "gate",
          .summary = "CI gate: run a workflow, follow it, write JUnit, exit 0 all passed / 1 failed / 2 not started",
          .commands = {{.name = "",
                        .summary = "CI gate: run a workflow, follow it live, write JUnit; exit 0 all hosts passed, "
                                   "1 failed, 2 not started",
                        .flags = std::move(flags),
                        .run = gate}}};
}

}  // namespace kiln::cli
