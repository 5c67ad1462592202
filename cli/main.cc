// kilnctl: the composition root. Builds the command registry and the real System and
// Transport, then hands argv to the command layer (cli/command.h).

#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/groups.h"
#include "cli/http_transport.h"
#include "cli/system.h"

int main(int argc, char** argv) {
  kiln::cli::Registry registry;
  kiln::cli::addBuiltinGroups(registry);
  kiln::cli::System system = kiln::cli::realSystem();
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code = kiln::cli::runCli(registry, args, system, kiln::cli::makeHttpTransport, std::cout, std::cerr);
  std::cout.flush();
  return code;
}
