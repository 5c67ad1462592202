#pragma once
// Firmware consistency across a pod's NVLink domain (issue 32): a pod never returns to service
// with its trays or switch trays on mixed versions of a component its bundle names (NVIDIA's own
// rack tooling keeps the same rule). One rule, here; the rollout controller applies it before any
// validated host of the pod goes back to service (controller_validate.cc). Pure.
//
// A device is checked against the version the bundle names for each of its kinds, with the
// version Kiln last read back from it (the components the agents' inventory reports). A device
// with no reading of a kind is not judged on it.

#include <set>
#include <string>
#include <vector>

#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/bundle.h"

namespace kiln::rollouts {

struct VersionMismatch {
  std::string device, kind, version, want;
  bool operator==(const VersionMismatch&) const = default;
};

// The devices among `devices` whose reported version of a component kind the bundle names
// differs from the bundle's, in device then kind order.
std::vector<VersionMismatch> mixedVersions(const Bundle& bundle, const std::vector<core::ComponentVersion>& components,
                                           const std::set<std::string>& devices);

// "p1-h03 nic 28.43.2026 (bundle 28.43.3010), p1-s2 nvswitch 1.2 (bundle 1.4) and 3 more".
std::string describeMismatches(const std::vector<VersionMismatch>& mismatches, std::size_t listed = 5);

}  // namespace kiln::rollouts
