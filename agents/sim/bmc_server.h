#pragma once
// kiln-hwsim bmc: one simulated tray BMC (redfish_bmc.h) served over HTTP or HTTPS until SIGTERM.
//
//   kiln-hwsim bmc --listen HOST:PORT --user USER --password-file FILE [--tray NAME]
//                  [--tls-cert FILE --tls-key FILE] [--firmware ID=VERSION]... [--fault reset-ignored]
//                  [--port-file FILE]
//
// PORT 0 picks a free port; --port-file receives the port once it listens. Exit 2 on bad usage.

#include <string>
#include <vector>

namespace kiln::sim {

int runBmcServer(const std::vector<std::string>& args);

}  // namespace kiln::sim
