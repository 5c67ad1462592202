#pragma once
// A read-back step's versions (issue 32): what a device reported of itself through its BMC,
// turned into component versions of fleet devices. Compliance counts each device by its own
// read-back, so this is where a runner's output is allowed to speak for a device, and for which
// ones: the host's own BMC (target: bmc) or the NVLink switch trays of the host's pod
// (target: switch_trays), nothing else. Pure.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

// One version one device reported of itself.
struct DeviceVersion {
  std::string device;  // a host id (its own BMC) or a switch tray id
  std::string kind;    // a component kind (common/component_kinds.h)
  std::string version;
  std::string reported_by;  // the host whose step read it back
  bool operator==(const DeviceVersion&) const = default;
};

// The names of "NAME=ADDR,NAME=ADDR" (the `pod.switch_bmcs` context field), in order.
std::vector<std::string> deviceListNames(const std::string& list);

// What one read-back step's parsed output (kiln-oob firmware list) says, for the step's
// `inventory` (kind -> FirmwareInventory member id):
//   target bmc:          {"firmware": [{"id", "version"}, ...]} -> versions of `host` itself;
//   target switch_trays: {"devices": [{"device", "firmware": [...]} | {"device", "error"}, ...]}
//                        -> versions of the switch trays named in `switch_bmcs`.
// `versions` gets what the devices that answered reported (also when the step then fails, for
// compliance to show which devices are done). The error (the step fails with it) names:
//   - a device that is not the pod's (nothing at all is taken from such an output: it speaks
//     for hardware the step was not about);
//   - a device of the pod with no read-back (it failed, or is missing from the answer);
//   - an inventory member a device did not report, or reported without a version.
struct ReadBack {
  std::vector<DeviceVersion> versions;
  std::string error;  // empty: every device read back every kind
};
ReadBack readBack(const workflow::StepSpec& step, const std::string& host, const std::string& switch_bmcs,
                  const nlohmann::json& parsed);

}  // namespace kiln::runs
