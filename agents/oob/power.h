#pragma once
// Out-of-band power control of a tray through its BMC (issue 32): the seam every out-of-band
// power driver implements, and the words the runner and the engine share. IPMI (ipmi_power.h,
// ipmitool against a real BMC or OpenIPMI's ipmi_sim) is the first driver; Redfish's
// ComputerSystem.Reset comes behind the same interface.
//
// A driver never retries on its own beyond its protocol's own bounded retransmits: the caller
// (a workflow step on an out-of-band runner) owns attempts and deadlines, so a dead BMC costs
// one bounded wait, not a retry storm.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kiln::oob {

enum class PowerState { kOn, kOff };
enum class PowerAction { kOn, kOff, kCycle, kReset };

std::string_view powerStateName(PowerState s);    // "on", "off"
std::string_view powerActionName(PowerAction a);  // "on", "off", "cycle", "reset"
std::optional<PowerAction> parsePowerAction(std::string_view text);

// Where a BMC answers. `credential` names an entry of the runner's credential store
// (bmc_credentials.h): the secret itself never travels with the endpoint.
struct BmcEndpoint {
  std::string address;  // host name or IP literal
  int port = 623;
  std::string credential;
  // IPMI 2.0 cipher suite: 17 (HMAC-SHA256, AES-CBC-128) unless the site's BMCs only offer 3.
  int cipher_suite = 17;
};

// "host", "host:port", "[v6]:port" -> address and port (`default_port` when none: 623 for IPMI,
// 443 for Redfish). Refuses what could be taken for an option or carries spaces or control
// characters.
Result<BmcEndpoint> parseBmcAddress(std::string_view text, int default_port = 623);

// One firmware component as the device itself reports it (Redfish's FirmwareInventory).
struct FirmwareItem {
  std::string id, name, version;
  bool updateable = false;
};

class PowerControl {
 public:
  virtual ~PowerControl() = default;
  // The chassis power state as the BMC reports it.
  virtual Result<PowerState> status(const BmcEndpoint& bmc) = 0;
  // Asks the BMC for `action`; returns once the BMC took the command (not once the tray is up).
  virtual Status act(const BmcEndpoint& bmc, PowerAction action) = 0;
};

// A firmware update through the BMC (issue 32): what the component reported before and after,
// whether anything was pushed, and the Task that did it.
struct FirmwareUpdateResult {
  std::string before, after;
  bool pushed = false;
  std::string task, task_state;
};

// A driver that pushes verified firmware to a device and reads the result back (Redfish).
class FirmwareUpdater {
 public:
  virtual ~FirmwareUpdater() = default;
  virtual Result<FirmwareUpdateResult> update(const BmcEndpoint& bmc, const std::string& component,
                                              const std::string& image, const std::string& version,
                                              std::chrono::seconds task_timeout, std::chrono::milliseconds poll) = 0;
};

// A BMC's own restart (Redfish #Manager.Reset), as NVIDIA's rack recipe asks after a BMC's
// firmware update: "BMC first and reset". The tray's power is not touched. Returns the firmware
// version the BMC reports once it answers again (within `wait`, asking every `poll`).
class BmcManager {
 public:
  virtual ~BmcManager() = default;
  virtual Result<std::string> resetBmc(const BmcEndpoint& bmc, std::chrono::seconds wait,
                                       std::chrono::milliseconds poll) = 0;
};

// One entry of the BMC's event log (IPMI's SEL, Redfish's LogServices): what a recovery puts
// into its step's output so that nobody has to log into the BMC to see why a tray died.
struct LogEntry {
  std::string id, created, severity, message;
};

class EventLog {
 public:
  virtual ~EventLog() = default;
  // The newest `last` entries, oldest first.
  virtual Result<std::vector<LogEntry>> eventLog(const BmcEndpoint& bmc, std::size_t last) = 0;
};

// A driver that can read the device's firmware versions back (Redfish; IPMI cannot).
class FirmwareInventory {
 public:
  virtual ~FirmwareInventory() = default;
  virtual Result<std::vector<FirmwareItem>> firmware(const BmcEndpoint& bmc) = 0;
};

}  // namespace kiln::oob
