#pragma once
// The simulated state of one compute tray (host): identity, firmware versions, per-GPU health
// and NVLink counters, Xids and injected faults. Plain data, serialisable to JSON; the same
// struct serves the on-disk simulator (one state file per host) and an in-process fleet.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/sim/faults.h"
#include "common/result.h"

namespace kiln::sim {

enum class Platform { kCatalina, kClemente };

const char* platformName(Platform p);
std::optional<Platform> parsePlatform(std::string_view name);

// Hardware shape of a platform (docs/FACTS.md: 18 compute trays of 4 GPUs per NVL72 domain; each
// Blackwell GPU has 18 NVLink5 links; Catalina has 2x ConnectX-7 per GPU, Clemente 1x CX-8).
struct PlatformSpec {
  Platform platform;
  const char* product_name;    // nvidia-smi product_name
  const char* pci_device_id;   // nvidia-smi pci_device_id, e.g. "294110DE"
  const char* dcgm_device_id;  // dcgmi entity device_id, e.g. "2941"
  int gpus = 4;
  int links_per_gpu = 18;
  int nics = 8;
  const char* nic_type;  // mlxfwmanager "Device Type"
  const char* nic_part;  // mlxfwmanager "Part Number"
  const char* nic_psid;
  const char* nic_description;
  int fb_memory_mib;
};
const PlatformSpec& platformSpec(Platform p);

// Component names, as used by `kiln-hwsim flash` and `kiln-inventory`.
inline constexpr std::array<const char*, 7> kComponents = {"gpu_vbios", "hmc_bundle", "nic",     "bmc",
                                                           "sbios",     "driver",     "nvswitch"};
bool isComponent(std::string_view name);

// Per-link NVLink error counters as dcgmi reports them.
struct LinkCounters {
  uint64_t crc_flit = 0;
  uint64_t crc_data = 0;
  uint64_t replay = 0;
  uint64_t recovery = 0;
  bool operator==(const LinkCounters&) const = default;
};

struct GpuState {
  int index = 0;
  std::string serial;
  std::string uuid;
  std::string pci_bus_id;  // "00000008:01:00.0"
  bool remap_pending = false;
  bool remap_failure = false;
  uint32_t remapped_rows_corr = 0;
  uint32_t remapped_rows_unc = 0;
  uint64_t volatile_dram_uncorrectable = 0;
  uint64_t aggregate_dram_uncorrectable = 0;
  uint64_t volatile_sram_correctable = 0;
  std::string recovery_action = "None";  // nvidia-smi gpu_recovery_action
  std::vector<LinkCounters> links;
};

struct XidEvent {
  int gpu = 0;
  int xid = 0;
  uint64_t seq = 0;  // order of arrival within this host
};

struct HostState {
  std::string host;
  Platform platform = Platform::kCatalina;
  uint64_t boot_count = 1;
  std::string boot_id;
  std::map<std::string, std::string> versions;  // active, per kComponents
  std::map<std::string, std::string> pending;   // flashed, activates at the next reboot
  std::vector<GpuState> gpus;
  std::vector<XidEvent> xids;
  std::vector<Fault> faults;
  uint64_t seq = 0;  // monotonically increasing counter for task ids / xid order
  // Every flash that reached the hardware (nvfwupd update_fw, mlxfwmanager -u burning,
  // kiln-hwsim flash), and the last package or image it wrote: what the artifact tests count
  // (issue 31: wrong bits never reach a flash tool).
  uint64_t flashes = 0;
  std::string last_flash;
};

// A fresh healthy host: deterministic serials/UUIDs from the host name, platform default
// firmware versions.
HostState makeDefaultState(const std::string& host, Platform platform);

// The boot id of boot number `boot_count` of `host` (deterministic).
std::string bootIdFor(std::string_view host, uint64_t boot_count);

nlohmann::json toJson(const HostState& state);
Result<HostState> hostStateFromJson(const nlohmann::json& j);

}  // namespace kiln::sim
