#pragma once
// A fleet file (POST /fleet/import, `kilnctl fleet generate`) as typed, validated data.
//
//   versions: {gpu_vbios: "97.00.82", driver: "570.133.20", ...}   # optional, inherited
//   sites:
//     - name: prn
//       buildings:
//         - name: prn-b01
//           pods:
//             - {name: prn-b01-p0001, platform: clemente, labels: {row: a}, state: available}
//
// `versions` may stand at fleet, site, building or pod level; the innermost wins. `state` is the
// initial state of the pod's hosts: available (default) or incoming (new hardware awaiting
// burn-in). Names: 1-63 of [a-z0-9._-], starting with a letter or digit; pod and building names
// are unique fleet-wide. Pure and thread-safe.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/host_lifecycle.h"

namespace kiln::core {

struct PodSpec {
  std::string id;
  std::string building;
  std::string site;
  Platform platform = Platform::kClemente;
  std::map<std::string, std::string> labels;
  HostState initial_state = HostState::kAvailable;
  std::map<std::string, std::string> versions;  // component kind -> version
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

// Validates a whole fleet document. On failure: kInvalidContent with one FieldError per bad
// field (paths like "sites[0].buildings[1].pods[3].platform"), at most kMaxFieldErrors.
inline constexpr std::size_t kMaxFieldErrors = 200;
Result<FleetSpec> parseFleetSpec(const nlohmann::json& doc);

bool isValidName(std::string_view name);

}  // namespace kiln::core
