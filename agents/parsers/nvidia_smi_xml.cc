// `nvidia-smi -q -x`: <nvidia_smi_log> (nvsmi_device_v12.dtd; drivers 535-580 checked, older
// ones where noted) to the normalized document of README.md.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include <pugixml.hpp>

#include "agents/parsers/formats.h"
#include "agents/parsers/text_util.h"

namespace kiln::parsers {
namespace {

constexpr std::string_view kWhat = "nvidia-smi XML";

using nlohmann::json;

kiln::Error problem(const std::string& message) {
  return kiln::invalidContent(std::string(kWhat) + ": " + message);
}

// The trimmed text of the element at `path` below `node` ("a/b/c"), nullopt when absent.
std::optional<std::string_view> textAt(const pugi::xml_node& node, const char* path) {
  pugi::xml_node found = node.first_element_by_path(path);
  if (!found) return std::nullopt;
  return trim(found.child_value());
}

// A string field: null when absent, empty or "N/A".
json stringAt(const pugi::xml_node& node, const char* path) {
  std::optional<std::string_view> text = textAt(node, path);
  if (!text || text->empty() || *text == "N/A") return nullptr;
  return sanitizeUtf8(*text);
}

// The leading integer of a value such as "0", "16x" or "64 bank(s)"; nullopt for "N/A" and
// other words.
std::optional<std::int64_t> leadingInteger(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

json integerAt(const pugi::xml_node& node, const char* path) {
  std::optional<std::string_view> text = textAt(node, path);
  std::optional<std::int64_t> value = text ? leadingInteger(*text) : std::nullopt;
  return value ? json(*value) : json(nullptr);
}

// "Yes"/"No" to a bool; anything else (N/A) to null.
json yesNoAt(const pugi::xml_node& node, const char* path) {
  std::optional<std::string_view> text = textAt(node, path);
  if (text == "Yes") return true;
  if (text == "No") return false;
  return nullptr;
}

// Drivers from ~535 name the element clocks_event_reasons; older ones clocks_throttle_reasons.
// Children are "<prefix><reason>" with the text "Active" or "Not Active".
json activeClockEventReasons(const pugi::xml_node& gpu) {
  json active = json::array();
  struct Layout {
    const char* element;
    std::string_view childPrefix;
  };
  for (Layout layout : {Layout{"clocks_event_reasons", "clocks_event_reason_"},
                        Layout{"clocks_throttle_reasons", "clocks_throttle_reason_"}}) {
    pugi::xml_node reasons = gpu.child(layout.element);
    if (!reasons) continue;
    for (pugi::xml_node reason : reasons.children()) {
      if (reason.type() != pugi::node_element || trim(reason.child_value()) != "Active") continue;
      std::string_view name = reason.name();
      if (name.starts_with(layout.childPrefix)) name.remove_prefix(layout.childPrefix.size());
      active.push_back(sanitizeUtf8(name));
    }
    break;
  }
  return active;
}

struct EccCounts {
  std::optional<std::int64_t> correctable;
  std::optional<std::int64_t> uncorrectable;
};

void add(std::optional<std::int64_t>& sum, std::optional<std::int64_t> value) {
  if (value) sum = sum.value_or(0) + *value;
}

// Sums one <volatile> or <aggregate> block over its memory types. Layouts:
// - 535+: sram_correctable, sram_uncorrectable (580: _parity and _secded), dram_correctable,
//   dram_uncorrectable, and flags such as sram_threshold_exceeded (ignored);
// - before ~525: single_bit/* and double_bit/* per memory type, each with a <total>.
EccCounts sumEcc(const pugi::xml_node& block) {
  EccCounts counts;
  if (!block) return counts;
  if (block.child("single_bit") || block.child("double_bit")) {
    add(counts.correctable, leadingInteger(trim(block.first_element_by_path("single_bit/total").child_value())));
    add(counts.uncorrectable, leadingInteger(trim(block.first_element_by_path("double_bit/total").child_value())));
    return counts;
  }
  for (pugi::xml_node counter : block.children()) {
    if (counter.type() != pugi::node_element) continue;
    std::string_view name = counter.name();
    std::optional<std::int64_t> value = leadingInteger(trim(counter.child_value()));
    if (name.find("uncorrectable") != std::string_view::npos) {
      add(counts.uncorrectable, value);
    } else if (name.find("correctable") != std::string_view::npos) {
      add(counts.correctable, value);
    }
  }
  return counts;
}

json orNull(std::optional<std::int64_t> value) { return value ? json(*value) : json(nullptr); }

json ecc(const pugi::xml_node& gpu) {
  pugi::xml_node errors = gpu.child("ecc_errors");
  EccCounts volatileCounts = sumEcc(errors.child("volatile"));
  EccCounts aggregateCounts = sumEcc(errors.child("aggregate"));
  return {{"mode", stringAt(gpu, "ecc_mode/current_ecc")},
          {"volatile_correctable", orNull(volatileCounts.correctable)},
          {"volatile_uncorrectable", orNull(volatileCounts.uncorrectable)},
          {"aggregate_correctable", orNull(aggregateCounts.correctable)},
          {"aggregate_uncorrectable", orNull(aggregateCounts.uncorrectable)}};
}

json remappedRows(const pugi::xml_node& gpu) {
  pugi::xml_node rows = gpu.child("remapped_rows");  // "N/A" text on GPUs without HBM
  json histogram = nullptr;
  if (pugi::xml_node bins = rows.child("row_remapper_histogram")) {
    histogram = {{"max", integerAt(bins, "row_remapper_histogram_max")},
                 {"high", integerAt(bins, "row_remapper_histogram_high")},
                 {"partial", integerAt(bins, "row_remapper_histogram_partial")},
                 {"low", integerAt(bins, "row_remapper_histogram_low")},
                 {"none", integerAt(bins, "row_remapper_histogram_none")}};
  }
  return {{"correctable", integerAt(rows, "remapped_row_corr")},
          {"uncorrectable", integerAt(rows, "remapped_row_unc")},
          {"pending", yesNoAt(rows, "remapped_row_pending")},
          {"failure", yesNoAt(rows, "remapped_row_failure")},
          {"histogram", histogram}};
}

json gpuJson(const pugi::xml_node& gpu, std::size_t index) {
  json busId = stringAt(gpu, "pci/pci_bus_id");
  if (busId.is_null() && gpu.attribute("id")) busId = sanitizeUtf8(gpu.attribute("id").value());
  return {
      {"index", index},
      {"pci_bus_id", busId},
      {"product_name", stringAt(gpu, "product_name")},
      {"serial", stringAt(gpu, "serial")},
      {"uuid", stringAt(gpu, "uuid")},
      {"minor_number", integerAt(gpu, "minor_number")},
      {"module_id", integerAt(gpu, "platformInfo/module_id")},
      {"vbios_version", stringAt(gpu, "vbios_version")},
      {"inforom",
       {{"image", stringAt(gpu, "inforom_version/img_version")},
        {"oem", stringAt(gpu, "inforom_version/oem_object")},
        {"ecc", stringAt(gpu, "inforom_version/ecc_object")},
        {"pwr", stringAt(gpu, "inforom_version/pwr_object")}}},
      {"pcie",
       {{"gen_max", integerAt(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")},
        {"gen_current", integerAt(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")},
        {"width_max", integerAt(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")},
        {"width_current", integerAt(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width")},
        {"replay_counter", integerAt(gpu, "pci/replay_counter")}}},
      {"clock_event_reasons_active", activeClockEventReasons(gpu)},
      {"ecc", ecc(gpu)},
      {"remapped_rows", remappedRows(gpu)},
      {"fabric",
       {{"state", stringAt(gpu, "fabric/state")},
        {"status", stringAt(gpu, "fabric/status")},
        {"clique_id", stringAt(gpu, "fabric/cliqueId")},
        {"cluster_uuid", stringAt(gpu, "fabric/clusterUuid")}}},
      {"recovery_action", stringAt(gpu, "gpu_recovery_action")},
  };
}

}  // namespace

kiln::Result<json> parseNvidiaSmiXml(std::string_view text) {
  pugi::xml_document doc;
  pugi::xml_parse_result parsed =
      doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return problem(describePosition(text, static_cast<std::size_t>(parsed.offset)) + ": " +
                   parsed.description());
  }
  pugi::xml_node log = doc.document_element();
  if (std::string_view(log.name()) != "nvidia_smi_log") {
    return problem("the root element is <" + sanitizeUtf8(log.name()) + ">, not <nvidia_smi_log>");
  }
  json driverVersion = stringAt(log, "driver_version");
  if (driverVersion.is_null()) return problem("<nvidia_smi_log> has no <driver_version>");

  json gpus = json::array();
  for (pugi::xml_node gpu : log.children("gpu")) {
    std::size_t index = gpus.size();
    json normalized = gpuJson(gpu, index);
    if (normalized["uuid"].is_null()) {
      return problem("<gpu> " + std::to_string(index) + " has no <uuid>");
    }
    gpus.push_back(std::move(normalized));
  }
  json gpuCount = integerAt(log, "attached_gpus");
  if (gpuCount.is_null()) gpuCount = gpus.size();
  return json{{"timestamp", stringAt(log, "timestamp")},
              {"driver_version", driverVersion},
              {"cuda_version", stringAt(log, "cuda_version")},
              {"gpu_count", gpuCount},
              {"gpus", std::move(gpus)}};
}

}  // namespace kiln::parsers
