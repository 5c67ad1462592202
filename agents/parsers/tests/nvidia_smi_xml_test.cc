#include <gtest/gtest.h>

#include "agents/parsers/parsers.h"
#include "agents/parsers/tests/testdata_util.h"

namespace kiln::parsers {
namespace {

using nlohmann::json;

json parseOk(const std::string& xml) {
  kiln::Result<json> parsed = parse(Format::kNvidiaSmiXml, xml);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : json();
}

std::string parseError(const std::string& xml) {
  kiln::Result<json> parsed = parse(Format::kNvidiaSmiXml, xml);
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidContent);
  return parsed.error().message;
}

TEST(NvidiaSmiXmlParserTest, ReadsDriverAndGpuIdentityOfGb200Sample) {
  json doc = parseOk(readTestdata("nvidia_smi_gb200_575.xml"));
  EXPECT_EQ(doc["driver_version"], "575.57.08");
  EXPECT_EQ(doc["cuda_version"], "12.9");
  EXPECT_EQ(doc["gpu_count"], 2);
  ASSERT_EQ(doc["gpus"].size(), 2u);
  const json& gpu = doc["gpus"][1];
  EXPECT_EQ(gpu["index"], 1);
  EXPECT_EQ(gpu["pci_bus_id"], "00000009:01:00.0");
  EXPECT_EQ(gpu["product_name"], "NVIDIA GB200");
  EXPECT_EQ(gpu["serial"], "1654124000124");
  EXPECT_EQ(gpu["uuid"], "GPU-7a2e4b61-8e4b-11ef-9d2a-5b6c7d8e9f02");
  EXPECT_EQ(gpu["module_id"], 2);
  EXPECT_EQ(gpu["vbios_version"], "97.00.82.00.0E");
  EXPECT_EQ(gpu["inforom"]["image"], "G548.0201.00.06");
  EXPECT_EQ(gpu["inforom"]["oem"], "2.1");
  EXPECT_EQ(gpu["inforom"]["ecc"], "7.16");
  EXPECT_TRUE(gpu["inforom"]["pwr"].is_null());  // "N/A"
}

TEST(NvidiaSmiXmlParserTest, ReadsPcieLinkAsNumbers) {
  json doc = parseOk(readTestdata("nvidia_smi_gb200_575.xml"));
  const json& pcie = doc["gpus"][1]["pcie"];
  EXPECT_EQ(pcie["gen_max"], 5);
  EXPECT_EQ(pcie["gen_current"], 3);
  EXPECT_EQ(pcie["width_max"], 16);  // "16x"
  EXPECT_EQ(pcie["width_current"], 8);
}

TEST(NvidiaSmiXmlParserTest, SumsEccOverMemoryTypesIncludingParityAndSecded) {
  json doc = parseOk(readTestdata("nvidia_smi_gb200_575.xml"));
  const json& ecc = doc["gpus"][1]["ecc"];
  EXPECT_EQ(ecc["mode"], "Enabled");
  EXPECT_EQ(ecc["volatile_correctable"], 5);
  EXPECT_EQ(ecc["volatile_uncorrectable"], 2);
  EXPECT_EQ(ecc["aggregate_correctable"], 42);  // sram 1 + dram 41
  EXPECT_EQ(ecc["aggregate_uncorrectable"], 2);
  EXPECT_EQ(doc["gpus"][0]["ecc"]["aggregate_correctable"], 3);
}

TEST(NvidiaSmiXmlParserTest, ReadsRemappedRowsFabricAndRecoveryAction) {
  json doc = parseOk(readTestdata("nvidia_smi_gb200_575.xml"));
  const json& healthy = doc["gpus"][0];
  const json& pending = doc["gpus"][1];
  EXPECT_EQ(healthy["remapped_rows"]["pending"], false);
  EXPECT_EQ(pending["remapped_rows"]["correctable"], 0);
  EXPECT_EQ(pending["remapped_rows"]["uncorrectable"], 2);
  EXPECT_EQ(pending["remapped_rows"]["pending"], true);
  EXPECT_EQ(pending["remapped_rows"]["failure"], false);
  EXPECT_EQ(pending["remapped_rows"]["histogram"]["max"], 2746);
  EXPECT_EQ(pending["fabric"]["state"], "Completed");
  EXPECT_EQ(pending["fabric"]["status"], "Success");
  EXPECT_EQ(pending["fabric"]["clique_id"], "32766");
  EXPECT_EQ(healthy["recovery_action"], "None");
  EXPECT_EQ(pending["recovery_action"], "Reset");
}

TEST(NvidiaSmiXmlParserTest, ListsOnlyActiveClockEventReasons) {
  json doc = parseOk(readTestdata("nvidia_smi_gb200_575.xml"));
  EXPECT_EQ(doc["gpus"][0]["clock_event_reasons_active"], json::array({"gpu_idle"}));
  EXPECT_EQ(doc["gpus"][1]["clock_event_reasons_active"], json::array({"sw_power_cap"}));
}

TEST(NvidiaSmiXmlParserTest, MapsEveryPrintedClockEventReasonToABool) {
  json doc = parseOk(readTestdata("nvidia_smi_gb200_575.xml"));
  const json& reasons = doc["gpus"][1]["clock_event_reasons"];
  EXPECT_EQ(reasons.size(), 9u);
  EXPECT_EQ(reasons["sw_power_cap"], true);
  EXPECT_EQ(reasons["hw_thermal_slowdown"], false);
  json old = parseOk(readTestdata("nvidia_smi_p100_375_v8.xml"));
  EXPECT_EQ(old["gpus"][1]["clock_event_reasons"]["hw_slowdown"], true);
  EXPECT_EQ(old["gpus"][1]["clock_event_reasons"]["sync_boost"], false);
  EXPECT_FALSE(old["gpus"][1]["clock_event_reasons"].contains("hw_thermal_slowdown"));  // not in v8
  json na = parseOk("<nvidia_smi_log><driver_version>1</driver_version><gpu><uuid>GPU-1</uuid>"
                    "<clocks_event_reasons><clocks_event_reason_gpu_idle>[N/A]</clocks_event_reason_gpu_idle>"
                    "</clocks_event_reasons></gpu></nvidia_smi_log>");
  EXPECT_TRUE(na["gpus"][0]["clock_event_reasons"]["gpu_idle"].is_null());
  EXPECT_EQ(na["gpus"][0]["clock_event_reasons_active"], json::array());
}

TEST(NvidiaSmiXmlParserTest, ReadsOlderDriverThrottleReasonsAndPerTypeEccTotals) {
  json doc = parseOk(readTestdata("nvidia_smi_a100_470.xml"));
  EXPECT_EQ(doc["driver_version"], "470.199.02");
  ASSERT_EQ(doc["gpus"].size(), 1u);
  const json& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["clock_event_reasons_active"], json::array({"hw_slowdown"}));
  EXPECT_EQ(gpu["ecc"]["volatile_correctable"], 3);
  EXPECT_EQ(gpu["ecc"]["volatile_uncorrectable"], 0);
  EXPECT_EQ(gpu["ecc"]["aggregate_correctable"], 17);  // <total>, not total + device_memory
  EXPECT_EQ(gpu["ecc"]["aggregate_uncorrectable"], 1);
  EXPECT_EQ(gpu["remapped_rows"]["uncorrectable"], 1);
  // Elements this driver does not print are null, not missing.
  EXPECT_TRUE(gpu["fabric"]["state"].is_null());
  EXPECT_TRUE(gpu["recovery_action"].is_null());
}

TEST(NvidiaSmiXmlParserTest, ReadsSramUncorrectableLayoutOfDrivers535To570) {
  json doc = parseOk(R"(<?xml version="1.0" ?>
<nvidia_smi_log><driver_version>550.90.07</driver_version>
<gpu id="00000000:19:00.0"><uuid>GPU-1</uuid>
<ecc_errors>
 <volatile><sram_correctable>1</sram_correctable><sram_uncorrectable>2</sram_uncorrectable>
  <dram_correctable>4</dram_correctable><dram_uncorrectable>8</dram_uncorrectable></volatile>
 <aggregate><sram_correctable>N/A</sram_correctable><sram_uncorrectable>N/A</sram_uncorrectable>
  <dram_correctable>N/A</dram_correctable><dram_uncorrectable>N/A</dram_uncorrectable></aggregate>
</ecc_errors>
<remapped_rows>N/A</remapped_rows>
</gpu></nvidia_smi_log>)");
  const json& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["ecc"]["volatile_correctable"], 5);
  EXPECT_EQ(gpu["ecc"]["volatile_uncorrectable"], 10);
  EXPECT_TRUE(gpu["ecc"]["aggregate_correctable"].is_null());  // all "N/A"
  EXPECT_TRUE(gpu["remapped_rows"]["pending"].is_null());
  EXPECT_EQ(gpu["pci_bus_id"], "00000000:19:00.0");  // from the id attribute
  EXPECT_EQ(doc["gpu_count"], 1);                    // no <attached_gpus>: counted
}

// Driver 375 (nvsmi_device_v8.dtd): what the v12 parser always read (identity, InfoROM, PCIe,
// ECC) and what older code dropped (temperature, power, memory, clocks, retired pages).
TEST(NvidiaSmiXmlParserTest, Driver375V8KeepsIdentityPcieInforomAndEcc) {
  json doc = parseOk(readTestdata("nvidia_smi_p100_375_v8.xml"));
  EXPECT_EQ(doc["driver_version"], "375.66");
  EXPECT_TRUE(doc["cuda_version"].is_null());  // not printed before ~410
  EXPECT_EQ(doc["gpu_count"], 2);
  const json& gpu = doc["gpus"][1];
  EXPECT_EQ(gpu["product_name"], "Tesla P100-SXM2-16GB");
  EXPECT_EQ(gpu["pci_bus_id"], "0000:07:00.0");
  EXPECT_EQ(gpu["serial"], "0323217021912");
  EXPECT_EQ(gpu["uuid"], "GPU-9b7e3c15-0f2a-4d6c-8e91-3a5b7c9d1e24");
  EXPECT_EQ(gpu["minor_number"], 1);
  EXPECT_TRUE(gpu["module_id"].is_null());
  EXPECT_EQ(gpu["vbios_version"], "86.00.41.00.05");
  EXPECT_EQ(gpu["inforom"], (json{{"image", "G503.0201.00.03"}, {"oem", "1.1"}, {"ecc", "4.1"}, {"pwr", nullptr}}));
  EXPECT_EQ(gpu["pcie"], (json{{"gen_max", 3}, {"gen_current", 3}, {"width_max", 16},
                               {"width_current", 16}, {"replay_counter", 0}}));
  EXPECT_EQ(gpu["ecc"], (json{{"mode", "Enabled"}, {"volatile_correctable", 4}, {"volatile_uncorrectable", 1},
                              {"aggregate_correctable", 133}, {"aggregate_uncorrectable", 1}}));
  EXPECT_EQ(gpu["clock_event_reasons_active"], json::array({"hw_slowdown"}));
  // Blocks this driver does not print are null or empty, never missing.
  EXPECT_TRUE(gpu["remapped_rows"]["pending"].is_null());
  EXPECT_TRUE(gpu["fabric"]["state"].is_null());
  EXPECT_TRUE(gpu["recovery_action"].is_null());
  EXPECT_TRUE(gpu["module_power_w"].is_null());
  EXPECT_EQ(gpu["mig"], (json{{"current", nullptr}, {"pending", nullptr}, {"devices", json::array()}}));
}

TEST(NvidiaSmiXmlParserTest, Driver375V8YieldsTemperaturePowerMemoryClocksAndRetiredPages) {
  json doc = parseOk(readTestdata("nvidia_smi_p100_375_v8.xml"));
  const json& gpu = doc["gpus"][1];
  EXPECT_EQ(gpu["temperature_c"],
            (json{{"gpu", 71}, {"memory", nullptr}, {"shutdown", 85}, {"slowdown", 82}, {"max_operating", nullptr},
                  {"max_memory", nullptr}, {"target", nullptr}, {"tlimit", nullptr}, {"tlimit_shutdown", nullptr},
                  {"tlimit_slowdown", nullptr}, {"tlimit_max_operating", nullptr}, {"tlimit_max_memory", nullptr}}));
  // v8: power_limit is the requested limit, enforced_power_limit the one in force.
  EXPECT_EQ(gpu["power_w"], (json{{"draw", 287.54}, {"draw_average", nullptr}, {"limit", 300.0},
                                  {"requested_limit", 300.0}, {"default_limit", 300.0},
                                  {"min_limit", 150.0}, {"max_limit", 300.0}}));
  EXPECT_EQ(gpu["fb_memory_mib"], (json{{"total", 16276}, {"reserved", nullptr}, {"used", 0}, {"free", 16276}}));
  EXPECT_EQ(gpu["clocks_mhz"]["current"], (json{{"graphics", 1189}, {"sm", 1189}, {"memory", 715}, {"video", 1240}}));
  EXPECT_EQ(gpu["clocks_mhz"]["max"], (json{{"graphics", 1480}, {"sm", 1480}, {"memory", 715}, {"video", 1480}}));
  EXPECT_EQ(gpu["utilization_pct"], (json{{"gpu", 33.4}, {"memory", 0}, {"encoder", 0}, {"decoder", 0}}));
  EXPECT_EQ(gpu["retired_pages"], (json{{"single_bit", 2}, {"double_bit", 1}, {"pending", true}}));
  EXPECT_EQ(doc["gpus"][0]["retired_pages"], (json{{"single_bit", 0}, {"double_bit", 0}, {"pending", false}}));
}

TEST(NvidiaSmiXmlParserTest, Driver535H100ReadsMigDevicesAndGpuPowerReadings) {
  json doc = parseOk(readTestdata("nvidia_smi_h100_535_mig.xml"));
  EXPECT_EQ(doc["driver_version"], "535.183.01");
  const json& mig = doc["gpus"][0];
  EXPECT_EQ(mig["mig"]["current"], "Enabled");
  EXPECT_EQ(mig["mig"]["pending"], "Enabled");
  ASSERT_EQ(mig["mig"]["devices"].size(), 2u);
  EXPECT_EQ(mig["mig"]["devices"][1],
            (json{{"index", 1}, {"gpu_instance_id", 2}, {"compute_instance_id", 0}, {"multiprocessor_count", 60},
                  {"volatile_sram_uncorrectable", 0},
                  {"fb_memory_mib", {{"total", 40192}, {"reserved", 0}, {"used", 12413}, {"free", 27779}}}}));
  // Under MIG the GPU-level utilization is N/A.
  EXPECT_EQ(mig["utilization_pct"],
            (json{{"gpu", nullptr}, {"memory", nullptr}, {"encoder", nullptr}, {"decoder", nullptr}}));
  EXPECT_EQ(mig["temperature_c"],
            (json{{"gpu", 36}, {"memory", 44}, {"shutdown", 92}, {"slowdown", 89}, {"max_operating", 87},
                  {"max_memory", 95}, {"target", nullptr}, {"tlimit", nullptr}, {"tlimit_shutdown", nullptr},
                  {"tlimit_slowdown", nullptr}, {"tlimit_max_operating", nullptr}, {"tlimit_max_memory", nullptr}}));
  EXPECT_EQ(mig["power_w"], (json{{"draw", 112.43}, {"draw_average", nullptr}, {"limit", 700.0},
                                  {"requested_limit", 700.0}, {"default_limit", 700.0},
                                  {"min_limit", 200.0}, {"max_limit", 700.0}}));
  // An H100 without a Grace module prints <module_power_readings> with every value N/A.
  for (const auto& [key, value] : mig["module_power_w"].items()) EXPECT_TRUE(value.is_null()) << key;
  EXPECT_EQ(mig["fb_memory_mib"], (json{{"total", 81559}, {"reserved", 329}, {"used", 12509}, {"free", 68721}}));
  EXPECT_EQ(mig["clocks_mhz"]["max"]["sm"], 1980);
  EXPECT_EQ(mig["retired_pages"], (json{{"single_bit", nullptr}, {"double_bit", nullptr}, {"pending", nullptr}}));

  const json& plain = doc["gpus"][1];
  EXPECT_EQ(plain["mig"], (json{{"current", "Disabled"}, {"pending", "Disabled"}, {"devices", json::array()}}));
  EXPECT_EQ(plain["utilization_pct"]["gpu"], 87);
  EXPECT_EQ(plain["ecc"]["volatile_uncorrectable"], 1);
  EXPECT_EQ(plain["remapped_rows"]["pending"], true);
  EXPECT_EQ(plain["fabric"]["state"], "Completed");
  EXPECT_TRUE(plain["fabric"]["clique_id"].is_null());
  EXPECT_TRUE(plain["recovery_action"].is_null());  // 535 does not print it
}

TEST(NvidiaSmiXmlParserTest, Driver580Gb300ReadsInstantAndModulePower) {
  json doc = parseOk(readTestdata("nvidia_smi_gb300_580_na.xml"));
  EXPECT_EQ(doc["driver_version"], "580.82.07");
  EXPECT_EQ(doc["cuda_version"], "13.0");
  const json& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["product_name"], "NVIDIA GB300");
  EXPECT_EQ(gpu["module_id"], 1);
  EXPECT_EQ(gpu["pcie"]["gen_max"], 6);
  EXPECT_EQ(gpu["power_w"], (json{{"draw", 184.07}, {"draw_average", 182.4}, {"limit", 1400.0},
                                  {"requested_limit", 1400.0}, {"default_limit", 1400.0},
                                  {"min_limit", 200.0}, {"max_limit", 1400.0}}));
  EXPECT_EQ(gpu["module_power_w"]["draw"], 425.1);
  EXPECT_EQ(gpu["module_power_w"]["limit"], 2600.0);
  // ~555+ print thresholds as T.Limit margins (relative, negative past the limit), not absolute.
  EXPECT_EQ(gpu["temperature_c"],
            (json{{"gpu", 33}, {"memory", 36}, {"shutdown", nullptr}, {"slowdown", nullptr}, {"max_operating", nullptr},
                  {"max_memory", nullptr}, {"target", nullptr}, {"tlimit", 54}, {"tlimit_shutdown", -12},
                  {"tlimit_slowdown", -2}, {"tlimit_max_operating", 0}, {"tlimit_max_memory", -5}}));
  EXPECT_EQ(gpu["fb_memory_mib"], (json{{"total", 284208}, {"reserved", 1544}, {"used", 1}, {"free", 282663}}));
  EXPECT_EQ(gpu["clock_event_reasons_active"], json::array({"gpu_idle"}));
  EXPECT_EQ(gpu["fabric"]["state"], "Completed");
  EXPECT_EQ(gpu["recovery_action"], "None");
}

// GPU 1 of the GB300 sample spells "no value" every way nvidia-smi does.
TEST(NvidiaSmiXmlParserTest, EveryNoValueSpellingIsNullNeverMissing) {
  json doc = parseOk(readTestdata("nvidia_smi_gb300_580_na.xml"));
  const json& gpu = doc["gpus"][1];
  EXPECT_TRUE(gpu["inforom"]["pwr"].is_null());                  // [N/A]
  EXPECT_TRUE(gpu["pcie"]["gen_current"].is_null());             // [N/A]
  EXPECT_TRUE(gpu["temperature_c"]["tlimit"].is_null());         // [N/A]
  EXPECT_TRUE(gpu["temperature_c"]["target"].is_null());         // [Not Supported]
  EXPECT_TRUE(gpu["temperature_c"]["memory"].is_null());         // Unknown Error
  EXPECT_TRUE(gpu["temperature_c"]["tlimit_shutdown"].is_null()); // [Unknown Error]
  EXPECT_TRUE(gpu["temperature_c"]["tlimit_max_memory"].is_null()); // N/A
  EXPECT_EQ(gpu["temperature_c"]["tlimit_slowdown"], -2);
  EXPECT_TRUE(gpu["power_w"]["draw_average"].is_null());         // [Unknown Error]
  EXPECT_EQ(gpu["power_w"]["draw"], 191.62);
  EXPECT_TRUE(gpu["module_power_w"]["draw"].is_null());          // [N/A]
  EXPECT_TRUE(gpu["module_power_w"]["min_limit"].is_null());     // Not Supported
  EXPECT_TRUE(gpu["fb_memory_mib"]["used"].is_null());           // [N/A]
  EXPECT_EQ(gpu["fb_memory_mib"]["reserved"], 1544);
  EXPECT_TRUE(gpu["clocks_mhz"]["current"]["graphics"].is_null()); // [Unknown Error]
  EXPECT_TRUE(gpu["clocks_mhz"]["max"]["video"].is_null());      // [N/A]
  EXPECT_TRUE(gpu["utilization_pct"]["gpu"].is_null());          // [Not Supported]
  EXPECT_TRUE(gpu["utilization_pct"]["memory"].is_null());       // [Unknown Error]
  EXPECT_TRUE(gpu["utilization_pct"]["encoder"].is_null());      // Not Supported
  EXPECT_EQ(gpu["utilization_pct"]["decoder"], 0);
  EXPECT_EQ(gpu["fabric"]["state"], "In Progress");
  EXPECT_TRUE(gpu["fabric"]["status"].is_null());
  EXPECT_EQ(gpu["ecc"]["aggregate_correctable"], 17);
  // Every documented key is present on every GPU, whatever the driver printed.
  for (const char* sample : {"nvidia_smi_p100_375_v8.xml", "nvidia_smi_a100_470.xml", "nvidia_smi_h100_535_mig.xml",
                             "nvidia_smi_gb200_575.xml", "nvidia_smi_gb300_580_na.xml"}) {
    json parsed = parseOk(readTestdata(sample));
    for (const json& g : parsed["gpus"]) {
      for (const char* key :
           {"index", "pci_bus_id", "product_name", "serial", "uuid", "minor_number", "module_id", "vbios_version",
            "inforom", "pcie", "clock_event_reasons_active", "clock_event_reasons", "ecc", "remapped_rows",
            "retired_pages", "temperature_c", "power_w", "module_power_w", "fb_memory_mib", "clocks_mhz",
            "utilization_pct", "mig", "fabric", "recovery_action"}) {
        EXPECT_TRUE(g.contains(key)) << sample << " gpu " << g["index"] << " " << key;
      }
      for (const char* key :
           {"gpu", "memory", "shutdown", "slowdown", "max_operating", "max_memory", "target", "tlimit",
            "tlimit_shutdown", "tlimit_slowdown", "tlimit_max_operating", "tlimit_max_memory"}) {
        EXPECT_TRUE(g["temperature_c"].contains(key)) << sample << " " << key;
      }
      for (const char* key :
           {"draw", "draw_average", "limit", "requested_limit", "default_limit", "min_limit", "max_limit"}) {
        EXPECT_TRUE(g["power_w"].contains(key)) << sample << " " << key;
      }
    }
    EXPECT_NO_THROW(parsed.dump()) << sample;
  }
}

TEST(NvidiaSmiXmlParserTest, MeasurementsKeepIntegersAndFractionsAndIgnoreTheUnit) {
  json doc = parseOk(R"(<nvidia_smi_log><driver_version>550.54.15</driver_version><gpu><uuid>GPU-1</uuid>
<temperature><gpu_temp>-3 C</gpu_temp><memory_temp>45</memory_temp><gpu_temp_tlimit>12C</gpu_temp_tlimit></temperature>
<power_readings><power_draw>1e2 W</power_draw><power_limit>0x10 W</power_limit><enforced_power_limit> 350.50 W </enforced_power_limit></power_readings>
<fb_memory_usage><total>81559 MiB</total><used>GPU is lost</used><free>[GPU requires reset]</free></fb_memory_usage>
</gpu></nvidia_smi_log>)");
  const json& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["temperature_c"]["gpu"], -3);
  EXPECT_TRUE(gpu["temperature_c"]["gpu"].is_number_integer());
  EXPECT_EQ(gpu["temperature_c"]["memory"], 45);
  EXPECT_TRUE(gpu["temperature_c"]["tlimit"].is_null());  // "12C": not a number and a unit
  EXPECT_EQ(gpu["power_w"]["draw"], 100.0);
  EXPECT_TRUE(gpu["power_w"]["requested_limit"].is_null());  // "0x10 W"
  EXPECT_EQ(gpu["power_w"]["limit"], 350.5);
  EXPECT_EQ(gpu["fb_memory_mib"]["total"], 81559);
  EXPECT_TRUE(gpu["fb_memory_mib"]["used"].is_null());
  EXPECT_TRUE(gpu["fb_memory_mib"]["free"].is_null());
}

// A newer driver adds elements anywhere: at the root, in <gpu>, inside known blocks, with
// attributes, and as new blocks around known ones. None of it may be fatal or change a value.
TEST(NvidiaSmiXmlParserTest, UnknownElementsAndAttributesAnywhereAreIgnored) {
  std::string xml = readTestdata("nvidia_smi_gb200_575.xml");
  json before = parseOk(xml);
  auto insertAfter = [&](const std::string& anchor, const std::string& text) {
    std::size_t at = xml.find(anchor);
    ASSERT_NE(at, std::string::npos) << anchor;
    xml.insert(at + anchor.size(), text);
  };
  insertAfter("<nvidia_smi_log>", "<future_root_block><x>1</x></future_root_block>");
  insertAfter("<attached_gpus>2</attached_gpus>", "<hic_info><hic_firmware>N/A</hic_firmware></hic_info>");
  insertAfter("<gpu id=\"00000009:01:00.0\">", "<gpu_future_mode fancy=\"yes\">Enabled</gpu_future_mode>");
  insertAfter("<temperature>", "<gpu_temp_hotspot>51 C</gpu_temp_hotspot>");
  insertAfter("<gpu_power_readings>", "<power_profiles><profile id=\"1\">MAX-P</profile></power_profiles>");
  insertAfter("<remapped_rows>", "<remapped_row_future>7</remapped_row_future>");
  insertAfter("<fabric>", "<incorrect_configuration>None</incorrect_configuration>");
  insertAfter("</nvidia_smi_log>", "\n<!-- trailing comment -->\n");
  json after = parseOk(xml);
  EXPECT_EQ(after, before);
}

TEST(NvidiaSmiXmlParserTest, RefusesDoctypeWithInternalSubsetSuchAsAnEntityBomb) {
  std::string bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE nvidia_smi_log [\n <!ENTITY lol \"lol\">\n";
  bomb += " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n";
  for (int i = 2; i <= 9; ++i) {
    bomb += " <!ENTITY lol" + std::to_string(i) + " \"";
    for (int k = 0; k < 10; ++k) bomb += "&lol" + std::to_string(i - 1) + ";";
    bomb += "\">\n";
  }
  bomb += "]>\n<nvidia_smi_log><driver_version>&lol9;</driver_version><gpu><uuid>GPU-1</uuid></gpu></nvidia_smi_log>";
  EXPECT_EQ(parseError(bomb),
            "nvidia-smi XML: a DOCTYPE with an internal subset (entity declarations) is not nvidia-smi output");
  // The DOCTYPE nvidia-smi prints is fine.
  EXPECT_TRUE(parse(Format::kNvidiaSmiXml, "<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">"
                                           "<nvidia_smi_log><driver_version>1</driver_version></nvidia_smi_log>")
                  .ok());
}

TEST(NvidiaSmiXmlParserTest, RefusesNestingDeeperThanTheBound) {
  std::string deep = "<nvidia_smi_log><driver_version>1</driver_version>";
  for (std::size_t i = 0; i < kMaxNestingDepth + 10; ++i) deep += "<a>";
  for (std::size_t i = 0; i < kMaxNestingDepth + 10; ++i) deep += "</a>";
  deep += "</nvidia_smi_log>";
  EXPECT_NE(parseError(deep).find("more than the limit of 128"), std::string::npos);
}

TEST(NvidiaSmiXmlParserTest, RefusesMoreTagsThanTheBound) {
  std::string many = "<nvidia_smi_log><driver_version>1</driver_version>";
  for (std::size_t i = 0; i < (1u << 19); ++i) many += "<a/>";
  many += "</nvidia_smi_log>";
  EXPECT_EQ(parseError(many), "nvidia-smi XML: 524292 tags, more than the limit of 524288");
}

TEST(NvidiaSmiXmlParserTest, RefusesCorruptAndBinaryInput) {
  EXPECT_NE(parseError("<nvidia_smi_log><driver_version>1</driver_version><gpu><uuid>GPU-1</uu").find("line 1 column"),
            std::string::npos);
  std::string binary(4096, '\0');
  for (std::size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>((i * 131) % 256);
  EXPECT_NE(parseError(binary).find("nvidia-smi XML: "), std::string::npos);
  EXPECT_NE(parseError("   \n\t ").find("the output is empty"), std::string::npos);
}

TEST(NvidiaSmiXmlParserTest, RejectsTruncatedXmlNamingThePosition) {
  std::string xml = readTestdata("nvidia_smi_gb200_575.xml");
  xml.resize(xml.find("<remapped_rows>"));
  std::string message = parseError(xml);
  EXPECT_NE(message.find("nvidia-smi XML: line "), std::string::npos) << message;
  EXPECT_NE(message.find("mismatch"), std::string::npos) << message;
}

TEST(NvidiaSmiXmlParserTest, RejectsXmlThatIsNotAnNvidiaSmiLog) {
  EXPECT_EQ(parseError("<?xml version=\"1.0\"?><nvsm_log><driver_version>1</driver_version></nvsm_log>"),
            "nvidia-smi XML: the root element is <nvsm_log>, not <nvidia_smi_log>");
}

TEST(NvidiaSmiXmlParserTest, RejectsEmptyOutput) {
  EXPECT_NE(parseError("").find("nvidia-smi XML: line 1 column 1: "), std::string::npos);
}

TEST(NvidiaSmiXmlParserTest, RejectsGpuWithoutUuid) {
  EXPECT_EQ(parseError("<nvidia_smi_log><driver_version>575.57.08</driver_version>"
                       "<gpu id=\"0\"><uuid>GPU-a</uuid></gpu><gpu id=\"1\"><serial>1</serial></gpu>"
                       "</nvidia_smi_log>"),
            "nvidia-smi XML: <gpu> 1 has no <uuid>");
}

TEST(NvidiaSmiXmlParserTest, RejectsLogWithoutDriverVersion) {
  EXPECT_EQ(parseError("<nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>"),
            "nvidia-smi XML: <nvidia_smi_log> has no <driver_version>");
}

TEST(NvidiaSmiXmlParserTest, ReplacesInvalidUtf8SoTheResultCanBeDumped) {
  json doc = parseOk("<nvidia_smi_log><driver_version>575</driver_version><gpu><uuid>GPU-\xff</uuid>"
                     "</gpu></nvidia_smi_log>");
  EXPECT_EQ(doc["gpus"][0]["uuid"], "GPU-\xEF\xBF\xBD");
  EXPECT_NO_THROW(doc.dump());
}

}  // namespace
}  // namespace kiln::parsers
