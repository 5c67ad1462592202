#include "agents/sim/host_state.h"

#include "agents/sim/ids.h"

namespace kiln::sim {
namespace {

const PlatformSpec kCatalina{Platform::kCatalina,
                             "NVIDIA GB200",
                             "294110DE",
                             "2941",
                             4,
                             18,
                             8,
                             "ConnectX7",
                             "MCX750500B-0D00_Ax",
                             "MT_0000000834",
                             "NVIDIA ConnectX-7 HHHL adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; "
                             "PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled",
                             189471};

const PlatformSpec kClemente{Platform::kClemente,
                             "NVIDIA GB300",
                             "31C210DE",
                             "31c2",
                             4,
                             18,
                             4,
                             "ConnectX8",
                             "900-9X81Q-00CN-ST0",
                             "MT_0000001222",
                             "NVIDIA ConnectX-8 C8180 SuperNIC; 800Gb/s XDR IB / 2x400GbE; Single-cage OSFP; "
                             "PCIe 6.0 x16; Crypto Disabled; Secure Boot Enabled",
                             284208};

// Platform default firmware/driver versions: plausible values in each tool's own format.
std::map<std::string, std::string> defaultVersions(Platform p) {
  if (p == Platform::kClemente) {
    return {{"gpu_vbios", "97.10.3A.00.0C"}, {"hmc_bundle", "GB300-P5180_0002_250611.1.0"},
            {"nic", "40.45.1200"},           {"bmc", "25.06-2"},
            {"sbios", "01.04.05"},           {"driver", "575.57.08"},
            {"nvswitch", "37.2506.0002"}};
  }
  return {{"gpu_vbios", "97.00.82.00.5F"}, {"hmc_bundle", "GB200-P4975_0004_250115.1.0"},
          {"nic", "28.43.2026"},           {"bmc", "25.01-3"},
          {"sbios", "02.03.12"},           {"driver", "570.124.06"},
          {"nvswitch", "36.2501.0004"}};
}

// GB200/GB300 compute trays expose their GPUs in PCI domains 8, 9, 0x18, 0x19.
constexpr std::array<const char*, 4> kPciBusIds = {"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0",
                                                   "00000019:01:00.0"};

}  // namespace

const char* platformName(Platform p) {
  return p == Platform::kClemente ? "clemente" : "catalina";
}

std::optional<Platform> parsePlatform(std::string_view name) {
  if (name == "catalina" || name == "gb200") return Platform::kCatalina;
  if (name == "clemente" || name == "gb300") return Platform::kClemente;
  return std::nullopt;
}

const PlatformSpec& platformSpec(Platform p) {
  return p == Platform::kClemente ? kClemente : kCatalina;
}

bool isComponent(std::string_view name) {
  for (const char* c : kComponents) {
    if (name == c) return true;
  }
  return false;
}

std::string bootIdFor(std::string_view host, uint64_t boot_count) {
  return uuidFrom(std::string(host) + "/boot/" + std::to_string(boot_count));
}

HostState makeDefaultState(const std::string& host, Platform platform) {
  const PlatformSpec& spec = platformSpec(platform);
  HostState s;
  s.host = host;
  s.platform = platform;
  s.boot_count = 1;
  s.boot_id = bootIdFor(host, 1);
  s.versions = defaultVersions(platform);
  for (int i = 0; i < spec.gpus; ++i) {
    GpuState g;
    g.index = i;
    g.serial = gpuSerial(host, i);
    g.uuid = gpuUuid(host + "/gpu/" + std::to_string(i));
    g.pci_bus_id = kPciBusIds[static_cast<size_t>(i) % kPciBusIds.size()];
    g.links.resize(static_cast<size_t>(spec.links_per_gpu));
    s.gpus.push_back(std::move(g));
  }
  return s;
}

nlohmann::json toJson(const HostState& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuState& g : s.gpus) {
    nlohmann::json links = nlohmann::json::array();
    for (const LinkCounters& l : g.links) {
      links.push_back({l.crc_flit, l.crc_data, l.replay, l.recovery});
    }
    gpus.push_back({{"index", g.index},
                    {"serial", g.serial},
                    {"uuid", g.uuid},
                    {"pci_bus_id", g.pci_bus_id},
                    {"remap_pending", g.remap_pending},
                    {"remap_failure", g.remap_failure},
                    {"remapped_rows_corr", g.remapped_rows_corr},
                    {"remapped_rows_unc", g.remapped_rows_unc},
                    {"volatile_dram_uncorrectable", g.volatile_dram_uncorrectable},
                    {"aggregate_dram_uncorrectable", g.aggregate_dram_uncorrectable},
                    {"volatile_sram_correctable", g.volatile_sram_correctable},
                    {"recovery_action", g.recovery_action},
                    {"links", links}});
  }
  nlohmann::json xids = nlohmann::json::array();
  for (const XidEvent& x : s.xids) xids.push_back({{"gpu", x.gpu}, {"xid", x.xid}, {"seq", x.seq}});
  nlohmann::json faults = nlohmann::json::array();
  for (const Fault& f : s.faults) faults.push_back(toJson(f));
  return {{"format", 1},
          {"host", s.host},
          {"platform", platformName(s.platform)},
          {"boot_count", s.boot_count},
          {"boot_id", s.boot_id},
          {"versions", s.versions},
          {"pending", s.pending},
          {"gpus", gpus},
          {"xids", xids},
          {"faults", faults},
          {"seq", s.seq},
          {"flashes", s.flashes},
          {"last_flash", s.last_flash}};
}

Result<HostState> hostStateFromJson(const nlohmann::json& j) {
  try {
    HostState s;
    s.host = j.at("host").get<std::string>();
    auto platform = parsePlatform(j.at("platform").get<std::string>());
    if (!platform) return invalidContent("unknown platform in state file");
    s.platform = *platform;
    s.boot_count = j.at("boot_count").get<uint64_t>();
    s.boot_id = j.at("boot_id").get<std::string>();
    s.versions = j.at("versions").get<std::map<std::string, std::string>>();
    s.pending = j.value("pending", std::map<std::string, std::string>{});
    for (const auto& jg : j.at("gpus")) {
      GpuState g;
      g.index = jg.at("index").get<int>();
      g.serial = jg.at("serial").get<std::string>();
      g.uuid = jg.at("uuid").get<std::string>();
      g.pci_bus_id = jg.at("pci_bus_id").get<std::string>();
      g.remap_pending = jg.value("remap_pending", false);
      g.remap_failure = jg.value("remap_failure", false);
      g.remapped_rows_corr = jg.value("remapped_rows_corr", 0u);
      g.remapped_rows_unc = jg.value("remapped_rows_unc", 0u);
      g.volatile_dram_uncorrectable = jg.value("volatile_dram_uncorrectable", uint64_t{0});
      g.aggregate_dram_uncorrectable = jg.value("aggregate_dram_uncorrectable", uint64_t{0});
      g.volatile_sram_correctable = jg.value("volatile_sram_correctable", uint64_t{0});
      g.recovery_action = jg.value("recovery_action", std::string("None"));
      for (const auto& jl : jg.at("links")) {
        g.links.push_back(
            {jl.at(0).get<uint64_t>(), jl.at(1).get<uint64_t>(), jl.at(2).get<uint64_t>(), jl.at(3).get<uint64_t>()});
      }
      s.gpus.push_back(std::move(g));
    }
    for (const auto& jx : j.value("xids", nlohmann::json::array())) {
      s.xids.push_back({jx.at("gpu").get<int>(), jx.at("xid").get<int>(), jx.value("seq", uint64_t{0})});
    }
    for (const auto& jf : j.value("faults", nlohmann::json::array())) {
      auto f = faultFromJson(jf);
      if (!f) return f.error();
      s.faults.push_back(*f);
    }
    s.seq = j.value("seq", uint64_t{0});
    s.flashes = j.value("flashes", uint64_t{0});
    s.last_flash = j.value("last_flash", std::string());
    return s;
  } catch (const nlohmann::json::exception& e) {
    return invalidContent(std::string("malformed hwsim state: ") + e.what());
  }
}

}  // namespace kiln::sim
