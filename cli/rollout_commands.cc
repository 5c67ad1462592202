// rollout plan | create | start | pause | resume | abort | rollback | retry | skip | list | show | watch.

#include <cstdio>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/rollout_request.h"
#include "cli/rollout_view.h"
#include "cli/run_client.h"
#include "cli/table.h"
#include "cli/time_text.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string rolloutPath(const std::string& id) { return std::string(kApiPrefix) + "/rollouts/" + http::urlEncode(id); }

int plan(CommandContext& ctx) {
  auto req = rolloutRequest(ctx.command, ctx.system, /*dry_run=*/true);
  if (!req.ok()) return ctx.usageError(req.error().message);
  auto doc = callJson(ctx, *req);
  if (!doc) return kExitFailed;
  return printResult(ctx, *doc, renderPlan);
}

// Prints a new rollout's id alone on stdout (ID=$(kilnctl rollout create ...)) and the
// explanation on stderr; --json prints the document.
int printNewRollout(CommandContext& ctx, const json& r, const std::string& what) {
  const std::string id = field(r, "id");
  if (ctx.json()) {
    ctx.out << r.dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << id << "\n";
  ctx.err << what << " " << id << " (" << field(r, "state") << "): " << field(r, "total") << " pods in "
          << (r.contains("waves") && r["waves"].is_array() ? r["waves"].size() : 0) << " waves\n";
  if (field(r, "state") == "created") ctx.err << "Start it: kilnctl rollout start " << id << "\n";
  else ctx.err << "Follow it: kilnctl rollout watch " << id << "\n";
  return kExitOk;
}

int create(CommandContext& ctx) {
  auto req = rolloutRequest(ctx.command, ctx.system, /*dry_run=*/false);
  if (!req.ok()) return ctx.usageError(req.error().message);
  auto r = callJson(ctx, *req);
  if (!r) return kExitFailed;
  return printNewRollout(ctx, *r, "created rollout");
}

// A verb's request: --reason goes into the body, and from there into the event and audit log.
ApiRequest verbRequest(const CommandContext& ctx, const std::string& path) {
  ApiRequest req;
  req.method = "POST";
  req.path = path;
  if (ctx.command.has("reason")) req.body = json{{"reason", ctx.command.value("reason")}}.dump();
  return req;
}

int post(CommandContext& ctx, const std::string& path) {
  auto r = callJson(ctx, verbRequest(ctx, path));
  if (!r) return kExitFailed;
  return printResult(ctx, *r, [](const json& doc) { return rolloutProgressLine(doc) + "\n"; });
}

CommandFn verb(const std::string& name) {
  return [name](CommandContext& ctx) { return post(ctx, rolloutPath(ctx.command.args[0]) + "/" + name); };
}

CommandFn podVerb(const std::string& name) {
  return [name](CommandContext& ctx) {
    return post(ctx, rolloutPath(ctx.command.args[0]) + "/pods/" + http::urlEncode(ctx.command.args[1]) + "/" + name);
  };
}

int rollback(CommandContext& ctx) {
  auto r = callJson(ctx, verbRequest(ctx, rolloutPath(ctx.command.args[0]) + "/rollback"));
  if (!r) return kExitFailed;
  return printNewRollout(ctx, *r, "rollback of " + ctx.command.args[0] + " started as");
}

int list(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req = listRequest(cmd, std::string(kApiPrefix) + "/rollouts");
  if (cmd.has("state")) req.setQuery("state", cmd.value("state"));
  auto page = fetchList(ctx, req, cmd.has("all"));
  if (!page) return kExitFailed;
  noteMorePages(ctx, *page);
  return printResult(ctx, *page, renderRolloutList);
}

int show(CommandContext& ctx) {
  ApiRequest req;
  req.path = rolloutPath(ctx.command.args[0]);
  auto r = callJson(ctx, req);
  if (!r) return kExitFailed;
  if (!ctx.command.has("pods")) return printResult(ctx, *r, renderRollout);
  req.path += "/pods";
  auto pods = callJson(ctx, req);
  if (!pods) return kExitFailed;
  if (ctx.json()) {
    json both = *r;
    both["pods"] = pods->value("items", json::array());
    ctx.out << both.dump(2) << "\n";
    return kExitOk;
  }
  ctx.out << renderRollout(*r) << "\nPods:\n" << renderRolloutPods(*pods);
  return kExitOk;
}

// ---- watch ----

// "[0:12:30]"
std::string clockText(std::chrono::milliseconds elapsed) {
  const long long s = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "[%lld:%02lld:%02lld]", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

// Aborting counts as an end: the rollout can no longer complete, and pods in flight may take
// long to reach a safe point (agents that do not answer), which a script should not wait for.
bool ended(const json& r) {
  const std::string state = field(r, "state");
  return state == "completed" || state == "halted" || state == "aborting" || state == "aborted";
}

enum class WatchEnd { kEnded, kTimedOut, kLost };

// Follows the rollout until it completes, halts or is aborted (or aborting). Progress (to ctx.out, or ctx.err
// with --json): on a terminal a block of wave bars redrawn in place, otherwise a timestamped
// line whenever rolloutProgressLine changes; pods that failed are printed once each (from the
// rollout's recent events). Poll failures are retried for up to 5 minutes.
WatchEnd followRollout(CommandContext& ctx, json& r, std::chrono::milliseconds interval,
                       std::optional<std::chrono::milliseconds> timeout) {
  constexpr auto kMaxOutage = std::chrono::minutes(5);
  std::ostream& log = ctx.json() ? ctx.err : ctx.out;
  const bool tty = !ctx.json() && ctx.system.stdout_is_tty && ctx.system.stdout_is_tty();
  const auto start = ctx.system.now();
  const std::string id = field(r, "id");
  ApiRequest poll;
  poll.path = rolloutPath(id);
  std::string last_line;
  std::set<std::string> reported;  // ids of failure events already printed
  std::size_t drawn = 0;           // lines of the terminal block on screen
  std::optional<std::chrono::steady_clock::time_point> outage_since;
  auto eraseBlock = [&] {
    if (drawn == 0) return;
    log << "\033[" << drawn << "F\033[J";
    drawn = 0;
  };

  while (true) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(ctx.system.now() - start);
    std::vector<std::string> notes;
    if (r.contains("events") && r["events"].is_array())
      for (auto e = r["events"].rbegin(); e != r["events"].rend(); ++e)  // newest first: print oldest first
        if (field(*e, "kind") == "failed" && reported.insert(field(*e, "id") + "/" + field(*e, "pod")).second)
          notes.push_back("  FAILED " + field(*e, "pod") + ": " + shorten(field(*e, "message"), 300));
    if (tty) {
      eraseBlock();
      for (const auto& n : notes) log << n << "\n";
      auto lines = rolloutBars(r);
      lines.back() = clockText(elapsed) + " " + lines.back();
      for (const auto& l : lines) log << l << "\n";
      drawn = lines.size();
      log << std::flush;
    } else {
      const std::string line = rolloutProgressLine(r);
      if (line != last_line) log << clockText(elapsed) << " " << line << "\n";
      last_line = line;
      for (const auto& n : notes) log << n << "\n";
    }
    if (ended(r)) return WatchEnd::kEnded;
    if (timeout && elapsed >= *timeout) return WatchEnd::kTimedOut;

    auto wait = interval;
    if (timeout) wait = std::min(wait, *timeout - elapsed);
    ctx.system.sleep_for(wait);

    auto response = ctx.transport->send(poll);
    std::string problem;
    if (!response.ok()) {
      problem = response.error().message;
    } else if (response->status >= 500) {
      problem = "HTTP " + std::to_string(response->status);
    } else if (response->status >= 400) {
      ctx.err << renderApiError(response->status, response->body);
      return WatchEnd::kLost;
    } else {
      json doc = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
      if (doc.is_object()) {
        outage_since.reset();
        r = std::move(doc);
        continue;
      }
      problem = "the answer is not a JSON object";
    }
    const auto failed_at = ctx.system.now();
    if (!outage_since) outage_since = failed_at;
    if (failed_at - *outage_since >= kMaxOutage) {
      ctx.err << "kilnctl: cannot poll " << id << " (" << problem << ") for "
              << formatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(failed_at - *outage_since))
              << "; giving up\n";
      return WatchEnd::kLost;
    }
    ctx.err << "kilnctl: cannot poll " << id << ": " << problem << " (retrying)\n";
  }
}

int watch(CommandContext& ctx) {
  const std::string& id = ctx.command.args[0];
  auto timeout = durationFlag(ctx.command, "timeout");
  if (!timeout.ok()) return ctx.usageError(timeout.error().message);
  auto interval = durationFlag(ctx.command, "interval");
  if (!interval.ok()) return ctx.usageError(interval.error().message);
  ApiRequest req;
  req.path = rolloutPath(id);
  auto r = callJson(ctx, req);
  if (!r) return kExitFailed;
  if (!r->is_object()) return ctx.failure("the server's answer is not a rollout");
  const WatchEnd end = followRollout(ctx, *r, interval->value_or(std::chrono::seconds(10)), *timeout);
  if (end == WatchEnd::kLost) return ctx.failure("lost track of " + id);
  if (ctx.json()) ctx.out << r->dump(2) << "\n";
  if (end == WatchEnd::kTimedOut) {
    ctx.err << "kilnctl: timeout: stopped watching " << id << " after " << ctx.command.value("timeout") << " while it is "
            << field(*r, "state") << "; the rollout goes on (kilnctl rollout pause " << id << " or abort stops it)\n";
    return kExitFailed;
  }
  if (!ctx.json()) ctx.out << rolloutVerdict(*r);
  const std::string state = field(*r, "state");
  if (state == "completed" && failedPods(*r) == 0) return kExitOk;
  if (state == "completed")
    ctx.err << "kilnctl: " << id << " failed: it completed with " << failedPods(*r) << " failed pods\n";
  else
    ctx.err << "kilnctl: " << id << " " << state << (field(*r, "halt_reason").empty() ? "" : ": " + field(*r, "halt_reason"))
            << "\n";
  return kExitFailed;
}

}  // namespace

CommandGroup rolloutGroup() {
  auto planFlags = [](bool create) {
    std::vector<FlagSpec> flags = {
        {.name = "bundle", .value_name = "REF", .help = "the bundle: an id like b-3, or name@version", .required = true}};
    for (auto& f : selectorFlags()) flags.push_back(std::move(f));
    for (auto& f : policyFlags()) flags.push_back(std::move(f));
    if (create) {
      flags.push_back({.name = "start", .type = FlagType::kBool, .help = "start the rollout at once"});
      flags.push_back({.name = "allow-downgrade", .type = FlagType::kBool,
                       .help = "allow a plan that moves pods to older versions (kilnd refuses it otherwise; needs --reason)"});
      flags.push_back({.name = "reason", .value_name = "TEXT", .help = "why a downgrade is allowed (the audit log keeps it)"});
    }
    return flags;
  };
  std::vector<FlagSpec> list_flags = {
      {.name = "state", .value_name = "S", .help = "created, running, paused, halted, completed, aborting or aborted"}};
  for (auto& f : pagingFlags()) list_flags.push_back(std::move(f));
  const std::vector<PositionalSpec> id = {{"ID", "rollout id, e.g. ro-5"}};
  const std::vector<FlagSpec> reason = {
      {.name = "reason", .value_name = "TEXT", .help = "why, recorded in the rollout's events and the audit log"}};
  const std::vector<PositionalSpec> id_pod = {{"ID", "rollout id, e.g. ro-5"}, {"POD", "pod id"}};
  return {.name = "rollout",
          .summary = "Rollouts: apply a bundle to pods in canary and waves under a policy; plan, control, follow.",
          .commands = {
              {.name = "plan",
               .summary = "Dry run: the waves a rollout would take and every excluded pod with its reason",
               .flags = planFlags(false),
               .run = plan},
              {.name = "create",
               .summary = "Create a rollout (operator; --start starts it); prints its id",
               .flags = planFlags(true),
               .run = create},
              {.name = "start", .summary = "Start a created rollout (operator)", .positionals = id, .flags = reason,
               .run = verb("start")},
              {.name = "pause",
               .summary = "Pause: no new pod starts, pods in flight finish (operator)",
               .positionals = id,
               .flags = reason,
               .run = verb("pause")},
              {.name = "resume",
               .summary = "Resume a paused or halted rollout; a halted one retries its failed pods (operator)",
               .positionals = id,
               .flags = reason,
               .run = verb("resume")},
              {.name = "abort",
               .summary = "Abort: pods in flight stop at a safe point and stay drained (operator)",
               .positionals = id,
               .flags = reason,
               .run = verb("abort")},
              {.name = "rollback",
               .summary = "Roll the pods this rollout upgraded back to their previous bundle (a new rollout, started)",
               .positionals = id,
               .flags = reason,
               .run = rollback},
              {.name = "retry", .summary = "Put a failed or aborted pod back to pending (operator)", .positionals = id_pod,
               .flags = reason, .run = podVerb("retry")},
              {.name = "skip", .summary = "Skip a pending or failed pod (operator)", .positionals = id_pod,
               .flags = reason, .run = podVerb("skip")},
              {.name = "list", .summary = "List rollouts, newest first", .flags = std::move(list_flags), .run = list},
              {.name = "show",
               .summary = "Show a rollout: state, waves, pods by phase, why pods wait, P50/P90 pod time, ETA, events",
               .positionals = id,
               .flags = {{.name = "pods", .type = FlagType::kBool, .help = "add a row per pod"}},
               .run = show},
              {.name = "watch",
               .summary = "Follow a rollout live; exit 0 when it completes with no failed pod, 1 when it halts, fails, "
                          "is aborted or --timeout passes",
               .positionals = id,
               .flags = {{.name = "interval", .value_name = "D", .help = "time between polls (default 10s)"},
                         {.name = "timeout", .value_name = "D", .help = "stop watching after D (90s, 15m, 2h, 1h30m)"}},
               .run = watch},
          }};
}

}  // namespace kiln::cli
