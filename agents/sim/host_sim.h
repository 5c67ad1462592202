#pragma once
// HostSim: the behaviour of one simulated compute tray. Each operation mutates the HostState
// it was given (counters grow, faults are consumed, firmware goes pending) and returns a
// ToolRun: what the real tool would print, when, and with which exit code. Nothing here
// sleeps or touches files, so the same class drives the multi-call binary (which plays the
// ToolRun with real sleeps) and an in-process virtual fleet (which can schedule it).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/sim/host_state.h"
#include "agents/sim/render.h"
#include "common/result.h"

namespace kiln::sim {

// Nominal durations in seconds at time scale 1.0. docs/FACTS.md, "Health checks": dcgmi diag level
// 1 takes seconds, level 2 ~2 min, level 3 ~15 min; an nvfwupd push ~2-3 min. Level 4 ("extended")
// has no published figure: 45 min is [our target]. Reboot and mlxfwmanager burn times are
// [our target] too.
inline constexpr double kDiagSeconds[5] = {0, 10, 120, 900, 2700};
inline constexpr double kFlashMinSeconds = 120;
inline constexpr double kFlashMaxSeconds = 180;
inline constexpr double kMlxBurnSeconds = 90;
inline constexpr double kRebootSeconds = 240;
// Installing a GPU driver package (driver, fabric manager, DCGM): [our target].
inline constexpr double kDriverInstallSeconds = 60;
inline constexpr double kNvidiaSmiSeconds = 0.5;
inline constexpr double kNvlinkQuerySeconds = 1;
// `dcgmi mndiag` (nvloom / mnubergemm across a pod): no published duration; 10 min is
// [our target].
inline constexpr double kMndiagSeconds = 600;
// A hung tool sleeps this long, unscaled: past any step timeout.
inline constexpr double kHangSeconds = 7 * 24 * 3600;

// One piece of a tool's output, printed after `delay_s` more seconds have passed.
struct OutputChunk {
  double delay_s = 0;
  std::string text;
  bool to_stderr = false;
  bool scaled = true;  // false: the delay ignores the time scale (hangs)
  // The tool reports how long it has run: `text`, then the time since the tool started as the
  // player MEASURED it (H:MM:SS), then a newline. A time-scaled run says how long it really
  // took, not the nominal duration it simulates.
  bool stamp_elapsed = false;
};

// A chunk's text as printed `elapsed_s` seconds after the tool started.
std::string chunkText(const OutputChunk& c, double elapsed_s);
// H:MM:SS, rounded to the nearest second.
std::string elapsedText(double seconds);

// What running a tool does, as data.
struct ToolRun {
  std::vector<OutputChunk> chunks;
  int exit_code = 0;
  // State change that happens only once the tool has finished (e.g. a flash that completes,
  // a reboot that comes back). Apply it to the current state after the delays.
  std::function<void(HostState&)> on_complete;

  void out(std::string text, double delay_s = 0) { chunks.push_back({delay_s, std::move(text)}); }
  void err(std::string text) { chunks.push_back({0, std::move(text), true}); }
  // "<label>H:MM:SS\n" with the time the tool has run when it prints it (OutputChunk).
  void outElapsed(std::string label) { chunks.push_back({0, std::move(label), false, true, true}); }
  double nominalSeconds() const;  // sum of scaled delays
  // The output as a run at `time_scale` prints it (elapsed stamps from the scaled delays).
  std::string stdoutText(double time_scale = 1.0) const;
  std::string stderrText(double time_scale = 1.0) const;
};

class HostSim {
 public:
  // Operates on `state`, which must outlive the HostSim. Not thread-safe: callers serialise
  // access to one host's state (the StateStore lock does this across processes).
  explicit HostSim(HostState& state);

  // ---- nvidia-smi
  ToolRun nvidiaSmiQueryXml(const std::string& timestamp) const;
  ToolRun nvidiaSmiList() const;
  ToolRun nvidiaSmiReset(int gpu);

  // ---- dcgmi
  // Runs the level-N diagnostic against the current state; level >= 2 counts as an NVLink
  // check on every GPU. Pre-condition: 1 <= level <= 4.
  DiagReport diagnose(int level);
  ToolRun dcgmiDiag(int level, bool json);
  // One NVLink check per queried GPU (weak links grow), then the counters. nullopt = all GPUs.
  ToolRun dcgmiNvlinkErrors(std::optional<int> gpu, bool json);
  ToolRun dcgmiNvlinkStatus() const;
  // `dcgmi mndiag --hostList H1,H2,... --run nvloom|mnubergemm`: a rack-level stress started on
  // one host. The simulator knows only this host's state: every GPU here gets one NVLink check
  // (weak links grow); this host's row is Fail, and the exit code 226, when one of its links
  // degraded; the other listed hosts are shown as Pass. Pre-condition: `hosts` not empty.
  ToolRun dcgmiMndiag(const std::vector<std::string>& hosts, const std::string& test);

  // ---- firmware
  // `kiln-hwsim flash COMPONENT VERSION`: the version goes pending when the flash completes
  // and activates at the next reboot. A flash_failure fault makes it fail instead.
  ToolRun flash(const std::string& component, const std::string& version);
  // `nvfwupd ... update_fw -p PACKAGE`: flashes every component in `components`.
  ToolRun nvfwupdUpdate(const std::string& package, const std::map<std::string, std::string>& components);
  ToolRun nvfwupdShowVersion() const;
  ToolRun mlxQuery(const std::optional<std::string>& image_version) const;
  ToolRun mlxUpdate(const std::string& image_version);
  // `kiln-driver-install VERSION`: installs the GPU driver package of that version; like a
  // real driver install it goes pending and activates at the next reboot. Installing the
  // version already active (and nothing else pending) is a no-op with exit 0. A flash_failure
  // fault makes it fail (exit 1), as a broken package install would.
  ToolRun installDriver(const std::string& version);

  // ---- host
  // New boot id; pending firmware activates; NVLink counters, volatile ECC counts and the
  // Xid log reset; pending row remaps are applied. Takes effect in on_complete.
  ToolRun reboot();
  ToolRun inventory() const;
  ToolRun xidLog() const;

  // ---- faults
  // Adds a fault. row_remap_pending and xid change the GPU state at once; the other kinds are
  // remembered and consumed as tools run. Errors: bad GPU/link index, missing xid number.
  Status setFault(const Fault& fault);
  // Removes faults of `kind` (all kinds if nullopt) and undoes row-remap/Xid state.
  // Returns how many were removed.
  int clearFaults(std::optional<FaultKind> kind);
  nlohmann::json listFaults() const;

  // True (and the fault consumed) when the next run of `tool` must hang.
  bool takeHang(const std::string& tool);
  // Product of the slow factors that apply to `tool` (1.0 when none).
  double slowFactor(const std::string& tool) const;

  // One NVLink check on `gpu`: counters of its weak links grow; transient faults are used up.
  void nvlinkCheck(int gpu);
  // Whether `gpu` has a weak link that would grow at its next check.
  bool linkDegrading(int gpu) const;

 private:
  // Consumes one flash_failure use; true when this flash must fail.
  bool takeFlashFailure();
  double flashSeconds(const std::string& what) const;
  void applyRecoveryAction(GpuState& gpu, int xid);
  GpuState* gpu(int index);

  HostState& state_;
};

}  // namespace kiln::sim
