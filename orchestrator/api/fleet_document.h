#pragma once
// The fleet document (POST /fleet/import, `kilnctl fleet generate`) into core::FleetSpec:
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
// burn-in). Names follow core::isValidName; pod and building names are unique fleet-wide. Strict:
// unknown fields are errors. Pure and thread-safe; the fuzz target calls the same function.

#include <cstddef>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/fleet_spec.h"

namespace kiln::api {

// Validates a whole fleet document. On failure: kInvalidContent with one FieldError per bad
// field (paths like "sites[0].buildings[1].pods[3].platform"), at most kMaxFieldErrors.
inline constexpr std::size_t kMaxFieldErrors = 200;
Result<core::FleetSpec> parseFleetSpec(const nlohmann::json& doc);

}  // namespace kiln::api
