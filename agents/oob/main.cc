// kiln-oob: out-of-band power control through a tray's BMC (oob_cli.h). Wiring only.
#include <cstdlib>
#include <iostream>

#include "agents/oob/oob_cli.h"
#include "common/exec/process_runner.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  kiln::oob::OobCliOptions options;
  if (const char* dir = std::getenv("CREDENTIALS_DIRECTORY")) options.credentials_directory = dir;
  if (const char* tool = std::getenv("KILN_IPMITOOL")) options.ipmi.ipmitool = tool;
  std::shared_ptr<kiln::exec::ProcessRunner> runner = kiln::exec::makeBoostProcessRunner();
  return kiln::oob::runOobCli(args, std::cout, std::cerr, options, [&](const kiln::oob::OobCliOptions& o) {
    return std::make_unique<kiln::oob::IpmiPower>(
        runner,
        [o](const std::string& name) {
          return kiln::oob::loadBmcCredential(name, o.credentials_file, o.credentials_directory);
        },
        o.ipmi);
  });
}
