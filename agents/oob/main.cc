// kiln-oob: out-of-band power control through a tray's BMC (oob_cli.h). Wiring only.
#include <cstdlib>
#include <iostream>

#include "agents/oob/oob_cli.h"
#include "agents/oob/redfish_power.h"
#include "common/exec/process_runner.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  kiln::oob::OobCliOptions options;
  if (const char* dir = std::getenv("CREDENTIALS_DIRECTORY")) options.credentials_directory = dir;
  if (const char* tool = std::getenv("KILN_IPMITOOL")) options.ipmi.ipmitool = tool;
  if (const char* plain = std::getenv("KILN_OOB_PLAIN_HTTP")) options.plain_http = std::string(plain) == "1";
  std::shared_ptr<kiln::exec::ProcessRunner> runner = kiln::exec::makeBoostProcessRunner();
  return kiln::oob::runOobCli(args, std::cout, std::cerr, options,
                              [&](const kiln::oob::OobCliOptions& o) -> std::unique_ptr<kiln::oob::PowerControl> {
                                auto credential = [o](const std::string& name) {
                                  return kiln::oob::loadBmcCredential(name, o.credentials_file,
                                                                      o.credentials_directory);
                                };
                                if (o.protocol == "redfish") {
                                  kiln::oob::RedfishOptions r;
                                  r.ca_file = o.ca_file;
                                  r.insecure = o.insecure;
                                  r.plain_http = o.plain_http;
                                  r.timeout = o.ipmi.timeout;
                                  r.sessions = o.redfish_sessions;
                                  return std::make_unique<kiln::oob::RedfishPower>(credential, r);
                                }
                                return std::make_unique<kiln::oob::IpmiPower>(runner, credential, o.ipmi);
                              });
}
