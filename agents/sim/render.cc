#include "agents/sim/render.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iterator>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agents/sim/ids.h"

namespace kiln::sim {
namespace {

std::string xmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Tab-indented XML in nvidia-smi's layout: one element per line, leaves inline.
class XmlWriter {
 public:
  void open(const std::string& tag, const std::string& attrs = "") {
    indent();
    out_ << '<' << tag << (attrs.empty() ? "" : " " + attrs) << ">\n";
    stack_.push_back(tag);
  }
  void close() {
    std::string tag = stack_.back();
    stack_.pop_back();
    indent();
    out_ << "</" << tag << ">\n";
  }
  void leaf(const std::string& tag, const std::string& value) {
    indent();
    out_ << '<' << tag << '>' << xmlEscape(value) << "</" << tag << ">\n";
  }
  void raw(const std::string& line) { out_ << line << '\n'; }
  std::string str() const { return out_.str(); }

 private:
  void indent() { out_ << std::string(stack_.size(), '\t'); }
  std::ostringstream out_;
  std::vector<std::string> stack_;
};

const char* yesNo(bool b) {
  return b ? "Yes" : "No";
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// "00000008:01:00.0" -> "0008:01:00" as the kernel prints it in Xid lines.
std::string xidPci(const std::string& bus_id) {
  if (bus_id.size() >= 16) return bus_id.substr(4, 10);
  return bus_id;
}

}  // namespace

// ---- dcgmi diag --------------------------------------------------------------------------

std::string DiagTest::summaryStatus() const {
  bool any_fail = false, any_warn = false, all_skip = !results.empty();
  for (const auto& r : results) {
    any_fail |= r.status == "Fail";
    any_warn |= r.status == "Warn";
    all_skip &= r.status == "Skip";
  }
  if (any_fail) return "Fail";
  if (any_warn) return "Warn";
  if (all_skip) return "Skip";
  return "Pass";
}

bool DiagReport::failed() const {
  for (const auto& t : tests) {
    if (t.summaryStatus() == "Fail") return true;
  }
  return false;
}

std::string renderDiagJson(const HostState& state, const DiagReport& report) {
  const PlatformSpec& spec = platformSpec(state.platform);
  nlohmann::json categories = nlohmann::json::array();
  for (const DiagTest& test : report.tests) {
    nlohmann::json results = nlohmann::json::array();
    for (const DiagEntityResult& r : test.results) {
      nlohmann::json jr{{"entity_group", "GPU"}, {"entity_group_id", 1}, {"entity_id", r.gpu}, {"status", r.status}};
      if (!r.warnings.empty()) {
        nlohmann::json warnings = nlohmann::json::array();
        for (const DiagWarning& w : r.warnings) {
          warnings.push_back({{"warning", w.message},
                              {"error_id", w.error_id},
                              {"error_category", w.category},
                              {"error_severity", w.severity}});
        }
        jr["warnings"] = warnings;
      }
      results.push_back(jr);
    }
    nlohmann::json jt{{"name", test.name}, {"results", results}, {"test_summary", {{"status", test.summaryStatus()}}}};
    auto it = std::find_if(categories.begin(), categories.end(),
                           [&](const nlohmann::json& c) { return c["category"] == test.category; });
    if (it == categories.end()) {
      categories.push_back({{"category", test.category}, {"tests", nlohmann::json::array()}});
      it = categories.end() - 1;
    }
    (*it)["tests"].push_back(jt);
  }
  nlohmann::json entities = nlohmann::json::array();
  for (const GpuState& g : state.gpus) {
    entities.push_back({{"entity_id", g.index}, {"serial_num", g.serial}, {"device_id", spec.dcgm_device_id}});
  }
  nlohmann::json doc{
      {"DCGM Diagnostic", {{"test_categories", categories}}},
      {"entity_groups",
       nlohmann::json::array({{{"entity_group", "GPU"}, {"entity_group_id", 1}, {"entities", entities}}})},
      {"metadata",
       {{"version", kDcgmVersion},
        {"Driver Version Detected", state.versions.count("driver") ? state.versions.at("driver") : std::string()}}}};
  return doc.dump(3) + "\n";
}

std::string renderDiagText(const DiagReport& report) {
  const std::string hline = "+---------------------------+------------------------------------------------+\n";
  auto row = [](const std::string& name, const std::string& info) {
    return "| " + pad(name, 26) + "| " + pad(info, 47) + "|\n";
  };
  std::ostringstream out;
  out << "Successfully ran diagnostic for group.\n" << hline;
  out << "| Diagnostic                | Result                                         |\n";
  out << "+===========================+================================================+\n";
  std::string category;
  for (const DiagTest& t : report.tests) {
    if (t.category != category) {
      category = t.category;
      std::string label = "+-----  " + category + "  ";
      if (label.size() < 28) label += std::string(28 - label.size(), '-');
      out << label << "+------------------------------------------------+\n";
    }
    std::string status = t.summaryStatus();
    std::vector<int> failed;
    for (const auto& r : t.results) {
      if (r.status == "Fail") failed.push_back(r.gpu);
    }
    std::string info = status + " - All";
    if (!failed.empty() && failed.size() != t.results.size()) {
      info = "Fail - GPU" + std::string(failed.size() == 1 ? ": " : "s: ");
      for (size_t i = 0; i < failed.size(); ++i) {
        info += (i ? ", " : "") + std::to_string(failed[i]);
      }
    }
    out << row(t.name, info);
    for (const auto& r : t.results) {
      for (const auto& w : r.warnings) {
        std::string msg = w.message;
        bool first = true;
        for (size_t pos = 0; pos < msg.size(); pos += 45) {
          out << row(first ? "Warning" : "", msg.substr(pos, 45));
          first = false;
        }
      }
    }
  }
  out << hline;
  return out.str();
}

// ---- dcgmi nvlink ------------------------------------------------------------------------

namespace {
constexpr std::array<const char*, 4> kNvlinkCounterNames = {"CRC FLIT Error", "CRC Data Error", "Replay Error",
                                                            "Recovery Error"};
std::array<uint64_t, 4> counterValues(const LinkCounters& l) {
  return {l.crc_flit, l.crc_data, l.replay, l.recovery};
}
}  // namespace

std::string renderNvlinkErrorsJson(const GpuState& gpu) {
  nlohmann::json body = nlohmann::json::object();
  for (size_t link = 0; link < gpu.links.size(); ++link) {
    nlohmann::json children = nlohmann::json::object();
    auto values = counterValues(gpu.links[link]);
    for (size_t k = 0; k < kNvlinkCounterNames.size(); ++k) {
      children[kNvlinkCounterNames[k]] = {{"value", std::to_string(values[k])}};
    }
    body["Link " + std::to_string(link)] = {{"children", children}};
  }
  nlohmann::json doc{{"body", body}, {"header", {"NVLINK Error Counts", "GPU " + std::to_string(gpu.index)}}};
  return doc.dump(3) + "\n";
}

std::string renderNvlinkErrorsText(const GpuState& gpu) {
  // DcgmiOutputTree(30, 50).
  const std::string hline = "+" + std::string(29, '-') + "+" + std::string(48, '-') + "+\n";
  auto row = [](const std::string& left, const std::string& right) {
    return "| " + pad(left, 27) + " | " + pad(right, 46) + " |\n";
  };
  std::ostringstream out;
  out << hline;
  out << "| " << pad("NVLINK Error Counts", 77) << "|\n";
  out << "| " << pad("GPU " + std::to_string(gpu.index), 77) << "|\n";
  out << "+" << std::string(29, '=') << "+" << std::string(48, '=') << "+\n";
  for (size_t link = 0; link < gpu.links.size(); ++link) {
    out << row("Link " + std::to_string(link), "");
    auto values = counterValues(gpu.links[link]);
    for (size_t k = 0; k < kNvlinkCounterNames.size(); ++k) {
      out << row(std::string("   -> ") + kNvlinkCounterNames[k], std::to_string(values[k]));
    }
  }
  out << hline;
  return out.str();
}

std::string renderNvlinkStatus(const HostState& state) {
  std::ostringstream out;
  out << "+----------------------+\n|  NvLink Link Status  |\n+----------------------+\n";
  out << "GPUs:\n";
  for (const GpuState& g : state.gpus) {
    out << "    gpuId " << g.index << ":\n        ";
    for (size_t l = 0; l < g.links.size(); ++l) out << (l ? " U" : "U");
    out << "\n";
  }
  out << "NvSwitches:\n    No NvSwitches found.\n";
  out << "\nKey: Up=U, Down=D, Disabled=X, Not Supported=_\n";
  return out.str();
}

// ---- nvidia-smi --------------------------------------------------------------------------

std::string cudaVersionFor(const std::string& driver) {
  static const std::map<int, const char*> kBranches = {{535, "12.2"}, {550, "12.4"}, {555, "12.5"}, {560, "12.6"},
                                                       {565, "12.7"}, {570, "12.8"}, {575, "12.9"}, {580, "13.0"}};
  int branch = std::atoi(driver.c_str());
  auto it = kBranches.upper_bound(branch);
  if (it == kBranches.begin()) return "12.2";
  return std::prev(it)->second;
}

// The pod of a fleet host id "<pod>-hNN" (the fleet's naming), else the host itself.
std::string podOfHost(const std::string& host) {
  const auto dash = host.rfind("-h");
  if (dash == std::string::npos || dash + 2 >= host.size()) return host;
  for (std::size_t i = dash + 2; i < host.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(host[i]))) return host;
  return host.substr(0, dash);
}

std::string renderNvidiaSmiXml(const HostState& state, const std::string& timestamp) {
  const PlatformSpec& spec = platformSpec(state.platform);
  const std::string driver = state.versions.count("driver") ? state.versions.at("driver") : "";
  const std::string vbios = state.versions.count("gpu_vbios") ? state.versions.at("gpu_vbios") : "";
  XmlWriter x;
  x.raw("<?xml version=\"1.0\" ?>");
  x.raw("<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">");
  x.open("nvidia_smi_log");
  x.leaf("timestamp", timestamp);
  x.leaf("driver_version", driver);
  x.leaf("cuda_version", cudaVersionFor(driver));
  x.leaf("attached_gpus", std::to_string(state.gpus.size()));
  for (const GpuState& g : state.gpus) {
    x.open("gpu", "id=\"" + g.pci_bus_id + "\"");
    x.leaf("product_name", spec.product_name);
    x.leaf("product_brand", "NVIDIA");
    x.leaf("product_architecture", "Blackwell");
    x.leaf("display_mode", "Disabled");
    x.leaf("display_active", "Disabled");
    x.leaf("persistence_mode", "Enabled");
    x.leaf("addressing_mode", "ATS");
    x.open("mig_mode");
    x.leaf("current_mig", "Disabled");
    x.leaf("pending_mig", "Disabled");
    x.close();
    x.leaf("mig_devices", "None");
    x.leaf("accounting_mode", "Disabled");
    x.leaf("accounting_mode_buffer_size", "4000");
    x.open("driver_model");
    x.leaf("current_dm", "N/A");
    x.leaf("pending_dm", "N/A");
    x.close();
    x.leaf("serial", g.serial);
    x.leaf("uuid", g.uuid);
    x.leaf("minor_number", std::to_string(g.index));
    x.leaf("vbios_version", vbios);
    x.leaf("multigpu_board", "No");
    x.leaf("board_id", "0x" + g.pci_bus_id.substr(4, 4) + "00");
    x.leaf("board_part_number", "N/A");
    x.leaf("gpu_part_number", std::string(spec.dcgm_device_id) + "-886-A1");
    x.leaf("gpu_fru_part_number", "N/A");
    x.open("platformInfo");
    x.leaf("chassis_serial_number", "N/A");
    x.leaf("slot_number", "N/A");
    x.leaf("tray_index", "N/A");
    x.leaf("host_id", "1");
    x.leaf("peer_type", "Switch Connected");
    x.leaf("module_id", std::to_string(g.index + 1));
    x.close();
    x.open("inforom_version");
    x.leaf("img_version", state.platform == Platform::kClemente ? "G548.0210.00.02" : "G548.0201.00.06");
    x.leaf("oem_object", "2.1");
    x.leaf("ecc_object", "7.16");
    x.leaf("pwr_object", "N/A");
    x.close();
    x.open("gpu_operation_mode");
    x.leaf("current_gom", "N/A");
    x.leaf("pending_gom", "N/A");
    x.close();
    x.leaf("c2c_mode", "Enabled");
    x.open("gpu_virtualization_mode");
    x.leaf("virtualization_mode", "None");
    x.leaf("host_vgpu_mode", "N/A");
    x.close();
    x.open("gpu_reset_status");
    x.leaf("reset_required", yesNo(g.remap_pending || g.recovery_action != "None"));
    x.leaf("drain_and_reset_recommended", yesNo(g.recovery_action == "Drain and Reset"));
    x.close();
    x.leaf("gpu_recovery_action", g.recovery_action);
    x.leaf("gsp_firmware_version", driver);
    x.open("pci");
    x.leaf("pci_bus", g.pci_bus_id.substr(9, 2));
    x.leaf("pci_device", g.pci_bus_id.substr(12, 2));
    x.leaf("pci_domain", g.pci_bus_id.substr(4, 4));
    x.leaf("pci_base_class", "3");
    x.leaf("pci_sub_class", "2");
    x.leaf("pci_device_id", spec.pci_device_id);
    x.leaf("pci_bus_id", g.pci_bus_id);
    x.leaf("pci_sub_system_id", "199110DE");
    x.open("pci_gpu_link_info");
    x.open("pcie_gen");
    x.leaf("max_link_gen", "5");
    x.leaf("current_link_gen", "5");
    x.leaf("device_current_link_gen", "5");
    x.leaf("max_device_link_gen", state.platform == Platform::kClemente ? "6" : "5");
    x.leaf("max_host_link_gen", "5");
    x.close();
    x.open("link_widths");
    x.leaf("max_link_width", "16x");
    x.leaf("current_link_width", "16x");
    x.close();
    x.close();  // pci_gpu_link_info
    x.open("pci_bridge_chip");
    x.leaf("bridge_chip_type", "N/A");
    x.leaf("bridge_chip_fw", "N/A");
    x.close();
    x.leaf("replay_counter", "0");
    x.leaf("replay_rollover_counter", "0");
    x.leaf("tx_util", "0 KB/s");
    x.leaf("rx_util", "0 KB/s");
    x.close();  // pci
    x.leaf("fan_speed", "N/A");
    x.leaf("performance_state", "P0");
    x.open("clocks_event_reasons");
    x.leaf("clocks_event_reason_gpu_idle", "Active");
    x.leaf("clocks_event_reason_applications_clocks_setting", "Not Active");
    x.leaf("clocks_event_reason_sw_power_cap", "Not Active");
    x.leaf("clocks_event_reason_hw_slowdown", "Not Active");
    x.leaf("clocks_event_reason_hw_thermal_slowdown", "Not Active");
    x.leaf("clocks_event_reason_hw_power_brake_slowdown", "Not Active");
    x.leaf("clocks_event_reason_sync_boost", "Not Active");
    x.leaf("clocks_event_reason_sw_thermal_slowdown", "Not Active");
    x.leaf("clocks_event_reason_display_clocks_setting", "Not Active");
    x.close();
    x.leaf("sparse_operation_mode", "N/A");
    x.open("fb_memory_usage");
    x.leaf("total", std::to_string(spec.fb_memory_mib) + " MiB");
    x.leaf("reserved", "1120 MiB");
    x.leaf("used", "1 MiB");
    x.leaf("free", std::to_string(spec.fb_memory_mib - 1121) + " MiB");
    x.close();
    x.leaf("compute_mode", "Default");
    x.open("utilization");
    x.leaf("gpu_util", "0 %");
    x.leaf("memory_util", "0 %");
    x.leaf("encoder_util", "0 %");
    x.leaf("decoder_util", "0 %");
    x.leaf("jpeg_util", "0 %");
    x.leaf("ofa_util", "0 %");
    x.close();
    x.open("ecc_mode");
    x.leaf("current_ecc", "Enabled");
    x.leaf("pending_ecc", "Enabled");
    x.close();
    x.open("ecc_errors");
    x.open("volatile");
    x.leaf("sram_correctable", std::to_string(g.volatile_sram_correctable));
    x.leaf("sram_uncorrectable_parity", "0");
    x.leaf("sram_uncorrectable_secded", "0");
    x.leaf("dram_correctable", "0");
    x.leaf("dram_uncorrectable", std::to_string(g.volatile_dram_uncorrectable));
    x.close();
    x.open("aggregate");
    x.leaf("sram_correctable", std::to_string(g.volatile_sram_correctable));
    x.leaf("sram_uncorrectable_parity", "0");
    x.leaf("sram_uncorrectable_secded", "0");
    x.leaf("dram_correctable", "0");
    x.leaf("dram_uncorrectable", std::to_string(g.aggregate_dram_uncorrectable));
    x.leaf("sram_threshold_exceeded", "No");
    x.close();
    x.close();  // ecc_errors
    x.open("retired_pages");
    x.open("multiple_single_bit_retirement");
    x.leaf("retired_count", "N/A");
    x.leaf("retired_pagelist", "N/A");
    x.close();
    x.open("double_bit_retirement");
    x.leaf("retired_count", "N/A");
    x.leaf("retired_pagelist", "N/A");
    x.close();
    x.leaf("pending_blacklist", "N/A");
    x.leaf("pending_retirement", "N/A");
    x.close();
    x.open("remapped_rows");
    x.leaf("remapped_row_corr", std::to_string(g.remapped_rows_corr));
    x.leaf("remapped_row_unc", std::to_string(g.remapped_rows_unc));
    x.leaf("remapped_row_pending", yesNo(g.remap_pending));
    x.leaf("remapped_row_failure", yesNo(g.remap_failure));
    x.open("remapped_row_histogram");
    x.leaf("row_remap_histogram_max", "2560 bank(s)");
    x.leaf("row_remap_histogram_high", "0 bank(s)");
    x.leaf("row_remap_histogram_partial", std::to_string(g.remapped_rows_unc + g.remapped_rows_corr) + " bank(s)");
    x.leaf("row_remap_histogram_low", "0 bank(s)");
    x.leaf("row_remap_histogram_none", "0 bank(s)");
    x.close();
    x.close();  // remapped_rows
    x.open("temperature");
    x.leaf("gpu_temp", std::to_string(31 + g.index) + " C");
    x.leaf("gpu_temp_tlimit", std::to_string(56 - g.index) + " C");
    x.leaf("memory_temp", std::to_string(35 + g.index) + " C");
    x.close();
    x.open("gpu_power_readings");
    x.leaf("power_state", "P0");
    x.leaf("average_power_draw", "142.26 W");
    x.leaf("instant_power_draw", "141.90 W");
    x.leaf("current_power_limit", "1200.00 W");
    x.leaf("requested_power_limit", "1200.00 W");
    x.leaf("default_power_limit", "1200.00 W");
    x.leaf("min_power_limit", "200.00 W");
    x.leaf("max_power_limit", "1200.00 W");
    x.close();
    x.open("fabric");
    x.leaf("state", "Completed");
    x.leaf("status", "Success");
    // One NVLink domain: every tray of the pod in clique 32766 of the pod's cluster, unless a
    // fabric_split fault put this tray in another partition.
    const bool split = std::any_of(state.faults.begin(), state.faults.end(),
                                   [](const Fault& f) { return f.kind == FaultKind::kFabricSplit; });
    x.leaf("cliqueId", split ? "32767" : "32766");
    x.leaf("clusterUuid", uuidFrom("cluster/" + podOfHost(state.host)));
    x.open("health");
    x.leaf("bandwidth", "Full");
    x.leaf("route_recovery_in_progress", "False");
    x.leaf("route_unhealthy", "False");
    x.leaf("access_timeout_recovery", "False");
    x.close();
    x.close();  // fabric
    x.leaf("processes", "");
    x.leaf("accounted_processes", "");
    x.close();  // gpu
  }
  x.close();  // nvidia_smi_log
  return x.str();
}

std::string renderNvidiaSmiList(const HostState& state) {
  const PlatformSpec& spec = platformSpec(state.platform);
  std::ostringstream out;
  for (const GpuState& g : state.gpus) {
    out << "GPU " << g.index << ": " << spec.product_name << " (UUID: " << g.uuid << ")\n";
  }
  return out.str();
}

// ---- firmware tools ----------------------------------------------------------------------

std::string renderMlxQuery(const HostState& state, const std::optional<std::string>& available) {
  const PlatformSpec& spec = platformSpec(state.platform);
  // What is burned in flash: a pending image already counts (mlxfwmanager queries the flash).
  std::string current = state.pending.count("nic")    ? state.pending.at("nic")
                        : state.versions.count("nic") ? state.versions.at("nic")
                                                      : "N/A";
  std::ostringstream out;
  out << "Querying Mellanox devices firmware ...\n\n";
  int need_update = 0;
  for (int i = 0; i < spec.nics; ++i) {
    char pci[32];
    std::snprintf(pci, sizeof pci, "%04x:03:00.0", static_cast<unsigned>(i * 2));
    char guid[32];
    std::snprintf(
        guid, sizeof guid, "%016llx",
        static_cast<unsigned long long>(fnv1a64(state.host + "/nic/" + std::to_string(i)) & 0xffffff0000ffffffULL) |
            0x0000000300000000ULL);
    std::string header = "Device #" + std::to_string(i + 1) + ":";
    out << header << "\n" << std::string(header.size(), '-') << "\n\n";
    out << "  Device Type:      " << spec.nic_type << "\n";
    out << "  Part Number:      " << spec.nic_part << "\n";
    out << "  Description:      " << spec.nic_description << "\n";
    out << "  PSID:             " << spec.nic_psid << "\n";
    out << "  PCI Device Name:  " << pci << "\n";
    out << "  Base GUID:        " << guid << "\n";
    out << "  Versions:         Current        Available     \n";
    out << "     FW             " << pad(current, 15) << pad(available.value_or("N/A"), 14) << "\n";
    out << "     PXE            3.7.0500       " << pad(available ? "3.7.0500" : "N/A", 14) << "\n";
    out << "     UEFI           14.36.0016     " << pad(available ? "14.36.0016" : "N/A", 14) << "\n\n";
    std::string status = "No matching image found";
    if (available) {
      status = *available == current ? "Up to date" : "Update required";
      if (*available != current) ++need_update;
    }
    out << "  Status:           " << status << "\n\n";
  }
  if (need_update > 0) {
    out << "---------\nFound " << need_update
        << " device(s) requiring firmware update. Please use -u flag to perform the update.\n\n";
  }
  return out.str();
}

std::string renderNvfwupdShowVersion(const HostState& state) {
  auto version = [&](const char* c) { return state.versions.count(c) ? state.versions.at(c) : std::string("N/A"); };
  auto pkg = [&](const char* c) { return state.pending.count(c) ? state.pending.at(c) : std::string("N/A"); };
  std::vector<std::pair<std::string, const char*>> rows = {
      {"FW_BMC_0", "bmc"}, {"FW_UEFI_0", "sbios"}, {"HGX_FW_HMC_0", "hmc_bundle"}};
  for (size_t i = 0; i < state.gpus.size(); ++i) {
    rows.push_back({"HGX_FW_GPU_SXM_" + std::to_string(i + 1), "gpu_vbios"});
  }
  std::ostringstream out;
  out << "System Model: " << (state.platform == Platform::kClemente ? "GB300 NVL" : "GB200 NVL") << "\n";
  out << "Part number: 699-24764-0001-TS3\n";
  out << "Serial number: " << gpuSerial(state.host, 99) << "\n";
  out << "Packages: ['" << version("hmc_bundle") << "_custom']\n";
  out << "Connection Status: Successful\n\n";
  out << "Firmware Devices:\n";
  out << pad("AP Name", 41) << pad("Sys Version", 41) << pad("Pkg Version", 31) << "Up-To-Date\n";
  out << pad("-------", 41) << pad("-----------", 41) << pad("-----------", 31) << "----------\n";
  for (const auto& [ap, comp] : rows) {
    std::string p = pkg(comp);
    out << pad(ap, 41) << pad(version(comp), 41) << pad(p, 31) << (p == "N/A" || p == version(comp) ? "Yes" : "No")
        << "\n";
  }
  return out.str();
}

// ---- kiln helpers ------------------------------------------------------------------------

std::string renderInventory(const HostState& state) {
  nlohmann::json j = nlohmann::json::object();
  for (const char* c : kComponents) {
    j[c] = state.versions.count(c) ? state.versions.at(c) : std::string();
  }
  j["boot_id"] = state.boot_id;
  j["host"] = state.host;
  j["platform"] = platformName(state.platform);
  j["pending"] = state.pending;
  return j.dump() + "\n";
}

std::string xidDescription(int xid) {
  // docs/FACTS.md, "Xids that matter".
  switch (xid) {
    case 48:
      return "An uncorrectable double bit error (DBE) has been detected on GPU.";
    case 63:
      return "Row remapping pending: reset the GPU when convenient.";
    case 64:
      return "Row remapping failure.";
    case 74:
      return "NVLink error detected.";
    case 79:
      return "GPU has fallen off the bus.";
    case 94:
      return "Contained ECC error.";
    case 95:
      return "Uncontained ECC error.";
    case 119:
      return "Timeout after 6s of waiting for RPC response from GPU0 GSP!";
    case 120:
      return "GSP task exception.";
    case 154:
      return "GPU recovery action changed.";
    default:
      return "";
  }
}

std::string renderXidLog(const HostState& state) {
  std::ostringstream out;
  for (const XidEvent& x : state.xids) {
    std::string pci = "0000:00:00";
    for (const GpuState& g : state.gpus) {
      if (g.index == x.gpu) pci = xidPci(g.pci_bus_id);
    }
    out << "NVRM: Xid (PCI:" << pci << "): " << x.xid << ", pid='<unknown>', name=<unknown>, " << xidDescription(x.xid)
        << "\n";
  }
  return out.str();
}

}  // namespace kiln::sim
