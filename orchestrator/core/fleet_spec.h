#pragma once
// A fleet (POST /fleet/import, `kilnctl fleet generate`) as typed, validated data: its sites,
// buildings and pods, each pod with its versions already inherited from the levels above it.
// The document's decoder is api/fleet_document.h. Pure and thread-safe.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/host_lifecycle.h"
#include "orchestrator/core/management.h"

namespace kiln::core {

struct PodSpec {
  std::string id;
  std::string building;
  std::string site;
  Platform platform = Platform::kClemente;
  std::map<std::string, std::string> labels;
  HostState initial_state = HostState::kAvailable;
  std::map<std::string, std::string> versions;  // component kind -> version
  ManagementSpec management;                    // inherited; empty: none (core/management.h)
};

struct BuildingSpec {
  std::string id;
  std::string site;
};

struct FleetSpec {
  std::vector<std::string> sites;
  std::vector<BuildingSpec> buildings;
  std::vector<PodSpec> pods;
};

// Names of sites, buildings, pods and labels: 1-63 of [a-z0-9._-], starting with a letter or
// digit.
bool isValidName(std::string_view name);

}  // namespace kiln::core
