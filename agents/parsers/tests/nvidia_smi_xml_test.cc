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
