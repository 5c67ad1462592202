#pragma once
// Renders simulated state into the exact text formats of the real tools (nvidia-smi -q -x,
// dcgmi diag/nvlink JSON and text, mlxfwmanager --query, nvfwupd show_version). Pure
// functions of their arguments: no clock, no I/O.

#include <optional>
#include <string>
#include <vector>

#include "agents/sim/host_state.h"

namespace kiln::sim {

// ---- dcgmi diag --------------------------------------------------------------------------

// dcgm_errors.h numbering (DCGM 4.x), for warnings' error_id / error_category /
// error_severity.
inline constexpr int kDcgmFrNvlinkErrorThreshold = 13;
inline constexpr int kDcgmFrRowRemapFailure = 80;
inline constexpr int kDcgmFrPendingRowRemap = 85;
inline constexpr int kDcgmFrXidError = 101;
inline constexpr int kDcgmEcSoftwareXid = 5;
inline constexpr int kDcgmEcHardwareMemory = 10;
inline constexpr int kDcgmEcHardwareNvlink = 11;
inline constexpr int kDcgmSeverityIsolate = 2;
inline constexpr int kDcgmSeverityReset = 6;

// The DCGM version the simulator claims to be.
inline constexpr const char* kDcgmVersion = "4.4.1";

struct DiagWarning {
  std::string message;
  int error_id = 0;
  int category = 0;
  int severity = 0;
};

struct DiagEntityResult {
  int gpu = 0;
  std::string status = "Pass";  // Pass / Skip / Warn / Fail
  std::vector<DiagWarning> warnings;
};

struct DiagTest {
  std::string category;  // Deployment / Integration / Hardware / Stress
  std::string name;      // plugin name as DCGM 4.x prints it: software, pcie, memory, ...
  std::vector<DiagEntityResult> results;
  std::string summaryStatus() const;  // Fail if any entity failed, else Warn/Pass/Skip
};

struct DiagReport {
  int level = 1;
  std::vector<DiagTest> tests;
  bool failed() const;
};

// `dcgmi diag -r N -j` (DCGM 4.x layout: root "DCGM Diagnostic" > test_categories > tests >
// results with entity_group/entity_id, plus top-level entity_groups and metadata).
std::string renderDiagJson(const HostState& state, const DiagReport& report);
// `dcgmi diag -r N` without -j: the boxed table.
std::string renderDiagText(const DiagReport& report);

// ---- dcgmi nvlink ------------------------------------------------------------------------

// `dcgmi nvlink -e -g G -j`: DcgmiOutputJson layout {"body": {"Link N": {"children":
// {"CRC FLIT Error": {"value": "0"}, ...}}}, "header": ["NVLINK Error Counts", "GPU G"]}.
std::string renderNvlinkErrorsJson(const GpuState& gpu);
// The same without -j: the boxed tree.
std::string renderNvlinkErrorsText(const GpuState& gpu);
// `dcgmi nvlink -s`.
std::string renderNvlinkStatus(const HostState& state);

// ---- nvidia-smi --------------------------------------------------------------------------

// `nvidia-smi -q -x`. `timestamp` as nvidia-smi prints it ("Mon Jun  2 10:00:00 2025").
std::string renderNvidiaSmiXml(const HostState& state, const std::string& timestamp);
// `nvidia-smi -L`.
std::string renderNvidiaSmiList(const HostState& state);
// CUDA version reported for a driver branch ("570.124.06" -> "12.8").
std::string cudaVersionFor(const std::string& driver);

// ---- firmware tools ----------------------------------------------------------------------

// `mlxfwmanager --query`; `available` is the version in the image given with -i, if any.
std::string renderMlxQuery(const HostState& state, const std::optional<std::string>& available);
// `nvfwupd ... show_version` table.
std::string renderNvfwupdShowVersion(const HostState& state);

// ---- kiln helpers ------------------------------------------------------------------------

// `kiln-inventory`: {"gpu_vbios":...,"hmc_bundle":...,"nic":...,"bmc":...,"sbios":...,
// "driver":...,"nvswitch":...,"boot_id":...,"host":...,"platform":...,"pending":{...}}.
std::string renderInventory(const HostState& state);
// Kernel-log lines for the Xids of this boot ("NVRM: Xid (PCI:0008:01:00): 79, ...").
std::string renderXidLog(const HostState& state);
// A short English description of an Xid (docs/FACTS.md list), "" if unknown.
std::string xidDescription(int xid);

}  // namespace kiln::sim
