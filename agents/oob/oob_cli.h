#pragma once
// kiln-oob: out-of-band power control as a workflow step runs it on an out-of-band runner
// (issue 32), or as an SRE runs it by hand:
//
//   kiln-oob power status|on|off|cycle|reset --bmc HOST[:PORT] --credential NAME
//            [--protocol ipmi|redfish] [--credentials FILE] [--timeout SECONDS] [--wait SECONDS]
//            [--cipher-suite N]            (IPMI)
//            [--ca FILE] [--insecure]      (Redfish over HTTPS)
//   kiln-oob firmware list --bmc HOST[:PORT] --credential NAME --protocol redfish [...]
//   kiln-oob firmware update --component ID --image FILE --sha256 HEX --version V ... (Redfish)
//   kiln-oob log list --bmc HOST[:PORT] --credential NAME [--last N] [...]
//   kiln-oob bmc reset --bmc HOST[:PORT] --credential NAME --protocol redfish [--wait S] (Manager.Reset:
//            the BMC restarts, the tray's power is untouched; {"bmc", "action": "bmc-reset",
//            "firmware_version"} once it answers again, within --wait, default 300 s)
//   (power commands: --log N adds the BMC's newest N event log entries to the answer)
//
// On success it prints one JSON object on stdout for the step's `parse: json`, exit 0: power
// {"bmc", "action", "power"[, "before"]}; firmware {"bmc", "firmware": [{"id", "name",
// "version", "updateable"}]}. A BMC that fails or does not reach the state asked for
// within --wait: exit 1, the reason on stderr (never a secret). Bad usage, or a credential the
// runner does not have or keeps unsafely: exit 2.
//
// A device list (an NVL72 pod's switch trays, one BMC each) in one step: every command takes
//
//   --bmc NAME=HOST[:PORT][,NAME=HOST[:PORT]...] [--parallel N]
//
// (a --bmc value with '=' is a list, split on commas only: NAME=[v6]:PORT; NAME 1 to 64 of
// A-Z a-z 0-9 . _ -, unique; 1 to 64 devices). The arguments are checked once, before any device
// is touched (a malformed list, a wrong image sha256, ...: exit 2, nothing asked); then each
// device gets its own driver from `make`, at most N (1 to 32, default 4; only with a list) at
// once, IPMI one at a time. One JSON object on stdout, the devices in the list's order:
//
//   {"devices": [{"device": NAME, <that device's single answer: "bmc", "action", "power", ...>
//                 [, "error": "<why it failed>"]}, ...],
//    "failed": [NAME, ...]}
//
// A failed device's entry carries "error" (its stderr message without "kiln-oob: ") and the
// answer fields it got to; its stderr line is also said on stderr as "NAME: kiln-oob: ...".
// Exit 0 when every device succeeded; else 2 when any failed with 2, else 1.

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "agents/oob/ipmi_power.h"
#include "agents/oob/power.h"

namespace kiln::oob {

struct OobCliOptions {
  std::string protocol = "ipmi";  // ipmi | redfish
  IpmiOptions ipmi;
  // Redfish: the CA file, --insecure (no certificate check, said on stderr), the timeout.
  std::string ca_file;
  bool insecure = false;
  bool plain_http = false;       // KILN_OOB_PLAIN_HTTP=1: a loopback test BMC without TLS
  bool redfish_sessions = true;  // --auth session (default) | basic
  std::string credentials_file{kDefaultCredentialsFile};
  std::string credentials_directory;  // $CREDENTIALS_DIRECTORY
  std::chrono::milliseconds poll{1000};
};

// `make(options)`: the driver for options.protocol (kiln-oob's main: IpmiPower over the real
// runner, or RedfishPower); `firmware list` needs one that is also a FirmwareInventory. With a
// device list it is called once per device, never two at once; the drivers then run on threads.
int runOobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, OobCliOptions options,
              const std::function<std::unique_ptr<PowerControl>(const OobCliOptions&)>& make);

}  // namespace kiln::oob
