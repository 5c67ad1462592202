#pragma once
// The component kinds Kiln tracks versions of (docs/FACTS.md), at the bottom layer so that the
// workflow loader (a read-back's `inventory`), the fleet model and the agents share one list.
// hmc_bundle = the HMC/EROT/CPLD package nvfwupd pushes per tray; nvswitch = an NVLink switch
// tray's firmware, the only kind a switch tray carries.

#include <array>
#include <string_view>

namespace kiln::components {

// Carried per compute tray (host): its firmware and its driver.
inline constexpr std::array<std::string_view, 6> kHostKinds = {"gpu_vbios", "hmc_bundle", "nic",
                                                               "bmc",       "sbios",      "driver"};
// Carried per NVLink switch tray.
inline constexpr std::string_view kSwitchKind = "nvswitch";

}  // namespace kiln::components
