#include "agents/sim/host_sim.h"

#include <algorithm>
#include <cstdio>

#include "agents/sim/ids.h"

namespace kiln::sim {
namespace {

// AP names nvfwupd shows for a component (approximate GB200 compute-tray names).
std::string apName(const std::string& component) {
  if (component == "gpu_vbios") return "HGX_FW_GPU_SXM_1";
  if (component == "hmc_bundle") return "HGX_FW_HMC_0";
  if (component == "bmc") return "FW_BMC_0";
  if (component == "sbios") return "FW_UEFI_0";
  if (component == "nic") return "CX7_0";
  if (component == "nvswitch") return "HGX_FW_NVSWITCH_0";
  return component;
}

bool isWeakLink(FaultKind k) {
  return k == FaultKind::kWeakLinkTransient || k == FaultKind::kWeakLinkPersistent;
}

}  // namespace

double ToolRun::nominalSeconds() const {
  double total = 0;
  for (const auto& c : chunks) {
    if (c.scaled) total += c.delay_s;
  }
  return total;
}

std::string elapsedText(double seconds) {
  const int s = static_cast<int>(std::max(0.0, seconds) + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

std::string chunkText(const OutputChunk& c, double elapsed_s) {
  return c.stamp_elapsed ? c.text + elapsedText(elapsed_s) + "\n" : c.text;
}

namespace {

std::string streamText(const std::vector<OutputChunk>& chunks, bool to_stderr, double time_scale) {
  std::string s;
  double t = 0;
  for (const auto& c : chunks) {
    t += c.scaled ? c.delay_s * time_scale : c.delay_s;
    if (c.to_stderr == to_stderr) s += chunkText(c, t);
  }
  return s;
}

}  // namespace

std::string ToolRun::stdoutText(double time_scale) const {
  return streamText(chunks, false, time_scale);
}

std::string ToolRun::stderrText(double time_scale) const {
  return streamText(chunks, true, time_scale);
}

HostSim::HostSim(HostState& state) : state_(state) {}

GpuState* HostSim::gpu(int index) {
  for (GpuState& g : state_.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

// ---- nvidia-smi --------------------------------------------------------------------------

ToolRun HostSim::nvidiaSmiQueryXml(const std::string& timestamp) const {
  ToolRun run;
  run.out(renderNvidiaSmiXml(state_, timestamp), kNvidiaSmiSeconds);
  return run;
}

ToolRun HostSim::nvidiaSmiList() const {
  ToolRun run;
  run.out(renderNvidiaSmiList(state_), kNvidiaSmiSeconds);
  return run;
}

ToolRun HostSim::nvidiaSmiReset(int index) {
  ToolRun run;
  GpuState* g = gpu(index);
  if (!g) {
    run.out("No devices were found\n");
    run.exit_code = 6;
    return run;
  }
  if (g->remap_pending) {
    g->remap_pending = false;
    g->remapped_rows_unc += 1;
  }
  g->recovery_action = "None";
  g->volatile_dram_uncorrectable = 0;
  g->volatile_sram_correctable = 0;
  for (auto& l : g->links) l = LinkCounters{};
  run.out("GPU " + g->pci_bus_id + " was successfully reset.\n", 5);
  run.out("All done.\n");
  return run;
}

// ---- dcgmi -------------------------------------------------------------------------------

bool HostSim::linkDegrading(int gpu_index) const {
  for (const Fault& f : state_.faults) {
    if (isWeakLink(f.kind) && f.gpu == gpu_index && f.remaining != 0) return true;
  }
  return false;
}

void HostSim::nvlinkCheck(int gpu_index) {
  GpuState* g = gpu(gpu_index);
  if (!g) return;
  for (Fault& f : state_.faults) {
    if (!isWeakLink(f.kind) || f.gpu != gpu_index || f.remaining == 0) continue;
    if (f.link < 0 || static_cast<size_t>(f.link) >= g->links.size()) continue;
    uint64_t h = fnv1a64(state_.host + "/nvlink/" + std::to_string(gpu_index) + "/" + std::to_string(f.link) + "/" +
                         std::to_string(++state_.seq));
    LinkCounters& l = g->links[static_cast<size_t>(f.link)];
    l.crc_flit += 8 + h % 24;
    l.crc_data += 1 + (h >> 8) % 6;
    l.replay += 2 + (h >> 16) % 5;
    l.recovery += (h >> 24) % 2;
    if (f.kind == FaultKind::kWeakLinkTransient && f.remaining > 0) --f.remaining;
  }
  // A transient link that has stopped degrading is no longer a fault.
  std::erase_if(state_.faults,
                [](const Fault& f) { return f.kind == FaultKind::kWeakLinkTransient && f.remaining == 0; });
}

DiagReport HostSim::diagnose(int level) {
  KILN_CHECK(level >= 1 && level <= 4);
  DiagReport report;
  report.level = level;

  // Which GPUs show link trouble during this run (judged before the run's own check).
  std::map<int, bool> degrading;
  for (const GpuState& g : state_.gpus) degrading[g.index] = level >= 2 && linkDegrading(g.index);
  std::map<int, LinkCounters> before;
  if (level >= 2) {
    for (const GpuState& g : state_.gpus) {
      LinkCounters sum;
      for (const auto& l : g.links) sum.crc_flit += l.crc_flit;
      before[g.index] = sum;
      nvlinkCheck(g.index);
    }
  }

  auto makeTest = [&](const char* category, const char* name) {
    DiagTest t{category, name, {}};
    for (const GpuState& g : state_.gpus) t.results.push_back({g.index, "Pass", {}});
    return t;
  };
  auto fail = [](DiagTest& t, int gpu_index, DiagWarning w) {
    for (auto& r : t.results) {
      if (r.gpu == gpu_index) {
        r.status = "Fail";
        r.warnings.push_back(std::move(w));
      }
    }
  };

  // Level 1: the "software" plugin covers deployment checks, page retirement / row remap and
  // the fabric manager (docs/FACTS.md: "software, row-remap, fabric manager").
  DiagTest software = makeTest("Deployment", "software");
  for (const GpuState& g : state_.gpus) {
    const std::string id = std::to_string(g.index);
    if (g.remap_pending) {
      fail(software, g.index,
           {"GPU " + id +
                " had uncorrectable memory errors and row remapping is pending. "
                "Drain the GPU and reset it or reboot the node to resolve this issue.",
            kDcgmFrPendingRowRemap, kDcgmEcHardwareMemory, kDcgmSeverityReset});
    }
    if (g.remap_failure) {
      fail(software, g.index,
           {"GPU " + id +
                " had uncorrectable memory errors and row remapping failed. "
                "Drain the GPU and run a field diagnostic.",
            kDcgmFrRowRemapFailure, kDcgmEcHardwareMemory, kDcgmSeverityIsolate});
    }
  }
  report.tests.push_back(std::move(software));
  if (level == 1) return report;

  DiagTest pcie = makeTest("Integration", "pcie");
  DiagTest memory = makeTest("Hardware", "memory");
  for (const GpuState& g : state_.gpus) {
    const std::string id = std::to_string(g.index);
    if (degrading[g.index]) {
      uint64_t grown = 0;
      for (const auto& l : g.links) grown += l.crc_flit;
      grown -= before[g.index].crc_flit;
      fail(pcie, g.index,
           {"Detected " + std::to_string(grown) + " CRC FLIT NvLink errors on GPU " + id +
                "'s NVLink which exceeds threshold of 0",
            kDcgmFrNvlinkErrorThreshold, kDcgmEcHardwareNvlink, kDcgmSeverityIsolate});
    }
    for (const XidEvent& x : state_.xids) {
      if (x.gpu != g.index) continue;
      fail(memory, g.index,
           {"Detected XID " + std::to_string(x.xid) + " for GPU " + id, kDcgmFrXidError, kDcgmEcSoftwareXid,
            kDcgmSeverityReset});
    }
  }
  report.tests.push_back(std::move(pcie));
  report.tests.push_back(std::move(memory));
  if (level == 2) return report;

  DiagTest nvbandwidth = makeTest("Integration", "nvbandwidth");
  DiagTest nccl = makeTest("Integration", "nccl_tests");
  for (const GpuState& g : state_.gpus) {
    if (!degrading[g.index]) continue;
    const std::string id = std::to_string(g.index);
    fail(nvbandwidth, g.index,
         {"GPU " + id +
              " NVLink bandwidth is below the expected value: link errors detected "
              "during the copy",
          30 /* DCGM_FR_LOW_BANDWIDTH */, kDcgmEcHardwareNvlink, kDcgmSeverityIsolate});
  }
  report.tests.push_back(std::move(nvbandwidth));
  report.tests.push_back(std::move(nccl));
  report.tests.push_back(makeTest("Hardware", "diagnostic"));
  report.tests.push_back(makeTest("Stress", "targeted_stress"));
  report.tests.push_back(makeTest("Stress", "targeted_power"));
  report.tests.push_back(makeTest("Stress", "memory_bandwidth"));
  if (level == 3) return report;

  report.tests.push_back(makeTest("Hardware", "memtest"));
  report.tests.push_back(makeTest("Hardware", "pulse_test"));
  return report;
}

ToolRun HostSim::dcgmiDiag(int level, bool json) {
  DiagReport report = diagnose(level);
  ToolRun run;
  run.out(json ? renderDiagJson(state_, report) : renderDiagText(report), kDiagSeconds[level]);
  // dcgmi returns non-zero when a test failed; the JSON is still printed.
  run.exit_code = report.failed() ? 226 : 0;
  return run;
}

ToolRun HostSim::dcgmiNvlinkErrors(std::optional<int> gpu_index, bool json) {
  ToolRun run;
  std::vector<int> ids;
  if (gpu_index) {
    if (!gpu(*gpu_index)) {
      run.out(
          "Error: Unable to retreive latest value for nvlink error counts. Return: "
          "Invalid GPU ID.\n");
      run.exit_code = 1;
      return run;
    }
    ids.push_back(*gpu_index);
  } else {
    for (const GpuState& g : state_.gpus) ids.push_back(g.index);
  }
  for (int id : ids) {
    nvlinkCheck(id);
    const GpuState& g = *gpu(id);
    run.out(json ? renderNvlinkErrorsJson(g) : renderNvlinkErrorsText(g), kNvlinkQuerySeconds);
  }
  return run;
}

ToolRun HostSim::dcgmiMndiag(const std::vector<std::string>& hosts, const std::string& test) {
  KILN_CHECK(!hosts.empty());
  std::vector<int> degraded;
  for (const GpuState& g : state_.gpus) {
    if (linkDegrading(g.index)) degraded.push_back(g.index);
    nvlinkCheck(g.index);
  }
  const bool own_failed = !degraded.empty();
  const bool listed = std::find(hosts.begin(), hosts.end(), state_.host) != hosts.end();
  const int gpus = static_cast<int>(state_.gpus.size());
  const std::string driver = state_.versions.count("driver") ? state_.versions.at("driver") : "";
  auto row = [](const std::string& left, const std::string& right) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "| %-25s | %-46s |\n", left.c_str(), right.c_str());
    return std::string(buf);
  };
  const std::string rule = "+---------------------------+------------------------------------------------+\n";
  std::string text =
      own_failed ? "Multi-node diagnostic completed with errors\n" : "Successfully ran multi-node diagnostic\n";
  text += rule + row("Diagnostic", "Result");
  text += "+===========================+================================================+\n";
  text += "|-----  Metadata  ----------+------------------------------------------------|\n";
  text += row("DCGM Version", "4.7.0");
  text += row("Driver Version Detected", driver);
  text += row("Hosts Found", std::to_string(hosts.size()));
  text += row("Hosts With Errors", own_failed ? "1" : "0");
  text += row("Total GPUs", std::to_string(static_cast<int>(hosts.size()) * gpus));
  text += "+-----  Hosts  -------------+------------------------------------------------+\n";
  for (size_t i = 0; i < hosts.size(); ++i) {
    const bool fail = own_failed && hosts[i] == state_.host;
    text += row("Host " + std::to_string(i), hosts[i] + (fail ? ": Fail" : ": Pass"));
  }
  if (own_failed && !listed) text += row("Host (local)", state_.host + ": Fail");
  text += "+-----  Test: " + test + "  " + std::string(test.size() < 12 ? 12 - test.size() : 0, '-') +
          "+------------------------------------------------+\n";
  text += row(test, own_failed ? "Fail" : "Pass");
  for (int g : degraded) {
    text += row("  Error", "NVLink errors on " + state_.host + " GPU " + std::to_string(g));
  }
  text += rule;
  ToolRun run;
  run.out(text, kMndiagSeconds);
  run.exit_code = own_failed ? 226 : 0;
  return run;
}

ToolRun HostSim::dcgmiNvlinkStatus() const {
  ToolRun run;
  run.out(renderNvlinkStatus(state_), kNvlinkQuerySeconds);
  return run;
}

// ---- firmware ----------------------------------------------------------------------------

bool HostSim::takeFlashFailure() {
  for (auto it = state_.faults.begin(); it != state_.faults.end(); ++it) {
    if (it->kind != FaultKind::kFlashFailure || it->remaining == 0) continue;
    if (it->remaining > 0 && --it->remaining == 0) state_.faults.erase(it);
    return true;
  }
  return false;
}

double HostSim::flashSeconds(const std::string& what) const {
  uint64_t h = fnv1a64(state_.host + "/flash/" + what);
  return kFlashMinSeconds + static_cast<double>(h % static_cast<uint64_t>(kFlashMaxSeconds - kFlashMinSeconds + 1));
}

ToolRun HostSim::nvfwupdUpdate(const std::string& package, const std::map<std::string, std::string>& components) {
  ToolRun run;
  for (const auto& [component, version] : components) {
    if (!isComponent(component)) {
      run.out("Error: Unknown firmware component '" + component + "' in package " + package + "\n");
      run.exit_code = 1;
      return run;
    }
  }
  const uint64_t task = ++state_.seq;
  ++state_.flashes;
  state_.last_flash = package;
  const double total = flashSeconds(package);
  const bool fails = takeFlashFailure();
  run.out("FW package: ['" + package + "']\n");
  run.out("Ok to proceed with firmware update? <Y/N>\ny\n");
  run.out("FW update started, Task Id: " + std::to_string(task) + "\n");
  run.out("Wait for Firmware Update to Start...\n", 5);
  run.out("TaskState: Running\n");
  const int steps = 10;
  const double step = (total - 5) / steps;
  for (int i = 0; i <= steps; ++i) {
    if (fails && i == 4) {
      std::string target = components.empty() ? "HGX_FW_HMC_0" : apName(components.begin()->first);
      run.out("TaskState: Exception\nTaskStatus: Critical\n", step);
      run.out("Error: Firmware update failed. Messages: ['Transfer of image to " + target +
              " failed. Task aborted.']\n");
      run.outElapsed("Overall Time Taken: ");
      run.exit_code = 1;
      return run;
    }
    run.out("PercentComplete: " + std::to_string(i * 10) + "\n", i == 0 ? 0 : step);
  }
  run.out("TaskState: Completed\nTaskStatus: OK\n");
  run.out("Firmware update successful!\n");
  run.outElapsed("Overall Time Taken: ");
  run.out(
      "Refer to 'NVIDIA Firmware Update Document' on activation steps for new firmware to "
      "take effect.\n");
  run.on_complete = [components](HostState& s) {
    for (const auto& [component, version] : components) s.pending[component] = version;
  };
  return run;
}

ToolRun HostSim::flash(const std::string& component, const std::string& version) {
  if (!isComponent(component)) {
    ToolRun run;
    std::string names;
    for (const char* c : kComponents) names += std::string(names.empty() ? "" : ", ") + c;
    run.err("kiln-hwsim flash: unknown component '" + component + "' (one of: " + names + ")\n");
    run.exit_code = 2;
    return run;
  }
  return nvfwupdUpdate(component + "-" + version, {{component, version}});
}

ToolRun HostSim::nvfwupdShowVersion() const {
  ToolRun run;
  run.out(renderNvfwupdShowVersion(state_), 3);
  return run;
}

ToolRun HostSim::mlxQuery(const std::optional<std::string>& image_version) const {
  ToolRun run;
  run.out(renderMlxQuery(state_, image_version), 2);
  return run;
}

ToolRun HostSim::mlxUpdate(const std::string& image_version) {
  ToolRun run = mlxQuery(image_version);
  const std::string current = state_.pending.count("nic") ? state_.pending.at("nic") : state_.versions["nic"];
  if (current == image_version) {
    run.out("All devices are up to date.\n");  // nothing to burn
    return run;
  }
  const bool fails = takeFlashFailure();
  ++state_.flashes;
  state_.last_flash = "nic " + image_version;
  const int nics = platformSpec(state_.platform).nics;
  const double per_device = kMlxBurnSeconds / nics;
  for (int i = 0; i < nics; ++i) {
    run.out("Device #" + std::to_string(i + 1) + ": Updating FW ...     \n");
    if (fails) {
      run.out("Initializing image partition -   OK          \n", per_device / 3);
      run.out("Writing Boot image component -   FAILED\n", per_device / 3);
      run.out("-E- Failed to burn image on device #" + std::to_string(i + 1) +
              ": Burning FS4 image failed: Flash write failed\n");
      run.exit_code = 1;
      return run;
    }
    run.out("Initializing image partition -   OK          \n", per_device / 3);
    run.out("Writing Boot image component -   OK          \n", per_device * 2 / 3);
    run.out("Done\n");
  }
  run.out("\nRestart needed for updates to take effect.\n");
  run.on_complete = [image_version](HostState& s) { s.pending["nic"] = image_version; };
  return run;
}

// ---- host --------------------------------------------------------------------------------

ToolRun HostSim::installDriver(const std::string& version) {
  ToolRun run;
  const auto active = state_.versions.find("driver");
  const auto pending = state_.pending.find("driver");
  if (pending == state_.pending.end() && active != state_.versions.end() && active->second == version) {
    run.out("kiln-driver-install: driver " + version + " is already installed\n");
    return run;
  }
  if (pending != state_.pending.end() && pending->second == version) {
    run.out("kiln-driver-install: driver " + version + " is already installed; it becomes active at the next reboot\n");
    return run;
  }
  run.out("kiln-driver-install: installing nvidia-driver " + version + " (kernel modules, fabric manager, DCGM)\n");
  if (takeFlashFailure()) {
    run.out("dpkg: error processing package nvidia-driver-" + version +
                " (--configure): installed post-installation script returned error exit status 1\n",
            kDriverInstallSeconds / 2);
    run.err("kiln-driver-install: installing driver " + version + " failed\n");
    run.exit_code = 1;
    return run;
  }
  run.out("kiln-driver-install: driver " + version + " installed; it becomes active at the next reboot\n",
          kDriverInstallSeconds);
  run.on_complete = [version](HostState& s) { s.pending["driver"] = version; };
  return run;
}

ToolRun HostSim::reboot() {
  ToolRun run;
  const uint64_t next = state_.boot_count + 1;
  const std::string next_id = bootIdFor(state_.host, next);
  run.out("kiln-reboot: " + state_.host + " is going down for reboot\n");
  run.out("kiln-reboot: " + state_.host + " is up, boot_id " + next_id + "\n", kRebootSeconds);
  run.on_complete = [](HostState& s) {
    s.boot_count += 1;
    s.boot_id = bootIdFor(s.host, s.boot_count);
    for (auto& [component, version] : s.pending) s.versions[component] = version;
    s.pending.clear();
    s.xids.clear();
    for (GpuState& g : s.gpus) {
      if (g.remap_pending) {
        g.remap_pending = false;
        g.remapped_rows_unc += 1;
      }
      g.recovery_action = "None";
      g.volatile_dram_uncorrectable = 0;
      g.volatile_sram_correctable = 0;
      for (auto& l : g.links) l = LinkCounters{};
    }
  };
  return run;
}

ToolRun HostSim::inventory() const {
  ToolRun run;
  run.out(renderInventory(state_));
  return run;
}

ToolRun HostSim::xidLog() const {
  ToolRun run;
  run.out(renderXidLog(state_));
  return run;
}

// ---- faults ------------------------------------------------------------------------------

void HostSim::applyRecoveryAction(GpuState& g, int xid) {
  // docs/FACTS.md, "Xids that matter", mapped onto nvidia-smi's gpu_recovery_action values.
  switch (xid) {
    case 48:
      g.volatile_dram_uncorrectable += 1;
      g.aggregate_dram_uncorrectable += 1;
      g.recovery_action = "Drain and Reset";
      break;
    case 63:
      g.remap_pending = true;
      g.recovery_action = "Reset";
      break;
    case 64:
      g.remap_failure = true;
      g.recovery_action = "Reset";
      break;
    case 79:
      g.recovery_action = "Reboot";
      break;
    case 94:
    case 95:
    case 119:
    case 120:
    case 154:
      if (g.recovery_action == "None") g.recovery_action = "Reset";
      break;
    default:
      break;
  }
}

Status HostSim::setFault(const Fault& fault) {
  const bool gpu_kind =
      fault.kind == FaultKind::kRowRemapPending || fault.kind == FaultKind::kXid || isWeakLink(fault.kind);
  GpuState* g = gpu_kind ? gpu(fault.gpu) : nullptr;
  if (gpu_kind && !g) {
    return invalidArgument(std::string(faultKindName(fault.kind)) + " needs --gpu 0.." +
                           std::to_string(state_.gpus.size() - 1));
  }
  if (isWeakLink(fault.kind) && (fault.link < 0 || static_cast<size_t>(fault.link) >= g->links.size())) {
    return invalidArgument("weak link faults need --link 0.." + std::to_string(g->links.size() - 1));
  }
  if (fault.kind == FaultKind::kSlow && !(fault.factor > 0)) {
    return invalidArgument("slow needs --factor > 0");
  }
  switch (fault.kind) {
    case FaultKind::kRowRemapPending:
      state_.xids.push_back({fault.gpu, 63, ++state_.seq});
      applyRecoveryAction(*g, 63);
      return okStatus();
    case FaultKind::kXid:
      if (fault.xid <= 0) return invalidArgument("xid needs --xid N");
      state_.xids.push_back({fault.gpu, fault.xid, ++state_.seq});
      applyRecoveryAction(*g, fault.xid);
      return okStatus();
    default:
      break;
  }
  Fault stored = fault;
  if (stored.kind == FaultKind::kWeakLinkPersistent) stored.remaining = -1;
  if (stored.kind == FaultKind::kWeakLinkTransient && stored.remaining < 0) stored.remaining = 3;
  if ((stored.kind == FaultKind::kFlashFailure || stored.kind == FaultKind::kHang) && stored.remaining < 0) {
    stored.remaining = 1;  // "next N": one unless told otherwise
  }
  state_.faults.push_back(stored);
  return okStatus();
}

int HostSim::clearFaults(std::optional<FaultKind> kind) {
  int removed = 0;
  if (!kind || *kind == FaultKind::kRowRemapPending || *kind == FaultKind::kXid) {
    for (GpuState& g : state_.gpus) {
      if (g.remap_pending) ++removed;
      g.remap_pending = false;
      g.recovery_action = "None";
    }
    if (!kind || *kind == FaultKind::kXid) {
      removed += static_cast<int>(state_.xids.size());
      state_.xids.clear();
    } else {
      std::erase_if(state_.xids, [](const XidEvent& x) { return x.xid == 63; });
    }
  }
  removed += static_cast<int>(std::erase_if(state_.faults, [&](const Fault& f) { return !kind || f.kind == *kind; }));
  return removed;
}

nlohmann::json HostSim::listFaults() const {
  nlohmann::json faults = nlohmann::json::array();
  for (const Fault& f : state_.faults) faults.push_back(toJson(f));
  for (const GpuState& g : state_.gpus) {
    if (g.remap_pending) faults.push_back({{"kind", "row_remap_pending"}, {"gpu", g.index}});
  }
  for (const XidEvent& x : state_.xids) {
    faults.push_back({{"kind", "xid"}, {"gpu", x.gpu}, {"xid", x.xid}});
  }
  return {{"host", state_.host}, {"faults", faults}};
}

bool HostSim::takeHang(const std::string& tool) {
  for (auto it = state_.faults.begin(); it != state_.faults.end(); ++it) {
    if (it->kind != FaultKind::kHang || it->remaining == 0) continue;
    if (!it->tool.empty() && it->tool != tool) continue;
    if (it->remaining > 0 && --it->remaining == 0) state_.faults.erase(it);
    return true;
  }
  return false;
}

double HostSim::slowFactor(const std::string& tool) const {
  double factor = 1.0;
  for (const Fault& f : state_.faults) {
    if (f.kind == FaultKind::kSlow && (f.tool.empty() || f.tool == tool)) factor *= f.factor;
  }
  return factor;
}

}  // namespace kiln::sim
