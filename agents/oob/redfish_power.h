#pragma once
// PowerControl over Redfish (DMTF), and the firmware inventory read-back (issue 32), with
// libcurl: HTTPS verified against the site's CA file (or the system's), HTTP Basic with a
// credential from the runner's store (never in argv, a URL or a log), every request bounded by
// `timeout`, every answer capped at 1 MiB and checked for the shape Redfish gives it (a hostile
// or broken BMC gets a clear error, not a crash).
//
//   status: the first member of /redfish/v1/Systems, its PowerState ("On", "Off", ...).
//   act:    POST its #ComputerSystem.Reset target with ResetType On | ForceOff | PowerCycle |
//           ForceRestart, when the BMC lists that value as allowed; else an error naming them.
//   firmware(): every member of /redfish/v1/UpdateService/FirmwareInventory (Id, Version,
//           Updateable), what a rack upgrade reads back from the device itself.
//
// `insecure` turns certificate checks off: an explicit opt-in per site (kiln-oob --insecure),
// which kiln-oob says on stderr every time.

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agents/oob/bmc_credentials.h"
#include "agents/oob/power.h"

namespace kiln::oob {

struct RedfishOptions {
  std::string ca_file;  // empty: the system's CA bundle
  bool insecure = false;
  bool plain_http = false;  // http:// (a test BMC on loopback); never with a real BMC
  std::chrono::milliseconds timeout{20000};
  // A Redfish session per BMC (POST SessionService/Sessions once, then X-Auth-Token; DELETEd when
  // the driver is destroyed): the password crosses the wire once, not with every request. A BMC
  // without a SessionService (404/405/501) is asked with HTTP Basic. false: Basic always.
  bool sessions = true;
};

// The ResetType a PowerAction asks a Redfish BMC for.
std::string resetTypeFor(PowerAction action);
// Redfish's PowerState word -> PowerState ("On", "PoweringOff": on; "Off", "PoweringOn": off).
Result<PowerState> parseRedfishPowerState(const nlohmann::json& system);
// A collection's member links, each a Redfish path on the same BMC (at most 256).
Result<std::vector<std::string>> redfishMembers(const nlohmann::json& collection, const std::string& what);
// True for a path kiln-oob may ask of the BMC that gave it: /redfish/v1..., no host, no "..".
bool safeRedfishPath(const std::string& path);
// The Reset action's target and allowed values from a ComputerSystem document.
Result<std::pair<std::string, std::vector<std::string>>> resetAction(const nlohmann::json& system);

class RedfishPower final : public PowerControl,
                           public FirmwareInventory,
                           public FirmwareUpdater,
                           public EventLog,
                           public BmcManager {
 public:
  using CredentialSource = std::function<Result<BmcCredential>(const std::string& name)>;
  RedfishPower(CredentialSource credential, RedfishOptions options);
  ~RedfishPower() override;  // logs out of every session it opened (bounded, best effort)

  Result<PowerState> status(const BmcEndpoint& bmc) override;
  Status act(const BmcEndpoint& bmc, PowerAction action) override;
  Result<std::vector<FirmwareItem>> firmware(const BmcEndpoint& bmc) override;
  // The first ComputerSystem's LogServices, each one's Entries (members embedded in the
  // collection, as BMCs serve them; at most 8 services and 1,000 entries read).
  Result<std::vector<LogEntry>> eventLog(const BmcEndpoint& bmc, std::size_t last) override;

  // Pushes `image` (bytes the caller has verified) to FirmwareInventory member `component`
  // through the BMC's MultipartHttpPushUri, follows the Task to its end (at most `task_timeout`,
  // asking every `poll`) and reads the version back. Nothing is pushed when the component already
  // reports `version` (an update is never flashed twice). Errors: the Task ended otherwise than
  // Completed, or is still running at the deadline (with its state and percentage), or the
  // component reports another version after it (a BMC that did not apply the image).
  Result<FirmwareUpdateResult> update(const BmcEndpoint& bmc, const std::string& component, const std::string& image,
                                      const std::string& version, std::chrono::seconds task_timeout,
                                      std::chrono::milliseconds poll) override;

  // The first Manager's #Manager.Reset (GracefulRestart when allowed, else ForceRestart). The
  // BMC drops its sessions as it restarts: the next request logs in again. Its answers while it
  // is away (connection refused, 503) are waited out until `wait`; then its FirmwareVersion.
  Result<std::string> resetBmc(const BmcEndpoint& bmc, std::chrono::seconds wait,
                               std::chrono::milliseconds poll) override;

 private:
  // GET or POST `path` (absolute, "/redfish/v1/..."): the parsed JSON body (null for none).
  // One request, authenticated by the BMC's session (opened on first use) or HTTP Basic.
  // `params`: POST `body` as the UpdateFile part with `params` as UpdateParameters; the answer's
  // Location header goes to `location`.
  Result<nlohmann::json> call(const BmcEndpoint& bmc, const BmcCredential& cred, const std::string& method,
                              const std::string& path, const std::string& body, const std::string* params = nullptr,
                              std::string* location = nullptr);
  // The request itself. `token`: null = HTTP Basic, "" = no authentication, else X-Auth-Token.
  // `headers_out`: the answer's header lines.
  Result<nlohmann::json> send(const BmcEndpoint& bmc, const BmcCredential& cred, const std::string& method,
                              const std::string& path, const std::string& body, const std::string* params,
                              const std::string* token, std::string* headers_out);
  struct Session {
    std::string token, location;  // empty token: this BMC has no sessions, Basic is used
    BmcEndpoint bmc;
    BmcCredential cred;
  };
  std::map<std::string, Session> sessions_;  // by address:port
  Result<nlohmann::json> firstSystem(const BmcEndpoint& bmc, const BmcCredential& cred, std::string& path);

  CredentialSource credential_;
  RedfishOptions options_;
};

}  // namespace kiln::oob
