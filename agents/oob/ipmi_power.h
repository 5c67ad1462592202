#pragma once
// PowerControl over IPMI 2.0 (RMCP+, "lanplus") with the real ipmitool, run as argv through a
// ProcessRunner (never a shell). The password goes to ipmitool in its IPMI_PASSWORD environment
// variable (-E): never in argv, where any user could read it from /proc. Each call is bounded:
// ipmitool's own retransmits (-R, -N) inside `timeout`. Thin: the argv and the parsing are the
// pure functions below, tested alone; the tests also run it against OpenIPMI's ipmi_sim.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/oob/bmc_credentials.h"
#include "agents/oob/power.h"

namespace kiln::exec {
class ProcessRunner;
}

namespace kiln::oob {

struct IpmiOptions {
  std::string ipmitool = "/usr/bin/ipmitool";
  std::chrono::milliseconds timeout{20000};  // the whole call, retransmits included
  int retries = 2;                           // ipmitool -R
  int retransmit_s = 2;                      // ipmitool -N
};

// ipmitool's argv for `command` ("chassis power status", "chassis power cycle", ...) on `bmc`
// as `user`. No secret in it.
std::vector<std::string> ipmitoolArgv(const IpmiOptions& o, const BmcEndpoint& bmc, const std::string& user,
                                      const std::vector<std::string>& command);

// "Chassis Power is on" -> kOn; anything else is an error quoting what ipmitool said.
Result<PowerState> parseChassisPowerStatus(std::string_view stdout_text);
// `ipmitool sel list` ("   1 | 12/07/2026 | 13:40:01 | Power Unit #0x31 | Power off/down |
// Asserted", or "SEL has no entries") -> entries, oldest first.
std::vector<LogEntry> parseSelList(std::string_view stdout_text);

class IpmiPower final : public PowerControl, public EventLog {
 public:
  // `credential(name)`: the runner's credential store (loadBmcCredential bound to its file).
  using CredentialSource = std::function<Result<BmcCredential>(const std::string& name)>;
  IpmiPower(std::shared_ptr<exec::ProcessRunner> runner, CredentialSource credential, IpmiOptions options = {});

  Result<PowerState> status(const BmcEndpoint& bmc) override;
  Status act(const BmcEndpoint& bmc, PowerAction action) override;
  Result<std::vector<LogEntry>> eventLog(const BmcEndpoint& bmc, std::size_t last) override;

 private:
  Result<std::string> run(const BmcEndpoint& bmc, const std::vector<std::string>& command);

  std::shared_ptr<exec::ProcessRunner> runner_;
  CredentialSource credential_;
  IpmiOptions options_;
};

}  // namespace kiln::oob
