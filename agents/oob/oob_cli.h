#pragma once
// kiln-oob: out-of-band power control as a workflow step runs it on an out-of-band runner
// (issue 32), or as an SRE runs it by hand:
//
//   kiln-oob power status|on|off|cycle|reset --bmc HOST[:PORT] --credential NAME
//            [--credentials FILE] [--cipher-suite N] [--timeout SECONDS] [--wait SECONDS]
//
// On success it prints one JSON object on stdout ({"bmc", "action", "power"[, "before"]}) for
// the step's `parse: json`, exit 0. A BMC that fails or does not reach the state asked for
// within --wait: exit 1, the reason on stderr (never a secret). Bad usage, or a credential the
// runner does not have or keeps unsafely: exit 2.

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "agents/oob/ipmi_power.h"
#include "agents/oob/power.h"

namespace kiln::oob {

struct OobCliOptions {
  IpmiOptions ipmi;
  std::string credentials_file{kDefaultCredentialsFile};
  std::string credentials_directory;  // $CREDENTIALS_DIRECTORY
  std::chrono::milliseconds poll{1000};
};

// `make(options)`: the PowerControl to use (kiln-oob's main: IpmiPower over the real runner).
int runOobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, OobCliOptions options,
              const std::function<std::unique_ptr<PowerControl>(const OobCliOptions&)>& make);

}  // namespace kiln::oob
