// pods list | show.

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/groups.h"
#include "cli/table.h"
#include "orchestrator/http/client.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string renderPodList(const json& page) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : page.value("items", json::array()))
    rows.push_back({field(p, "id"), field(p, "platform"), field(p, "state"), field(p, "healthy_gpus"),
                    field(p, "hosts_by_state"), field(p, "building"), field(p, "site"), field(p, "labels")});
  return renderTable({"ID", "PLATFORM", "STATE", "HEALTHY_GPUS", "HOSTS", "BUILDING", "SITE", "LABELS"}, rows);
}

std::string renderPod(const json& pod) {
  std::string out = renderKeyValues({{"id", field(pod, "id")},
                                     {"site", field(pod, "site")},
                                     {"building", field(pod, "building")},
                                     {"platform", field(pod, "platform")},
                                     {"state", field(pod, "state")},
                                     {"healthy_gpus", field(pod, "healthy_gpus")},
                                     {"hosts_by_state", field(pod, "hosts_by_state")},
                                     {"racks", field(pod, "rack_ids")},
                                     {"spares", field(pod, "spares")},
                                     {"switch_trays", std::to_string(pod.value("switch_trays", json::array()).size())},
                                     {"labels", field(pod, "labels")},
                                     {"management", pod.value("management", json()).is_object()
                                                        ? field(pod["management"], "protocol") + ", credential " +
                                                              field(pod["management"], "credential") +
                                                              (pod["management"].value("runner", json()).is_string()
                                                                   ? ", runner " + field(pod["management"], "runner")
                                                                   : std::string(", no out-of-band runner"))
                                                        : std::string("none")}});
  std::vector<std::vector<std::string>> hosts;
  for (const auto& h : pod.value("hosts", json::array()))
    hosts.push_back({field(h, "id"), field(h, "tray"), h.value("spare", false) ? "spare" : "", field(h, "state"),
                     field(h, "state_since"), field(h, "state_reason"), bmcText(h)});
  out += "\nHosts:\n" + renderTable({"ID", "TRAY", "SPARE", "STATE", "SINCE", "REASON", "BMC"}, hosts);
  // Each NVLink switch tray with its own version (its read-back, issue 32) and its BMC.
  std::vector<std::vector<std::string>> trays;
  for (const auto& t : pod.value("switch_trays", json::array()))
    trays.push_back({field(t, "id"), field(t, "tray"),
                     t.value("versions", json::object()).value("nvswitch", std::string("-")), bmcText(t)});
  if (!trays.empty()) out += "\nSwitch trays:\n" + renderTable({"ID", "TRAY", "NVSWITCH", "BMC"}, trays);
  std::vector<std::vector<std::string>> versions;
  const json component_versions = pod.value("component_versions", json::object());
  for (const auto& [kind, by_version] : component_versions.items())
    for (const auto& [version, count] : by_version.items()) versions.push_back({kind, version, cellText(count)});
  if (!versions.empty()) out += "\nComponent versions:\n" + renderTable({"COMPONENT", "VERSION", "COUNT"}, versions);
  return out;
}

int list(CommandContext& ctx) {
  const ParsedCommand& cmd = ctx.command;
  ApiRequest req = listRequest(cmd, std::string(kApiPrefix) + "/pods");
  for (const char* filter : {"site", "building", "platform", "state", "label"})
    if (cmd.has(filter)) req.setQuery(filter, cmd.value(filter));
  auto page = fetchList(ctx, req, cmd.has("all"));
  if (!page) return kExitFailed;
  noteMorePages(ctx, *page);
  return printResult(ctx, *page, renderPodList);
}

int show(CommandContext& ctx) {
  ApiRequest req;
  req.path = std::string(kApiPrefix) + "/pods/" + http::urlEncode(ctx.command.args[0]);
  auto pod = callJson(ctx, req);
  if (!pod) return kExitFailed;
  return printResult(ctx, *pod, renderPod);
}

}  // namespace

CommandGroup podsGroup() {
  std::vector<FlagSpec> list_flags = {
      {.name = "site", .value_name = "NAME", .help = "only pods of this site"},
      {.name = "building", .value_name = "NAME", .help = "only pods of this building"},
      {.name = "platform", .value_name = "P", .help = "catalina, clemente or san_miguel"},
      {.name = "state", .value_name = "S", .help = "in_service, degraded, maintenance, incoming, down or retired"},
      {.name = "label", .type = FlagType::kKeyValue, .value_name = "K=V", .help = "only pods with this label"},
  };
  for (auto& f : pagingFlags()) list_flags.push_back(std::move(f));
  return {.name = "pods",
          .summary = "Pods: NVL72 domains of 72 GPUs.",
          .commands = {
              {.name = "list", .summary = "List pods", .flags = std::move(list_flags), .run = list},
              {.name = "show",
               .summary = "Show one pod with its hosts, spares and component versions",
               .positionals = {{"ID", "pod id, e.g. prn-b01-p0001"}},
               .run = show},
          }};
}

}  // namespace kiln::cli
