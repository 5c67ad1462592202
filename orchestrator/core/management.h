#pragma once
// A pod's management endpoints (issue 32): how Kiln's out-of-band runners reach each compute
// tray's BMC and each NVLink switch tray's BMC. Imported with the fleet as templates (a fleet of
// 100,000 GPUs names its BMCs by convention, not one by one), inherited from fleet to site to
// building to pod, and expanded per device here. Credentials are by reference: `credential`
// names an entry of the runners' credential stores (kiln-oob --credential); no secret is ever
// imported or stored. Pure.
//
//   management:
//     protocol: redfish                       # redfish | ipmi
//     credential: tray-bmc                    # a name, never a password
//     tray_bmc: "{host}-bmc.mgmt.prn.example" # {host} {pod} {rack} {tray}; optional ":PORT"
//     switch_bmc: "{switch}-bmc.mgmt.prn.example"  # {switch} {pod} {rack} {tray}
//     runner: oob-b01                         # the out-of-band runner that reaches these BMCs
//                                             # (or several: "oob-b01a,oob-b01b", steps spread by tray)

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kiln::core {

struct ManagementSpec {
  std::string protocol;    // "redfish" | "ipmi"; empty with the rest: no management endpoints
  std::string credential;  // a credential name
  std::string tray_bmc;    // address template for compute trays
  std::string switch_bmc;  // address template for NVLink switch trays
  // The out-of-band runner (a kiln-agent on a management host, common/runner_key.h) that runs
  // the pod's steps about its BMCs; empty: none (such steps fail, a reboot is not recovered).
  // Several, comma-separated ("oob-b01a,oob-b01b,oob-b01c"): the steps are spread over them by
  // device (runnerFor), so that a rack upgrade's BMC steps run side by side.
  std::string runner;

  bool empty() const {
    return protocol.empty() && credential.empty() && tray_bmc.empty() && switch_bmc.empty() && runner.empty();
  }
  bool operator==(const ManagementSpec&) const = default;
};

// One device's management endpoint, expanded.
struct BmcEndpointView {
  std::string address;
  int port = 0;
  std::string protocol, credential;
};

// The keys of a management block, and the ones refused with a pointed message (a secret).
const std::vector<std::string>& managementKeys();
bool secretLikeKey(const std::string& key);  // password, secret, token, key, ...

// Checks a whole (inherited) block: the protocol, the credential name, each template's
// placeholders and the characters an address may hold. Errors are (field, message) pairs, the
// field relative to the block ("protocol", "tray_bmc").
std::vector<std::pair<std::string, std::string>> validateManagement(const ManagementSpec& m);

// `inner` with every field it leaves empty taken from `outer`.
ManagementSpec inheritManagement(ManagementSpec inner, const ManagementSpec& outer);

// The runners a block names, in its order (empty: none; a validated block has no empty entry).
std::vector<std::string> runnersOf(const ManagementSpec& m);
// The runner that runs the steps about `device`'s BMC: one of runnersOf(m), always the same one
// for the same device and list (FNV-1a of the device id, so every kilnd and every version agree);
// "" when the block names none.
std::string runnerFor(const ManagementSpec& m, const std::string& device);

// The endpoint of a compute tray / a switch tray, or nullopt when the pod names no template for
// it. Values: {host}/{switch} the device id, {pod}, {rack} the rack id, {tray} its tray number.
std::optional<BmcEndpointView> trayBmcOf(const ManagementSpec& m, const std::string& host, const std::string& pod,
                                         const std::string& rack, int tray);
// "HOST:PORT" as kiln-oob --bmc takes it ("[v6]:PORT" for an IPv6 literal).
std::string bmcArgument(const BmcEndpointView& e);

std::optional<BmcEndpointView> switchBmcOf(const ManagementSpec& m, const std::string& switch_tray,
                                           const std::string& pod, const std::string& rack, int tray);

}  // namespace kiln::core
