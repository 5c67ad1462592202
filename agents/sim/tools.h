#pragma once
// Command-line front of the simulated tools: parses a real tool's argv and runs it on a
// HostState through HostSim. Pure apart from the injected file reader.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agents/sim/host_sim.h"

namespace kiln::sim {

// Names the multi-call binary answers to (argv[0] basename or `kiln-hwsim TOOL`).
inline constexpr std::array<const char*, 7> kToolNames = {
    "nvidia-smi", "dcgmi", "nvfwupd", "mlxfwmanager", "kiln-reboot", "kiln-inventory", "kiln-driver-install"};
bool isToolName(const std::string& name);

struct ToolContext {
  // nvidia-smi's timestamp for this run ("Mon Jun  2 10:00:00 2025").
  std::string timestamp;
  // Reads a file (nvfwupd package manifests); nullopt if unreadable.
  std::function<std::optional<std::string>(const std::string& path)> read_file;
};

// Runs `tool` (one of kToolNames, or "kiln-hwsim" for its own subcommands flash / fault /
// xids / state) with `args` (argv without the tool name) against `state`. Applies hang and
// slow faults. Unknown options produce the tool's usage error, never a crash.
ToolRun runTool(HostState& state, const std::string& tool, const std::vector<std::string>& args,
                const ToolContext& ctx);

// Version number embedded in a firmware image file name ("fw-ConnectX7-rel-28_43_1014-...bin"
// -> "28.43.1014"); nullopt if none.
std::optional<std::string> versionFromImageName(const std::string& path);

}  // namespace kiln::sim
