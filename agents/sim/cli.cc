#include "agents/sim/cli.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agents/sim/state_store.h"
#include "agents/sim/tools.h"

namespace kiln::sim {
namespace {

constexpr const char* kUsage =
    "usage: kiln-hwsim TOOL ARGS...        (TOOL: nvidia-smi dcgmi nvfwupd mlxfwmanager\n"
    "                                        kiln-reboot kiln-inventory kiln-driver-install)\n"
    "       kiln-hwsim install-shims DIR   symlink every TOOL in DIR to this binary\n"
    "       kiln-hwsim init [--host H] [--platform catalina|clemente]\n"
    "       kiln-hwsim flash COMPONENT VERSION\n"
    "       kiln-hwsim fault set|clear|list|seed [--kind K] [--gpu G] [--link L] [--count N]\n"
    "                        [--tool T] [--factor F] [--xid X] [--seed S --rate R]\n"
    "       kiln-hwsim xids | state\n"
    "env: KILN_HWSIM_DIR (state dir, required), KILN_HWSIM_HOST, KILN_HWSIM_PLATFORM,\n"
    "     KILN_HWSIM_TIME_SCALE (default 1.0)\n";

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::optional<std::string> flagValue(const std::vector<std::string>& args, const std::string& f) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == f) return args[i + 1];
  }
  return std::nullopt;
}

}  // namespace

double RealSleeper::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RealSleeper::sleepFor(double seconds) {
  if (seconds <= 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

bool installShims(const std::filesystem::path& dir, const std::filesystem::path& self_exe, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << "kiln-hwsim: cannot create " << dir << ": " << ec.message() << "\n";
    return false;
  }
  for (const char* tool : kToolNames) {
    const auto link = dir / tool;
    std::filesystem::remove(link, ec);
    std::filesystem::create_symlink(self_exe, link, ec);
    if (ec) {
      err << "kiln-hwsim: cannot link " << link << ": " << ec.message() << "\n";
      return false;
    }
  }
  return true;
}

int runCli(const std::vector<std::string>& args, const CliEnv& env, std::ostream& out, std::ostream& err,
           Sleeper& sleeper) {
  const double began = sleeper.now();  // what the tool reports as its run time starts here
  std::string tool = args.empty() ? "kiln-hwsim" : std::filesystem::path(args[0]).filename().string();
  std::vector<std::string> rest(args.empty() ? args.begin() : args.begin() + 1, args.end());
  if (!isToolName(tool)) {
    tool = "kiln-hwsim";
    if (!rest.empty() && isToolName(rest[0])) {
      tool = rest[0];
      rest.erase(rest.begin());
    }
  }
  if (tool == "kiln-hwsim") {
    if (rest.empty() || rest[0] == "-h" || rest[0] == "--help" || rest[0] == "help") {
      (rest.empty() ? err : out) << kUsage;
      return rest.empty() ? 2 : 0;
    }
    if (rest[0] == "install-shims") {
      if (rest.size() != 2) {
        err << "usage: kiln-hwsim install-shims DIR\n";
        return 2;
      }
      return installShims(rest[1], env.self_exe, err) ? 0 : 1;
    }
  }

  auto dir = env.getenv("KILN_HWSIM_DIR");
  if (!dir || dir->empty()) {
    err << tool << " (kiln-hwsim): KILN_HWSIM_DIR is not set; it names this host's state dir\n";
    return 2;
  }
  StateDefaults defaults;
  defaults.host = env.getenv("KILN_HWSIM_HOST").value_or(env.hostname);
  if (auto p = env.getenv("KILN_HWSIM_PLATFORM")) {
    auto platform = parsePlatform(*p);
    if (!platform) {
      err << "kiln-hwsim: unknown KILN_HWSIM_PLATFORM '" << *p << "'\n";
      return 2;
    }
    defaults.platform = *platform;
  }
  double scale = 1.0;
  if (auto s = env.getenv("KILN_HWSIM_TIME_SCALE")) {
    try {
      scale = std::stod(*s);
    } catch (const std::exception&) {
      err << "kiln-hwsim: bad KILN_HWSIM_TIME_SCALE '" << *s << "'\n";
      return 2;
    }
    if (scale < 0) scale = 0;
  }
  StateStore store(*dir, defaults);

  if (tool == "kiln-hwsim" && rest[0] == "init") {
    std::string host = flagValue(rest, "--host").value_or(defaults.host);
    Platform platform = defaults.platform;
    if (auto p = flagValue(rest, "--platform")) {
      auto parsed = parsePlatform(*p);
      if (!parsed) {
        err << "kiln-hwsim init: unknown platform '" << *p << "'\n";
        return 2;
      }
      platform = *parsed;
    }
    auto st = store.reset(makeDefaultState(host, platform));
    if (!st) {
      err << "kiln-hwsim init: " << st.error().message << "\n";
      return 1;
    }
    out << "initialised " << host << " (" << platformName(platform) << ") in " << *dir << "\n";
    return 0;
  }

  ToolContext ctx{env.timestamp, readFile};
  ToolRun run;
  auto loaded = store.update([&](HostState& state) { run = runTool(state, tool, rest, ctx); });
  if (!loaded) {
    err << tool << " (kiln-hwsim): " << loaded.error().message << "\n";
    return 1;
  }
  for (const OutputChunk& chunk : run.chunks) {
    sleeper.sleepFor(chunk.scaled ? chunk.delay_s * scale : chunk.delay_s);
    std::ostream& stream = chunk.to_stderr ? err : out;
    stream << chunkText(chunk, sleeper.now() - began);
    stream.flush();
  }
  if (run.on_complete) {
    auto done = store.update(run.on_complete);
    if (!done) {
      err << tool << " (kiln-hwsim): " << done.error().message << "\n";
      return 1;
    }
  }
  return run.exit_code;
}

}  // namespace kiln::sim
