#pragma once
// The multi-call command line of kiln-hwsim: picks the tool from argv[0] (a symlink named
// nvidia-smi, dcgmi, ...) or argv[1], loads the host state from KILN_HWSIM_DIR, runs the tool
// and plays its output with (scaled) real time. Everything process-global (environment,
// clock, sleeping, the executable path) is injected so tests can drive it in-process.

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace kiln::sim {

// Time for the player: sleeping between chunks and a monotonic clock (seconds from any
// origin) that measures how long the tool has run.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void sleepFor(double seconds) = 0;
  virtual double now() = 0;
};

class RealSleeper : public Sleeper {
 public:
  void sleepFor(double seconds) override;
  double now() override;
};

struct CliEnv {
  // Environment lookup (KILN_HWSIM_DIR, KILN_HWSIM_HOST, KILN_HWSIM_PLATFORM,
  // KILN_HWSIM_TIME_SCALE).
  std::function<std::optional<std::string>(const std::string&)> getenv;
  // Fallback host name when KILN_HWSIM_HOST is unset.
  std::string hostname;
  // nvidia-smi timestamp for "now".
  std::string timestamp;
  // Path of the kiln-hwsim executable (target of install-shims symlinks).
  std::filesystem::path self_exe;
};

// Runs one invocation. `args[0]` is argv[0]. Returns the process exit code.
int runCli(const std::vector<std::string>& args, const CliEnv& env, std::ostream& out, std::ostream& err,
           Sleeper& sleeper);

// Creates DIR/<tool> -> self_exe symlinks for every simulated tool (replacing old links).
bool installShims(const std::filesystem::path& dir, const std::filesystem::path& self_exe, std::ostream& err);

}  // namespace kiln::sim
