// `nvidia-smi -q -x`: <nvidia_smi_log> to the normalized document of README.md. Layouts read
// (element names from NVIDIA's nvsmi_device_v8.dtd .. v12.dtd and real captures):
// - v8 (driver 375, Pascal/Kepler): <power_readings> with power_draw / power_limit /
//   enforced_power_limit, <clocks_throttle_reasons>, ECC as single_bit/double_bit blocks,
//   <retired_pages> with <pending_retirement>, no <remapped_rows>, no <fabric>;
// - v10/v11 (drivers 418-530): the same plus <remapped_rows>, <mig_mode>, <pending_blacklist>;
// - v12 (drivers 535-580, Hopper, Blackwell, Grace hosts): <gpu_power_readings> with
//   current_/requested_power_limit (power_draw until ~555, later instant_ and
//   average_power_draw), <module_power_readings> (Grace-based modules), <clocks_event_reasons>,
//   sram_/dram_ ECC counters, <fabric>, <gpu_recovery_action>.
// Elements this code does not know are ignored wherever they appear.

#include <algorithm>
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
// Tags ('<' characters) the XML may hold. pugixml spends 64 bytes per node, so the DOM of 16
// MiB of `<a/>` would take ~270 MB; this caps it near 64 MB. A real 8-GPU
// `nvidia-smi -q -x` has under 10k tags (~500 per GPU, more with supported_clocks).
constexpr std::size_t kMaxXmlTags = 1u << 19;

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

// Whether nvidia-smi printed "no value" rather than a value: N/A, Not Supported, Unknown Error,
// Insufficient Permissions, ..., with or without the square brackets that newer drivers (and
// the CSV/text modes) put around them, and the "Requested functionality has been deprecated"
// of fields 570+ no longer fill.
bool isNoValue(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = trim(text.substr(1, text.size() - 2));
  }
  for (std::string_view word : {"", "N/A", "Not Supported", "Not Available", "Unknown Error",
                                "Insufficient Permissions", "GPU is lost", "GPU requires reset",
                                "Requested functionality has been deprecated"}) {
    if (text == word) return true;
  }
  return false;
}

// A string field: null when absent or a no-value word.
json stringAt(const pugi::xml_node& node, const char* path) {
  std::optional<std::string_view> text = textAt(node, path);
  if (!text || isNoValue(*text)) return nullptr;
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

// A measurement printed as a number and a unit: "45 C", "350.00 W", "81559 MiB", "1980 MHz",
// "0 %", or a bare number. An integer stays an integer, a number with a fraction is a double.
// The unit is not checked (each field has one unit, named in README.md); anything that does not
// start with a number followed by white space or the end (N/A, [Not Supported], ...) is null.
json measureAt(const pugi::xml_node& node, const char* path) {
  std::optional<std::string_view> text = textAt(node, path);
  if (!text || isNoValue(*text)) return nullptr;
  std::size_t end = text->find_first_of(" \t");
  std::optional<json> number = parseJsonNumber(text->substr(0, end));
  if (!number) return nullptr;
  return *number;
}

// The first of `paths` that holds a measurement.
json firstMeasureAt(const pugi::xml_node& node, std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    json value = measureAt(node, path);
    if (!value.is_null()) return value;
  }
  return nullptr;
}

// "Yes"/"No" to a bool; anything else (N/A) to null.
std::optional<bool> yesNo(std::optional<std::string_view> text) {
  if (text == "Yes") return true;
  if (text == "No") return false;
  return std::nullopt;
}

json yesNoAt(const pugi::xml_node& node, const char* path) {
  std::optional<bool> value = yesNo(textAt(node, path));
  return value ? json(*value) : json(nullptr);
}

// Drivers from ~535 name the element clocks_event_reasons; older ones clocks_throttle_reasons.
// Children are "<prefix><reason>" with the text "Active" or "Not Active". Fills `active` with
// the active reasons and `all` with every reason printed (true, false, or null for N/A).
void clockEventReasons(const pugi::xml_node& gpu, json& active, json& all) {
  active = json::array();
  all = json::object();
  struct Layout {
    const char* element;
    std::string_view childPrefix;
  };
  for (Layout layout : {Layout{"clocks_event_reasons", "clocks_event_reason_"},
                        Layout{"clocks_throttle_reasons", "clocks_throttle_reason_"}}) {
    pugi::xml_node reasons = gpu.child(layout.element);
    if (!reasons) continue;
    for (pugi::xml_node reason : reasons.children()) {
      if (reason.type() != pugi::node_element) continue;
      std::string_view name = reason.name();
      if (name.starts_with(layout.childPrefix)) name.remove_prefix(layout.childPrefix.size());
      std::string key = sanitizeUtf8(name);
      std::string_view value = trim(reason.child_value());
      if (value == "Active") {
        active.push_back(key);
        all[key] = true;
      } else {
        all[key] = value == "Not Active" ? json(false) : json(nullptr);
      }
    }
    break;
  }
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
// - before ~525 (v8 to v11 DTDs): single_bit/* and double_bit/* per memory type, each with a
//   <total>.
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

// <retired_pages>: page counts retired for multiple single-bit errors and for double-bit
// errors, and whether a retirement waits for the next reboot/reset (<pending_retirement>;
// drivers ~410-470 called it <pending_blacklist>, 535+ print both).
json retiredPages(const pugi::xml_node& gpu) {
  pugi::xml_node pages = gpu.child("retired_pages");
  std::optional<bool> pending;
  for (const char* name : {"pending_retirement", "pending_blacklist"}) {
    std::optional<bool> value = yesNo(textAt(pages, name));
    if (value) pending = pending.value_or(false) || *value;
  }
  return {{"single_bit", integerAt(pages, "multiple_single_bit_retirement/retired_count")},
          {"double_bit", integerAt(pages, "double_bit_retirement/retired_count")},
          {"pending", pending ? json(*pending) : json(nullptr)}};
}

// Absolute thresholds (drivers up to ~550) and, from ~555, thresholds as T.Limit margins
// (`gpu_temp_*_tlimit_threshold`: degrees relative to the slowdown limit, often negative) beside
// the current margin `gpu_temp_tlimit`. The two kinds are kept apart, never converted.
json temperature(const pugi::xml_node& gpu) {
  pugi::xml_node t = gpu.child("temperature");
  return {{"gpu", measureAt(t, "gpu_temp")},
          {"memory", measureAt(t, "memory_temp")},
          {"shutdown", measureAt(t, "gpu_temp_max_threshold")},
          {"slowdown", measureAt(t, "gpu_temp_slow_threshold")},
          {"max_operating", measureAt(t, "gpu_temp_max_gpu_threshold")},
          {"max_memory", measureAt(t, "gpu_temp_max_mem_threshold")},
          {"target", measureAt(t, "gpu_target_temperature")},
          {"tlimit", measureAt(t, "gpu_temp_tlimit")},
          {"tlimit_shutdown", measureAt(t, "gpu_temp_max_tlimit_threshold")},
          {"tlimit_slowdown", measureAt(t, "gpu_temp_slow_tlimit_threshold")},
          {"tlimit_max_operating", measureAt(t, "gpu_temp_max_gpu_tlimit_threshold")},
          {"tlimit_max_memory", measureAt(t, "gpu_temp_max_mem_tlimit_threshold")}};
}

// One <power_readings> (v8-v11), <gpu_power_readings> or <module_power_readings> (v12) block.
json powerReadings(const pugi::xml_node& block) {
  return {{"draw", firstMeasureAt(block, {"instant_power_draw", "power_draw"})},
          {"draw_average", measureAt(block, "average_power_draw")},
          {"limit", firstMeasureAt(block, {"current_power_limit", "enforced_power_limit"})},
          {"requested_limit", firstMeasureAt(block, {"requested_power_limit", "power_limit"})},
          {"default_limit", measureAt(block, "default_power_limit")},
          {"min_limit", measureAt(block, "min_power_limit")},
          {"max_limit", measureAt(block, "max_power_limit")}};
}

json fbMemory(const pugi::xml_node& usage) {
  return {{"total", measureAt(usage, "total")},
          {"reserved", measureAt(usage, "reserved")},
          {"used", measureAt(usage, "used")},
          {"free", measureAt(usage, "free")}};
}

json clockSet(const pugi::xml_node& block) {
  return {{"graphics", measureAt(block, "graphics_clock")},
          {"sm", measureAt(block, "sm_clock")},
          {"memory", measureAt(block, "mem_clock")},
          {"video", measureAt(block, "video_clock")}};
}

json utilization(const pugi::xml_node& gpu) {
  pugi::xml_node u = gpu.child("utilization");
  return {{"gpu", measureAt(u, "gpu_util")},
          {"memory", measureAt(u, "memory_util")},
          {"encoder", measureAt(u, "encoder_util")},
          {"decoder", measureAt(u, "decoder_util")}};
}

// <mig_mode> and the <mig_device> elements of <mig_devices> ("None" when MIG is off).
json mig(const pugi::xml_node& gpu) {
  json devices = json::array();
  for (pugi::xml_node device : gpu.child("mig_devices").children("mig_device")) {
    devices.push_back(
        {{"index", integerAt(device, "index")},
         {"gpu_instance_id", integerAt(device, "gpu_instance_id")},
         {"compute_instance_id", integerAt(device, "compute_instance_id")},
         {"multiprocessor_count", integerAt(device, "device_attributes/shared/multiprocessor_count")},
         {"volatile_sram_uncorrectable", integerAt(device, "ecc_error_count/volatile_count/sram_uncorrectable")},
         {"fb_memory_mib", fbMemory(device.child("fb_memory_usage"))}});
  }
  return {{"current", stringAt(gpu, "mig_mode/current_mig")},
          {"pending", stringAt(gpu, "mig_mode/pending_mig")},
          {"devices", std::move(devices)}};
}

json gpuJson(const pugi::xml_node& gpu, std::size_t index) {
  json busId = stringAt(gpu, "pci/pci_bus_id");
  if (busId.is_null() && gpu.attribute("id")) busId = sanitizeUtf8(gpu.attribute("id").value());
  pugi::xml_node power = gpu.child("gpu_power_readings");
  if (!power) power = gpu.child("power_readings");
  pugi::xml_node modulePower = gpu.child("module_power_readings");
  json reasonsActive;
  json reasons;
  clockEventReasons(gpu, reasonsActive, reasons);
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
      {"clock_event_reasons_active", std::move(reasonsActive)},
      {"clock_event_reasons", std::move(reasons)},
      {"ecc", ecc(gpu)},
      {"remapped_rows", remappedRows(gpu)},
      {"retired_pages", retiredPages(gpu)},
      {"temperature_c", temperature(gpu)},
      {"power_w", powerReadings(power)},
      {"module_power_w", modulePower ? powerReadings(modulePower) : json(nullptr)},
      {"fb_memory_mib", fbMemory(gpu.child("fb_memory_usage"))},
      {"clocks_mhz", {{"current", clockSet(gpu.child("clocks"))}, {"max", clockSet(gpu.child("max_clocks"))}}},
      {"utilization_pct", utilization(gpu)},
      {"mig", mig(gpu)},
      {"fabric",
       {{"state", stringAt(gpu, "fabric/state")},
        {"status", stringAt(gpu, "fabric/status")},
        {"clique_id", stringAt(gpu, "fabric/cliqueId")},
        {"cluster_uuid", stringAt(gpu, "fabric/clusterUuid")}}},
      {"recovery_action", stringAt(gpu, "gpu_recovery_action")},
  };
}

// The deepest element nesting of the document, walked without recursion.
std::size_t elementDepth(const pugi::xml_document& doc) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  pugi::xml_node node = doc.first_child();
  while (node) {
    if (node.first_child()) {
      node = node.first_child();
      deepest = std::max(deepest, ++depth);
      continue;
    }
    while (node && !node.next_sibling()) {
      node = node.parent();
      if (depth > 0) --depth;
    }
    if (node) node = node.next_sibling();
  }
  return deepest;
}

}  // namespace

kiln::Result<json> parseNvidiaSmiXml(std::string_view text) {
  if (std::size_t tags = static_cast<std::size_t>(std::count(text.begin(), text.end(), '<'));
      tags > kMaxXmlTags) {
    return problem(std::to_string(tags) + " tags, more than the limit of " + std::to_string(kMaxXmlTags));
  }
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_buffer(
      text.data(), text.size(), pugi::parse_default | pugi::parse_doctype, pugi::encoding_utf8);
  if (!parsed) {
    return problem(describePosition(text, static_cast<std::size_t>(parsed.offset)) + ": " +
                   parsed.description());
  }
  // nvidia-smi prints `<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vN.dtd">` and nothing
  // more. pugixml expands no entities, but an internal subset (entity declarations: the
  // "billion laughs" shape) is refused outright so no reader downstream ever sees one.
  for (pugi::xml_node node : doc.children()) {
    if (node.type() != pugi::node_doctype) continue;
    std::string_view doctype = node.value();
    if (doctype.find('[') != std::string_view::npos || doctype.find("<!") != std::string_view::npos) {
      return problem("a DOCTYPE with an internal subset (entity declarations) is not nvidia-smi output");
    }
  }
  if (std::size_t depth = elementDepth(doc); depth > kMaxNestingDepth) {
    return problem("elements nested " + std::to_string(depth) + " deep, more than the limit of " +
                   std::to_string(kMaxNestingDepth));
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
