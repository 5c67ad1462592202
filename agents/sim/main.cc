// kiln-hwsim: composition root of the hardware simulator (see agents/sim/cli.h).

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "agents/sim/bmc_server.h"
#include "agents/sim/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  // A simulated tray BMC speaking Redfish (issue 32): a server, not a tool.
  if (args.size() >= 2 && args[1] == "bmc") return kiln::sim::runBmcServer({args.begin() + 2, args.end()});
  kiln::sim::CliEnv env;
  env.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) env.hostname = host;
  std::time_t now = std::time(nullptr);
  char ts[64] = {};
  std::tm tm{};
  ::localtime_r(&now, &tm);
  std::strftime(ts, sizeof ts, "%a %b %e %H:%M:%S %Y", &tm);
  env.timestamp = ts;
  std::error_code ec;
  env.self_exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) env.self_exe = std::filesystem::absolute(argv[0]);
  kiln::sim::RealSleeper sleeper;
  try {
    return kiln::sim::runCli(args, env, std::cout, std::cerr, sleeper);
  } catch (const std::exception& e) {
    std::cerr << "kiln-hwsim: internal error: " << e.what() << "\n";
    return 70;
  }
}
