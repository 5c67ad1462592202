// hosts list | show | events | action | enrol-token.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/table.h"
#include "cli/time_text.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string hostPath(const std::string& id) {
  return std::string(kApiPrefix) + "/hosts/" + http::urlEncode(id);
}

std::string renderHostList(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& h : page.value("items", json::array()))
    rows.push_back({field(h, "id"), field(h, "pod"), field(h, "tray"), h.value("spare", false) ? "spare" : "",
                    field(h, "state"), field(h, "state_since"), field(h, "state_reason")});
  return renderTable({"ID", "POD", "TRAY", "SPARE", "STATE", "SINCE", "REASON"}, rows);
}

std::string renderHost(const json& host) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const char* key : {"id", "pod", "rack", "building", "site", "platform", "tray", "spare", "state", "state_since",
                          "state_reason", "last_seen", "agent_version"})
    pairs.emplace_back(key, field(host, key));
  // The tray's BMC (issue 32): where the out-of-band runners reach it, and the credential's name.
  if (const std::string b = bmcText(host); !b.empty())
    pairs.emplace_back("bmc", b);
  else if (host.contains("bmc"))
    pairs.emplace_back("bmc", "none in the fleet file");
  if (host.contains("allowed_actions")) {
    std::string actions;
    for (const auto& a : host["allowed_actions"]) actions += (actions.empty() ? "" : ", ") + cellText(a);
    pairs.emplace_back("allowed_actions", actions);
  }
  std::string out = renderKeyValues(pairs);
  if (host.contains("gpus")) {
    std::vector<std::vector<std::string>> gpus;
    for (const auto& g : host["gpus"])
      gpus.push_back({field(g, "index"), field(g, "id"), field(g, "serial"), field(g, "uuid")});
    out += "\nGPUs:\n" + renderTable({"INDEX", "ID", "SERIAL", "UUID"}, gpus);
  }
  if (host.contains("components") && host["components"].is_object() && !host["components"].empty()) {
    std::vector<std::vector<std::string>> components;
    for (const auto& [kind, version] : host["components"].items()) components.push_back({kind, cellText(version)});
    out += "\nComponents:\n" + renderTable({"COMPONENT", "VERSION"}, components);
  }
  return out;
}

std::string renderEvents(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : page.value("items", json::array()))
    rows.push_back(
        {field(e, "at"), field(e, "action"), field(e, "from"), field(e, "to"), field(e, "actor"), field(e, "reason")});
  return renderTable({"AT", "ACTION", "FROM", "TO", "ACTOR", "REASON"}, rows);
}

int list(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req = listRequest(cmd, std::string(kApiPrefix) + "/hosts");
  for (const char* filter : {"pod", "building", "site", "state"})
    if (cmd.has(filter)) req.setQuery(filter, cmd.value(filter));
  auto page = fetchList(ctx, req, cmd.has("all"));
  if (!page) return kExitFailed;
  noteMorePages(ctx, *page);
  return printResult(ctx, *page, renderHostList);
}

int show(CommandContext& ctx) {
  ApiRequest req;
  req.path = hostPath(ctx.command.args[0]);
  auto host = callJson(ctx, req);
  if (!host) return kExitFailed;
  return printResult(ctx, *host, renderHost);
}

int events(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  auto page = fetchList(ctx, listRequest(cmd, hostPath(cmd.args[0]) + "/events"), cmd.has("all"));
  if (!page) return kExitFailed;
  noteMorePages(ctx, *page);
  return printResult(ctx, *page, renderEvents);
}

int action(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  json body = {{"action", cmd.args[1]}};
  if (cmd.has("reason")) body["reason"] = cmd.value("reason");
  if (cmd.has("to")) body["to"] = cmd.value("to");
  ApiRequest req;
  req.method = "POST";
  req.path = hostPath(cmd.args[0]) + "/actions";
  req.body = body.dump();
  auto host = callJson(ctx, req);
  if (!host) return kExitFailed;
  return printResult(ctx, *host, renderHost);
}

// An enrolment token for one host: single use, short-lived (core/enrolment.h).
int enrolToken(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  json body = json::object();
  if (cmd.has("ttl")) {
    auto ttl = parseDuration(cmd.value("ttl"));
    if (!ttl.ok()) return ctx.usageError("--ttl: " + ttl.error().message);
    body["ttl_s"] = ttl->count();
  }
  if (cmd.has("reenroll")) body["reenroll"] = true;
  ApiRequest req;
  req.method = "POST";
  req.path = hostPath(cmd.args[0]) + "/enrolment-tokens";
  req.body = body.dump();
  auto token = callJson(ctx, req);
  if (!token) return kExitFailed;
  return printResult(ctx, *token, [](const json& t) {
    std::string out = renderKeyValues({{"id", field(t, "id")},
                                       {"host", field(t, "host")},
                                       {"reenroll", field(t, "reenroll")},
                                       {"expires_at", field(t, "expires_at")},
                                       {"token", field(t, "token")}});
    return out +
           "The token is shown only this once and enrols only this host, once: hand it to the host's "
           "kiln-agent (--enroll-token-file).\n";
  });
}

}  // namespace

CommandGroup hostsGroup() {
  std::vector<FlagSpec> list_flags = {
      {.name = "pod", .value_name = "ID", .help = "only hosts of this pod"},
      {.name = "building", .value_name = "NAME", .help = "only hosts of this building"},
      {.name = "site", .value_name = "NAME", .help = "only hosts of this site"},
      {.name = "state", .value_name = "S", .help = "a host state: available, allocated, draining, quarantine, ..."},
  };
  for (auto& f : pagingFlags()) list_flags.push_back(std::move(f));
  return {.name = "hosts",
          .summary = "Hosts: compute trays of 4 GPUs, and their lifecycle.",
          .commands = {
              {.name = "list", .summary = "List hosts", .flags = std::move(list_flags), .run = list},
              {.name = "show",
               .summary = "Show one host with its GPUs, component versions and the actions allowed now",
               .positionals = {{"ID", "host id, e.g. prn-b01-p0001-h01"}},
               .run = show},
              {.name = "events",
               .summary = "A host's lifecycle events, newest first",
               .positionals = {{"ID", "host id"}},
               .flags = pagingFlags(),
               .run = events},
              {.name = "action",
               .summary = "Move a host through its lifecycle (operator; override needs admin, --reason and --to)",
               .positionals = {{"ID", "host id"},
                               {"ACTION",
                                "allocate, release, drain, undrain, fail, repair, repair_complete, retire "
                                "or override"}},
               .flags = {{.name = "reason", .value_name = "TEXT", .help = "why (recorded in the host's events)"},
                         {.name = "to", .value_name = "STATE", .help = "target state (override only)"}},
               .run = action},
              {.name = "enrol-token",
               .summary = "Issue an enrolment token for one host: used once by its agent's registration (operator)",
               .positionals = {{"ID", "host id"}},
               .flags =
                   {{.name = "ttl", .value_name = "DURATION", .help = "how long it is valid: 60s to 168h (default 1h)"},
                    {.name = "reenroll",
                     .type = FlagType::kBool,
                     .help = "replace the host's enrolled agent (its agent token is revoked when this one is used)"}},
               .run = enrolToken},
          }};
}

}  // namespace kiln::cli
