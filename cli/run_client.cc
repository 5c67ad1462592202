#include "cli/run_client.h"

#include <cstdio>
#include <ostream>
#include <set>

#include "cli/api_call.h"
#include "cli/run_view.h"
#include "cli/table.h"
#include "cli/time_text.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

Result<json> idList(const std::string& flag, const std::string& value) {
  json out = json::array();
  std::size_t start = 0;
  while (true) {
    const auto comma = value.find(',', start);
    const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return invalidArgument("--" + flag + " needs a comma-separated list of ids, not '" + value + "'");
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// "[0:12:30]"
std::string clockText(std::chrono::milliseconds elapsed) {
  const long long s = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
  char buf[32];
  std::snprintf(buf, sizeof buf, "[%lld:%02lld:%02lld]", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

}  // namespace

std::string runPath(const std::string& id) { return std::string(kApiPrefix) + "/workflow-runs/" + http::urlEncode(id); }

std::vector<FlagSpec> runTargetFlags() {
  return {
      {.name = "hosts", .value_name = "H1,H2", .help = "run on these hosts (host-scope workflows)"},
      {.name = "pods", .value_name = "P1,P2", .help = "run on these pods (every host of each)"},
      {.name = "param", .type = FlagType::kKeyValue, .value_name = "K=V",
       .help = "a workflow parameter; repeat for more", .repeated = true},
      {.name = "purpose", .value_name = "P",
       .help = "burn_in, quarantine, pre_job, maintenance or manual (default: from the workflow)"},
  };
}

Result<ApiRequest> startRunRequest(const ParsedCommand& cmd, const std::string& workflow) {
  if (!cmd.has("hosts") && !cmd.has("pods")) return invalidArgument("give --hosts or --pods");
  json body = {{"workflow", workflow}};
  for (const char* flag : {"hosts", "pods"}) {
    if (!cmd.has(flag)) continue;
    auto ids = idList(flag, cmd.value(flag));
    if (!ids.ok()) return ids.error();
    body[flag] = *ids;
  }
  json params = json::object();
  for (const auto& kv : cmd.values("param")) {
    const auto eq = kv.find('=');  // parseArgs checked the K=V shape
    const std::string key = kv.substr(0, eq);
    if (params.contains(key)) return invalidArgument("--param " + key + " given twice");
    params[key] = kv.substr(eq + 1);
  }
  if (!params.empty()) body["params"] = params;
  if (cmd.has("purpose")) body["purpose"] = cmd.value("purpose");
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/workflow-runs";
  req.body = body.dump();
  return req;
}

Result<std::optional<std::chrono::milliseconds>> durationFlag(const ParsedCommand& cmd, const std::string& flag) {
  if (!cmd.has(flag)) return std::optional<std::chrono::milliseconds>();
  auto d = parseDuration(cmd.value(flag));
  if (!d.ok()) return invalidArgument("--" + flag + ": " + d.error().message);
  return std::optional<std::chrono::milliseconds>(*d);
}

FollowResult followRun(CommandContext& ctx, json run, const FollowOptions& options) {
  KILN_CHECK(ctx.transport != nullptr);
  std::ostream& log = ctx.json() ? ctx.err : ctx.out;
  const bool bar = !ctx.json() && ctx.system.stdout_is_tty && ctx.system.stdout_is_tty();
  const auto start = ctx.system.now();
  const std::string id = field(run, "id");
  ApiRequest poll;
  poll.path = options.path.empty() ? runPath(id) : options.path;

  std::string last_line;
  std::set<std::string> reported;  // hosts whose failure or cancellation was printed
  std::optional<std::chrono::steady_clock::time_point> outage_since;
  bool bar_shown = false;
  auto clearBar = [&] {
    if (!bar_shown) return;
    log << "\r\033[K";
    bar_shown = false;
  };

  while (true) {
    const auto now = ctx.system.now();
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - start);
    const std::string line = progressLine(run);
    if (line != last_line) {
      clearBar();
      log << clockText(elapsed) << " " << line << "\n";
      last_line = line;
    }
    if (run.contains("hosts") && run["hosts"].is_array()) {
      for (const auto& h : run["hosts"]) {
        const std::string status = field(h, "status");
        if ((status != "failed" && status != "cancelled") || !reported.insert(field(h, "host")).second) continue;
        std::string reasons;
        if (h.contains("failures") && h["failures"].is_array())
          for (const auto& f : h["failures"]) reasons += (reasons.empty() ? "" : "; ") + cellText(f);
        clearBar();
        log << "  " << (status == "failed" ? "FAILED " : "cancelled ") << field(h, "host")
            << (reasons.empty() ? "" : ": " + shorten(reasons, 300)) << "\n";
      }
    }
    if (field(run, "state") != "running") {
      clearBar();
      log << std::flush;
      return {FollowEnd::kFinished, std::move(run)};
    }
    if (options.timeout && elapsed >= *options.timeout) {
      clearBar();
      log << std::flush;
      return {FollowEnd::kTimedOut, std::move(run)};
    }
    if (bar) {
      log << "\r\033[K" << progressBar(run, elapsed) << std::flush;
      bar_shown = true;
    }

    auto wait = options.poll_interval;
    if (options.timeout) wait = std::min(wait, *options.timeout - elapsed);
    ctx.system.sleep_for(wait);

    auto response = ctx.transport->send(poll);
    std::string problem;
    if (!response.ok()) {
      problem = response.error().message;
    } else if (response->status >= 500) {
      problem = "HTTP " + std::to_string(response->status);
    } else if (response->status >= 400) {
      clearBar();
      ctx.err << renderApiError(response->status, response->body);
      return {FollowEnd::kLost, std::move(run)};
    } else {
      json doc = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
      if (doc.is_object()) {
        outage_since.reset();
        run = std::move(doc);
        continue;
      }
      problem = "the answer is not a JSON object";
    }
    const auto failed_at = ctx.system.now();
    if (!outage_since) outage_since = failed_at;
    clearBar();
    if (failed_at - *outage_since >= options.max_outage) {
      ctx.err << "kilnctl: cannot poll " << id << " (" << problem << ") for "
              << formatDuration(std::chrono::duration_cast<std::chrono::milliseconds>(failed_at - *outage_since))
              << "; giving up\n";
      return {FollowEnd::kLost, std::move(run)};
    }
    ctx.err << "kilnctl: cannot poll " << id << ": " << problem << " (retrying)\n";
  }
}

}  // namespace kiln::cli
