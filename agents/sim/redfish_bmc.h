#pragma once
// A tray's BMC as Redfish clients see it (issue 32): kiln-hwsim bmc serves one per process, over
// Kiln's HTTP server, so that kiln-oob and real Redfish clients (DMTF's redfishtool, OpenStack's
// sushy) can be pointed at a tray without hardware. This is the pure part: a request in, a
// response out, over the BMC's state (power, firmware inventory, sessions), with a clock for the
// power cycle. Resources (DMTF Redfish, the subset a rack upgrade and a recovery use):
//
//   /redfish/v1/                                   ServiceRoot (no authentication, as the spec says)
//   /redfish/v1/Systems, /Systems/System_0         PowerState, #ComputerSystem.Reset
//   /redfish/v1/Chassis, /Chassis/Chassis_0        PowerState
//   /redfish/v1/Managers, /Managers/BMC_0          FirmwareVersion
//   /redfish/v1/UpdateService, .../FirmwareInventory[/{id}]   Version, Updateable
//   /redfish/v1/SessionService, .../Sessions[/{id}]           X-Auth-Token sessions
//   /redfish/v1/UpdateService/update-multipart    the MultipartHttpPushUri: one image, one target
//   /redfish/v1/TaskService/Tasks[/{id}]           the update's Task: Running, then Completed
//   /redfish/v1/Systems/System_0/LogServices/EventLog/Entries   what the BMC saw (resets, updates)
//
// A simulated firmware image's first line is "KILN-HWSIM-FW <component id> <version>"; the rest
// is payload. One update at a time (a second push while one runs gets 503, as BMCs that run out
// of memory with parallel pushes should answer).
//
// Everything but the service root needs HTTP Basic or a session's X-Auth-Token. Seeded faults:
// `reset-ignored` (a reset is accepted and does nothing, as a wedged BMC does), `task-hangs`
// (an update's Task never ends), `version-unchanged` (an update completes and the component
// still reports its old version).

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::sim {

struct BmcRequest {
  std::string method, path;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

struct BmcResponse {
  int status = 200;
  nlohmann::json body;  // null: no body
  std::vector<std::pair<std::string, std::string>> headers;
};

struct BmcConfig {
  std::string user, password;
  std::string tray;  // names the system ("GB200 compute tray <tray>")
  std::map<std::string, std::string> firmware = {{"BMC_Firmware", "25.06-2"},
                                                 {"HMC_Firmware", "GB200-P4975_0004_250301.1.0"},
                                                 {"CPLD_0", "0.1.0c"},
                                                 {"SBIOS", "02.03.12"}};
  std::set<std::string> faults;                 // "reset-ignored", "task-hangs", "version-unchanged"
  std::chrono::milliseconds cycle_off{1000};    // how long a PowerCycle keeps the tray off
  std::chrono::milliseconds update_time{1500};  // how long an update's Task runs
  std::chrono::milliseconds bmc_restart{1000};  // how long a Manager.Reset keeps the BMC away
};

class RedfishBmc {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RedfishBmc(BmcConfig config);

  BmcResponse handle(const BmcRequest& request, Clock::time_point now);

  // What the tests and the state file see.
  bool poweredOn(Clock::time_point now) const;
  const std::vector<std::string>& powerLog() const { return power_log_; }  // "On", "ForceOff", ...
  const std::map<std::string, std::string>& firmware() const { return config_.firmware; }
  std::size_t updatesPushed() const { return tasks_.size(); }
  std::size_t sessionsOpen() const { return sessions_.size(); }
  int sessionsMade() const { return next_session_ - 1; }
  int bmcResets() const { return bmc_resets_; }

 private:
  bool authorized(const BmcRequest& r) const;
  BmcResponse reset(const BmcRequest& r, Clock::time_point now);
  BmcResponse resetBmc(const BmcRequest& r, Clock::time_point now);
  BmcResponse push(const BmcRequest& r, Clock::time_point now);
  nlohmann::json taskJson(const std::string& id, Clock::time_point now);

  struct Task {
    Clock::time_point started;
    std::string component, version;
    bool applied = false;
  };
  std::map<std::string, Task> tasks_;
  std::vector<nlohmann::json> log_;  // the system's EventLog entries, oldest first
  void note(const std::string& severity, const std::string& message);
  int next_task_ = 1;

  BmcConfig config_;
  bool on_ = true;
  Clock::time_point on_again_{};  // a PowerCycle in progress: on again at this time
  bool cycling_ = false;
  std::map<std::string, std::string> sessions_;  // id -> token
  int next_session_ = 1;
  std::vector<std::string> power_log_;
  // A Manager.Reset: the BMC answers nothing (503) until then, and its sessions are gone.
  Clock::time_point bmc_back_{};
  int bmc_resets_ = 0;
};

// A Redfish error document (Base message registry style).
nlohmann::json redfishError(const std::string& message_id, const std::string& message);

// The parts of a multipart/form-data body by name (`content_type`: the request's, with its
// boundary); nullopt when it is not well formed.
std::optional<std::map<std::string, std::string>> multipartParts(const std::string& content_type,
                                                                 const std::string& body);

}  // namespace kiln::sim
