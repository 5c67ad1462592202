#include "cli/groups.h"

namespace kiln::cli {

void addBuiltinGroups(Registry& registry) {
  registry.add(fleetGroup());
  registry.add(podsGroup());
  registry.add(hostsGroup());
  registry.add(capacityGroup());
  registry.add(tokenGroup());
  registry.add(workflowGroup());
  registry.add(runGroup());
  registry.add(quarantineGroup());
  registry.add(gateGroup());
  registry.add(bundleGroup());
  registry.add(rolloutGroup());
  registry.add(reliabilityGroup());
  registry.add(interruptionGroup());
  registry.add(slurmGroup());
}

std::vector<FlagSpec> pagingFlags() {
  return {
      {.name = "limit", .type = FlagType::kInt, .value_name = "N", .help = "items per page, 1-1000 (default 100)",
       .min = 1, .max = 1000},
      {.name = "cursor", .value_name = "CURSOR", .help = "start after this cursor (next_cursor of a previous page)"},
      {.name = "all", .type = FlagType::kBool, .help = "follow next_cursor to the end"},
  };
}

ApiRequest listRequest(const ParsedCommand& cmd, const std::string& path) {
  ApiRequest req;
  req.path = path;
  if (cmd.has("limit")) req.setQuery("limit", cmd.value("limit"));
  else if (cmd.has("all")) req.setQuery("limit", "1000");  // fewer round trips
  if (cmd.has("cursor")) req.setQuery("cursor", cmd.value("cursor"));
  return req;
}

}  // namespace kiln::cli
