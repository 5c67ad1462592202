// slurm prolog | health-check: kilnd's pre-job check of a job's nodes, as a program Slurm runs
// (Prolog, PrologSlurmctld, HealthCheckProgram). Slurm reads the exit code (non-zero: drain the
// node, requeue the job) and logs stderr, so every outcome is one short "kiln: ..." line on
// stderr and an exit code; stdout stays empty unless --json.

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "common/hostlist.h"
#include "cli/run_client.h"
#include "cli/table.h"
#include "cli/time_text.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kDefaultTimeout = std::chrono::seconds(50);  // Slurm's PrologEpilogTimeout is often 60 s
// One node (a Prolog on each node, HealthCheckProgram): every node of a job polls, so slowly.
// A job's whole hostlist (PrologSlurmctld, one kilnctl per job): 4 polls a second, each of the
// check's state only (?view=state), so the verdict is seen within 250 ms of the run's end.
constexpr milliseconds kDefaultPollInterval = std::chrono::seconds(1);
constexpr milliseconds kJobPollInterval = std::chrono::milliseconds(250);
// Polls failing this long in a row end the wait early as "kilnd unreachable".
constexpr milliseconds kMaxPollOutage = std::chrono::seconds(15);
constexpr std::size_t kMaxLineChars = 400;

enum class Mode { kProlog, kHealthCheck };

// `text` on one line: control characters become spaces, at most `max` code points.
std::string oneLine(std::string text, std::size_t max = kMaxLineChars) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return shorten(text, max);
}

// An HTTP error answer on one line: "HTTP 422 invalid_content: MESSAGE; nodes[1]: no host ...".
std::string apiErrorLine(int status, const std::string& body) {
  std::string out = "HTTP " + std::to_string(status);
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].is_object()) {
    if (!body.empty()) out += ": " + oneLine(body, 200);
    return out;
  }
  const json& e = doc["error"];
  if (const std::string code = field(e, "code"); !code.empty()) out += " " + code;
  if (const std::string message = field(e, "message"); !message.empty()) out += ": " + message;
  auto details = e.find("details");
  if (details != e.end() && details->is_object()) {
    for (const auto& [key, value] : details->items()) {
      if (key == "fields" && value.is_array()) {
        for (const auto& f : value) {
          const std::string path = field(f, "path");
          out += "; " + (path.empty() ? std::string("(document)") : path) + ": " + field(f, "message");
        }
      } else {
        out += "; " + key + ": " + cellText(value);
      }
    }
  }
  return out;
}

// Forwards to the command's transport and remembers why the last call did not give a usable
// answer ("" when it did), so a lost or timed-out wait can say what went wrong.
class WatchedTransport : public Transport {
 public:
  explicit WatchedTransport(Transport& inner) : inner_(inner) {}
  Result<ApiResponse> send(const ApiRequest& request) override {
    auto r = inner_.send(request);
    if (!r.ok()) problem_ = r.error().message;
    else if (r->status >= 400) problem_ = apiErrorLine(r->status, r->body);
    else if (!json::parse(r->body, nullptr, /*allow_exceptions=*/false).is_object())
      problem_ = "HTTP " + std::to_string(r->status) + " with a body that is not a JSON object";
    else problem_.clear();
    return r;
  }
  const std::string& problem() const { return problem_; }

 private:
  Transport& inner_;
  std::string problem_;
};

// Where the node names come from: the expression and what gave it ("--nodes", an env var).
struct NodeSource {
  std::string expression, from;
};

std::optional<std::string> envValue(const System& system, const std::string& name) {
  auto v = system.get_env(name);
  if (!v || v->empty()) return std::nullopt;  // an empty variable counts as unset
  return v;
}

Result<NodeSource> nodeSource(const CommandContext& ctx, Mode mode) {
  const ParsedCommand& cmd = ctx.command;
  if (cmd.has("nodes")) {
    if (cmd.value("nodes").empty()) return invalidArgument("--nodes needs a Slurm hostlist, e.g. gpu[001-064]");
    return NodeSource{cmd.value("nodes"), "--nodes"};
  }
  std::vector<std::string> vars;
  if (mode == Mode::kProlog) {
    // A slurmd Prolog checks its own node only, even where Slurm also hands it the job's list:
    // otherwise one bad node would fail (and drain) every node of the job.
    if (envValue(ctx.system, "SLURM_SCRIPT_CONTEXT").value_or("") == "prolog_slurmd") vars.push_back("SLURMD_NODENAME");
    for (const char* v : {"SLURM_JOB_NODELIST", "SLURMD_NODENAME", "SLURM_NODELIST"}) vars.push_back(v);
  } else {
    vars.push_back("SLURMD_NODENAME");
  }
  for (const auto& v : vars)
    if (auto value = envValue(ctx.system, v)) return NodeSource{*value, "$" + v};
  if (mode == Mode::kProlog)
    return invalidArgument("no nodes to check: give --nodes, or run as a Slurm Prolog (SLURMD_NODENAME) or "
                           "PrologSlurmctld (SLURM_JOB_NODELIST)");
  std::string host = ctx.system.host_name ? ctx.system.host_name() : "";
  host = host.substr(0, host.find('.'));  // the short name, as Slurm names nodes
  if (host.empty()) return invalidArgument("cannot tell this machine's host name: give --nodes");
  return NodeSource{host, "the host name"};
}

struct Options {
  Mode mode = Mode::kProlog;
  std::string who;  // "prolog", "health-check": the prefix of lines that are not a verdict
  bool fail_closed = false;
  milliseconds timeout = kDefaultTimeout;
  milliseconds poll_interval = kDefaultPollInterval;
};

// The check gave no verdict: one line, exit by --unreachable.
int noVerdict(CommandContext& ctx, const Options& o, const std::string& what) {
  ctx.err << "kiln: " << o.who << ": " << oneLine(what) << ": failing " << (o.fail_closed ? "closed" : "open") << "\n";
  return o.fail_closed ? kExitFailed : kExitOk;
}

// host id -> "node" (or "node1,node2") from the POST answer's {"node": "host"} map.
std::map<std::string, std::string> nodesByHost(const json& run) {
  std::map<std::string, std::string> out;
  auto nodes = run.find("nodes");
  if (nodes == run.end() || !nodes->is_object()) return out;
  for (const auto& [node, host] : nodes->items()) {
    if (!host.is_string()) continue;
    std::string& s = out[host.get<std::string>()];
    s += (s.empty() ? "" : ",") + node;
  }
  return out;
}

std::string firstReason(const json& host) {
  if (host.contains("failures") && host["failures"].is_array() && !host["failures"].empty())
    return cellText(host["failures"][0]);
  if (host.contains("steps") && host["steps"].is_array())
    for (const auto& s : host["steps"])
      if (field(s, "outcome") == "failed") {
        const std::string message = field(s, "message");
        return field(s, "step") + (message.empty() ? " failed" : ": " + message);
      }
  return "no reason recorded";
}

int check(CommandContext& ctx, Mode mode) {
  const ParsedCommand& cmd = ctx.command;
  Options o;
  o.mode = mode;
  o.who = mode == Mode::kProlog ? "prolog" : "health-check";
  const std::string policy = cmd.value("unreachable", "open");
  if (policy != "open" && policy != "closed")
    return ctx.usageError("--unreachable must be open or closed, not '" + policy + "'");
  o.fail_closed = policy == "closed";
  auto timeout = durationFlag(cmd, "timeout");
  if (!timeout.ok()) return ctx.usageError(timeout.error().message);
  if (*timeout) o.timeout = **timeout;
  auto interval = durationFlag(cmd, "poll-interval");
  if (!interval.ok()) return ctx.usageError(interval.error().message);

  auto source = nodeSource(ctx, mode);
  if (!source.ok()) return ctx.usageError(source.error().message);
  auto expanded = expandHostlist(source->expression);
  if (!expanded.ok()) return ctx.usageError(source->from + ": " + expanded.error().message);
  if (*interval) o.poll_interval = **interval;
  else if (expanded->size() > 1) o.poll_interval = kJobPollInterval;
  json nodes = json::array();
  std::set<std::string> seen;
  for (auto& n : *expanded)
    if (seen.insert(n).second) nodes.push_back(std::move(n));

  json body = {{"nodes", std::move(nodes)}};
  if (mode == Mode::kProlog) {
    std::string job = cmd.has("job") ? cmd.value("job") : envValue(ctx.system, "SLURM_JOB_ID").value_or("");
    if (!job.empty()) body["job"] = job;
  }
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/scheduler/checks";
  req.body = body.dump();

  const auto start = ctx.system.now();
  WatchedTransport transport(*ctx.transport);
  auto response = transport.send(req);
  if (!response.ok()) return noVerdict(ctx, o, "kilnd unreachable (" + response.error().message + ")");
  if (response->status >= 500)
    return noVerdict(ctx, o, "kilnd unreachable (" + apiErrorLine(response->status, response->body) + ")");
  if (response->status >= 400)
    return noVerdict(ctx, o, "kilnd refused the check (" + apiErrorLine(response->status, response->body) + ")");
  json started = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (!started.is_object() || field(started, "id").empty())
    return noVerdict(ctx, o, "kilnd's answer (HTTP " + std::to_string(response->status) + ") names no check run");
  const std::string id = field(started, "id");
  const auto node_of = nodesByHost(started);

  // Follow quietly: followRun's progress lines and per-poll errors are for people at a terminal,
  // not for Slurm's log; what went wrong is in `transport`.
  ParsedCommand quiet_cmd = cmd;
  quiet_cmd.global.json = false;
  std::ostringstream discard;
  CommandContext quiet{quiet_cmd, &transport, ctx.system, discard, discard};
  FollowOptions follow;
  follow.poll_interval = o.poll_interval;
  const auto spent = std::chrono::duration_cast<milliseconds>(ctx.system.now() - start);
  follow.timeout = std::max(milliseconds(0), o.timeout - spent);
  follow.max_outage = kMaxPollOutage;
  // The polls read the check's state only, whose summary names the failed hosts and their
  // reasons; the whole view (every host's steps) is read once, at the end, for --json.
  const std::string check_path = std::string(kApiPrefix) + "/scheduler/checks/" + http::urlEncode(id);
  follow.path = check_path + "?view=state";
  FollowResult r = followRun(quiet, started, follow);
  if (r.end == FollowEnd::kFinished && !r.run.contains("hosts") && ctx.json()) {
    ApiRequest full;
    full.path = check_path;
    auto got = transport.send(full);
    json doc = got.ok() && got->status == 200 ? json::parse(got->body, nullptr, /*allow_exceptions=*/false) : json();
    if (doc.is_object()) r.run = std::move(doc);
  }
  if (!r.run.contains("nodes") && started.contains("nodes")) r.run["nodes"] = started["nodes"];
  if (ctx.json()) ctx.out << r.run.dump(2) << "\n";

  const std::string where = "pre-job check ";
  if (r.end == FollowEnd::kLost)
    return noVerdict(ctx, o, "kilnd unreachable (lost " + id + ": " + (transport.problem().empty() ? "polls failed" : transport.problem()) + ")");
  if (r.end == FollowEnd::kTimedOut) {
    if (!transport.problem().empty())
      return noVerdict(ctx, o, "kilnd unreachable (lost " + id + ": " + transport.problem() + ")");
    return noVerdict(ctx, o, where + id + " did not finish within " + formatDuration(o.timeout) + " (left running)");
  }
  const std::string state = field(r.run, "state");
  const std::size_t node_count = r.run.contains("nodes") && r.run["nodes"].is_object() ? r.run["nodes"].size()
                                                                                      : body["nodes"].size();
  if (state == "passed") {
    ctx.err << "kiln: " << where << id << " passed on " << node_count << (node_count == 1 ? " node" : " nodes") << "\n";
    return kExitOk;
  }
  // The failed hosts with their first reason: from the whole view when it was read, else from
  // the summary (the state view's); `lost` (the summary's): no report came within the step's
  // lease, which says nothing of the host's health.
  struct Failed {
    std::string host, reason;
    bool lost = false;
  };
  std::vector<Failed> failed;
  std::map<std::string, bool> lost_of;
  const json* unhealthy = nullptr;
  if (auto s = r.run.find("summary"); s != r.run.end() && s->is_object())
    if (auto u = s->find("unhealthy"); u != s->end() && u->is_array()) unhealthy = &*u;
  if (unhealthy != nullptr)
    for (const auto& h : *unhealthy)
      if (h.is_object()) lost_of[field(h, "host")] = h.value("lost", false);
  if (r.run.contains("hosts") && r.run["hosts"].is_array()) {
    for (const auto& h : r.run["hosts"])
      if (field(h, "status") == "failed") failed.push_back({field(h, "host"), firstReason(h), lost_of[field(h, "host")]});
  } else if (unhealthy != nullptr) {
    for (const auto& h : *unhealthy) {
      if (!h.is_object()) continue;
      auto reasons = h.find("reasons");
      const bool any = reasons != h.end() && reasons->is_array() && !reasons->empty();
      failed.push_back({field(h, "host"), any ? cellText((*reasons)[0]) : "no reason recorded", h.value("lost", false)});
    }
  }
  // Only lost reports: kilnd (overloaded) or the agents (unreachable) could not say, which is no
  // verdict on the nodes: --unreachable decides, as when kilnd is down.
  if (!failed.empty() && std::all_of(failed.begin(), failed.end(), [](const Failed& f) { return f.lost; }))
    return noVerdict(ctx, o, where + id + ": no report from " + std::to_string(failed.size()) +
                                 (failed.size() == 1 ? " host" : " hosts") +
                                 " within its step's lease (kilnd overloaded, or the agents unreachable)");
  for (const auto& f : failed) {
    auto node = node_of.find(f.host);
    ctx.err << "kiln: " << where << id << " failed on " << f.host << "(" << (node == node_of.end() ? "?" : node->second)
            << "): " << oneLine(f.reason) << "\n";
  }
  const std::size_t failed_hosts = failed.size();
  if (failed_hosts == 0)
    ctx.err << "kiln: " << where << id << (state == "cancelled" ? " was cancelled" : " ended " + oneLine(state, 40))
            << " before giving a verdict\n";
  return kExitFailed;
}

std::vector<FlagSpec> commonFlags() {
  return {
      {.name = "timeout", .value_name = "D",
       .help = "give up waiting after D (default 50s, inside Slurm's usual 60 s PrologEpilogTimeout); the check is "
               "left running and --unreachable decides the exit code"},
      {.name = "poll-interval", .value_name = "D",
       .help = "time between polls of the check (default 1s for one node, 250ms for a job's whole hostlist)"},
      {.name = "unreachable", .value_name = "open|closed",
       .help = "when there is no verdict (kilnd unreachable or 5xx, a check refused with 4xx, --timeout passed): "
               "open (default) exits 0 and the job runs, because a down kilnd must not drain the whole cluster; "
               "closed exits 1 (the node is drained, the job requeued)"},
  };
}

}  // namespace

CommandGroup slurmGroup() {
  std::vector<FlagSpec> prolog_flags = {
      {.name = "nodes", .value_name = "LIST",
       .help = "the nodes to check, a Slurm hostlist (gpu[001-064],login1); default: $SLURM_JOB_NODELIST "
               "(PrologSlurmctld), else $SLURMD_NODENAME (Prolog; first when $SLURM_SCRIPT_CONTEXT is "
               "prolog_slurmd), else $SLURM_NODELIST"},
      {.name = "job", .value_name = "ID", .help = "the Slurm job the check is for (default: $SLURM_JOB_ID; none if unset)"},
  };
  std::vector<FlagSpec> health_flags = {
      {.name = "nodes", .value_name = "LIST",
       .help = "the nodes to check, a Slurm hostlist; default: $SLURMD_NODENAME, else this machine's short host name"},
  };
  for (auto& f : commonFlags()) {
    prolog_flags.push_back(f);
    health_flags.push_back(f);
  }
  return {
      .name = "slurm",
      .summary =
          "Slurm integration: kilnd's pre-job check of a job's nodes as a program Slurm runs (Prolog,\n"
          "PrologSlurmctld, HealthCheckProgram). Exit 0 passed, 1 failed (a Prolog's node is drained and\n"
          "the job requeued), 2 bad usage; one \"kiln: ...\" line on stderr, nothing on stdout unless --json.\n"
          "When there is no verdict (kilnd down, a refused check, --timeout) --unreachable decides: open\n"
          "(default, exit 0) or closed (exit 1). Connection settings as for every command, e.g. the Prolog\n"
          "wrapper\n"
          "  #!/bin/sh\n"
          "  KILN_CONFIG=/etc/kiln/prolog.yaml exec /usr/bin/kilnctl --timeout 10 slurm prolog\n"
          "Each HTTP call of these commands takes at most 10 s (less with the global --timeout), so a\n"
          "kilnd that accepts connections and never answers cannot hold Slurm past its limit.",
      .commands =
          {
              {.name = "prolog",
               .summary = "Slurm Prolog/PrologSlurmctld: kilnd's pre-job check of the job's nodes; exit 0 passed, "
                          "1 failed (Slurm drains the node, requeues the job), 2 bad usage",
               .flags = std::move(prolog_flags),
               .max_call_timeout = std::chrono::seconds(10),
               .run = [](CommandContext& ctx) { return check(ctx, Mode::kProlog); }},
              {.name = "health-check",
               .summary = "Slurm HealthCheckProgram: the pre-job check of this node (no job); prints the verdict "
                          "line and exits like prolog",
               .flags = std::move(health_flags),
               .max_call_timeout = std::chrono::seconds(10),
               .run = [](CommandContext& ctx) { return check(ctx, Mode::kHealthCheck); }},
          },
  };
}

}  // namespace kiln::cli
