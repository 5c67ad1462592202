#include <gtest/gtest.h>

#include <algorithm>

#include "agents/parsers/parsers.h"
#include "agents/parsers/tests/testdata_util.h"

namespace kiln::parsers {
namespace {

using nlohmann::json;

json parseOk(const std::string& text) {
  kiln::Result<json> parsed = parse(Format::kDcgmDiagJson, text);
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : json();
}

std::string parseError(const std::string& text) {
  kiln::Result<json> parsed = parse(Format::kDcgmDiagJson, text);
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidContent);
  return parsed.error().message;
}

const json& testNamed(const json& doc, const std::string& name) {
  for (const json& test : doc["tests"]) {
    if (test["name"] == name) return test;
  }
  ADD_FAILURE() << "no test " << name;
  static const json kNone;
  return kNone;
}

TEST(DcgmDiagParserTest, ReadsDcgm4xEntityResultLayout) {
  json doc = parseOk(readTestdata("dcgm4_diag_r2_row_remap_pending.json"));
  EXPECT_EQ(doc["dcgm_major"], 4);
  EXPECT_EQ(doc["dcgm_version"], "4.2.3");
  EXPECT_EQ(doc["driver_version"], "575.57.08");
  ASSERT_EQ(doc["tests"].size(), 3u);
  const json& software = testNamed(doc, "software");
  EXPECT_EQ(software["category"], "Deployment");
  ASSERT_EQ(software["results"].size(), 2u);
  const json& failing = software["results"][1];
  EXPECT_EQ(failing["entity_group"], "GPU");
  EXPECT_EQ(failing["entity_id"], 1);
  EXPECT_EQ(failing["status"], "Fail");
  ASSERT_EQ(failing["warnings"].size(), 1u);
  EXPECT_EQ(failing["warnings"][0]["error_id"], 85);
  EXPECT_EQ(failing["warnings"][0]["message"],
            "GPU 1 has uncorrectable memory errors and row remappings are pending");
  EXPECT_EQ(software["summary"]["status"], "Fail");
  EXPECT_EQ(testNamed(doc, "memory")["results"][1]["status"], "Skip");
  EXPECT_EQ(testNamed(doc, "pcie")["results"][0]["info"].size(), 2u);
}

TEST(DcgmDiagParserTest, FailsOverallAndListsTheFailedEntityOnce) {
  json doc = parseOk(readTestdata("dcgm4_diag_r2_row_remap_pending.json"));
  EXPECT_EQ(doc["overall"], "Fail");
  ASSERT_EQ(doc["failed"].size(), 1u);  // the failing summary repeats the entity failure
  EXPECT_EQ(doc["failed"][0]["test"], "software");
  EXPECT_EQ(doc["failed"][0]["entity_id"], 1);
  EXPECT_EQ(doc["failed"][0]["error_ids"], json::array({85}));
  EXPECT_NE(doc["failed"][0]["message"].get<std::string>().find("row remappings are pending"),
            std::string::npos);
}

TEST(DcgmDiagParserTest, ReadsDcgm3xGpuIdLayout) {
  json doc = parseOk(readTestdata("dcgm3_diag_r2_ecc_fail.json"));
  EXPECT_EQ(doc["dcgm_major"], 3);
  EXPECT_EQ(doc["dcgm_version"], "3.3.9");
  EXPECT_EQ(doc["driver_version"], "550.90.07");
  EXPECT_EQ(doc["tests"].size(), 11u);  // 9 deployment checks + PCIe + GPU Memory
  const json& memory = testNamed(doc, "GPU Memory");
  EXPECT_EQ(memory["category"], "Hardware");
  EXPECT_EQ(memory["results"][1]["entity_group"], "GPU");
  EXPECT_EQ(memory["results"][1]["entity_id"], 1);  // "gpu_id": "1"
  EXPECT_EQ(memory["results"][1]["warnings"][0]["error_id"], 4);
  // A deployment check without an error names no GPU.
  EXPECT_TRUE(testNamed(doc, "Denylist")["results"][0]["entity_id"].is_null());
}

TEST(DcgmDiagParserTest, ReadsDcgm3xDeploymentWarningsKeyedWarnings) {
  json doc = parseOk(readTestdata("dcgm3_diag_r2_ecc_fail.json"));
  const json& remap = testNamed(doc, "Page Retirement/Row Remap")["results"][0];
  EXPECT_EQ(remap["status"], "Fail");
  EXPECT_EQ(remap["entity_id"], 1);  // a number here, a string in per-GPU tests
  EXPECT_EQ(remap["warnings"][0]["error_id"], 85);
  EXPECT_EQ(remap["warnings"][0]["message"],
            "GPU 1 has uncorrectable memory errors and row remappings are pending");
  EXPECT_EQ(doc["overall"], "Fail");
  ASSERT_EQ(doc["failed"].size(), 2u);
  EXPECT_EQ(doc["failed"][0]["test"], "Page Retirement/Row Remap");
  EXPECT_EQ(doc["failed"][1]["test"], "GPU Memory");
}

TEST(DcgmDiagParserTest, OverallIsWarnWhenNothingFailsButSomethingWarns) {
  json doc = parseOk(R"({"DCGM Diagnostic": {"test_categories": [{"category": "Integration",
    "tests": [{"name": "pcie", "results": [
      {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
      {"entity_group": "GPU", "entity_id": 1, "status": "Warn",
       "warnings": [{"error_id": 3, "warning": "GPU 1 PCIe replay rate 12/min"}]}]}]}]},
    "metadata": {"version": "4.1.1"}})");
  EXPECT_EQ(doc["overall"], "Warn");
  EXPECT_TRUE(doc["failed"].empty());
}

TEST(DcgmDiagParserTest, OverallIsPassWhenAllResultsPassOrSkip) {
  json doc = parseOk(R"({"DCGM Diagnostic": {"test_categories": [{"category": "Deployment",
    "tests": [{"name": "software", "results": [
      {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
      {"entity_group": "GPU", "entity_id": 1, "status": "Skip"}]}]}]}})");
  EXPECT_EQ(doc["overall"], "Pass");
  EXPECT_TRUE(doc["dcgm_version"].is_null());
}

TEST(DcgmDiagParserTest, NormalizesStatusWordsAndReadsOldGpuIdsKey) {
  json doc = parseOk(R"({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware",
    "tests": [{"name": "Diagnostic", "results": [
      {"gpu_ids": "0", "status": "PASS"}, {"gpu_ids": "1", "status": "SKIPPED"},
      {"gpu_ids": "2", "status": "not run", "warnings": ["plain-string warning"]}]}]}],
    "version": "2.4.7"}})");
  const json& results = doc["tests"][0]["results"];
  EXPECT_EQ(results[0]["status"], "Pass");
  EXPECT_EQ(results[1]["status"], "Skip");
  EXPECT_EQ(results[2]["status"], "Not Run");
  EXPECT_EQ(results[2]["entity_id"], 2);
  EXPECT_EQ(results[2]["warnings"][0]["message"], "plain-string warning");
  EXPECT_TRUE(results[2]["warnings"][0]["error_id"].is_null());
  EXPECT_EQ(doc["overall"], "Pass");
}

TEST(DcgmDiagParserTest, RuntimeErrorFailsOverall) {
  json doc = parseOk(R"({"DCGM Diagnostic": {"runtime_error":
    "Error: Diagnostic could not be run while DCGM is paused.", "version": "4.2.3"}})");
  EXPECT_EQ(doc["overall"], "Fail");
  EXPECT_EQ(doc["runtime_error"], "Error: Diagnostic could not be run while DCGM is paused.");
  ASSERT_EQ(doc["failed"].size(), 1u);
  EXPECT_EQ(doc["failed"][0]["test"], "runtime");
}

TEST(DcgmDiagParserTest, SkipsPlainLinesBeforeTheDocument) {
  json doc = parseOk("Successfully ran diagnostic for group.\n" +
                     readTestdata("dcgm4_diag_r2_row_remap_pending.json"));
  EXPECT_EQ(doc["tests"].size(), 3u);
}

TEST(DcgmDiagParserTest, Dcgm3xLevel3WithSkipsAndWarningsIsWarnNotFail) {
  json doc = parseOk(readTestdata("dcgm3_diag_r3_h100_skip_warn.json"));
  EXPECT_EQ(doc["dcgm_major"], 3);
  EXPECT_EQ(doc["dcgm_version"], "3.3.7");
  EXPECT_EQ(doc["driver_version"], "535.183.01");
  EXPECT_EQ(doc["overall"], "Warn");
  EXPECT_EQ(doc["failed"], json::array());
  const json& persistence = testNamed(doc, "Persistence Mode");
  EXPECT_EQ(persistence["category"], "Deployment");
  EXPECT_EQ(persistence["results"][0]["status"], "Warn");
  EXPECT_EQ(persistence["results"][0]["entity_id"], 1);
  EXPECT_EQ(persistence["results"][0]["warnings"][0]["error_id"], 29);
  const json& power = testNamed(doc, "Targeted Power");
  EXPECT_EQ(power["results"][1]["status"], "Warn");
  EXPECT_EQ(power["results"][1]["warnings"][0]["message"],
            "Clocks are being throttled for GPU 1 because of power constraints");
  const json& bandwidth = testNamed(doc, "Memory Bandwidth");
  EXPECT_EQ(bandwidth["results"][0]["status"], "Skip");
  EXPECT_EQ(bandwidth["results"][1]["status"], "Skip");
  EXPECT_EQ(testNamed(doc, "EUD")["results"][0]["info"],
            json::array({"EUD Test: the EUD package is not installed"}));
  EXPECT_EQ(testNamed(doc, "PCIe")["results"][1]["entity_id"], 1);  // "1" as a string
}

TEST(DcgmDiagParserTest, Dcgm4xListsEveryFailingGpuWithItsErrorIds) {
  json doc = parseOk(readTestdata("dcgm4_diag_r3_gb200_multi_gpu_errors.json"));
  EXPECT_EQ(doc["dcgm_major"], 4);
  EXPECT_EQ(doc["dcgm_version"], "4.4.1");
  EXPECT_EQ(doc["driver_version"], "580.82.07");
  EXPECT_EQ(doc["overall"], "Fail");
  ASSERT_EQ(doc["failed"].size(), 3u) << doc["failed"].dump();
  EXPECT_EQ(doc["failed"][0]["test"], "memory");
  EXPECT_EQ(doc["failed"][0]["entity_id"], 2);
  EXPECT_EQ(doc["failed"][0]["error_ids"], json::array({4}));
  EXPECT_EQ(doc["failed"][1]["test"], "targeted_stress");
  EXPECT_EQ(doc["failed"][1]["entity_id"], 0);
  EXPECT_EQ(doc["failed"][1]["error_ids"], json::array({34}));
  EXPECT_EQ(doc["failed"][2]["test"], "targeted_stress");
  EXPECT_EQ(doc["failed"][2]["entity_id"], 3);
  EXPECT_EQ(doc["failed"][2]["error_ids"], json::array({30, 14}));
  EXPECT_NE(doc["failed"][2]["message"].get<std::string>().find("; GPU 3's NvLink link 11 is currently down"),
            std::string::npos);
  const json& diagnostic = testNamed(doc, "diagnostic");
  EXPECT_EQ(diagnostic["summary"]["status"], "Warn");
  EXPECT_EQ(diagnostic["results"][1]["warnings"][0]["error_id"], 43);
  EXPECT_EQ(diagnostic["results"][2]["status"], "Skip");
}

// A newer DCGM adds keys anywhere: at the top level, in the root, in categories, tests, results,
// warnings and summaries. None of it may be fatal or change the normalized document.
TEST(DcgmDiagParserTest, UnknownKeysAnywhereAreIgnored) {
  for (const char* sample : {"dcgm4_diag_r3_gb200_multi_gpu_errors.json", "dcgm3_diag_r3_h100_skip_warn.json"}) {
    json raw = json::parse(readTestdata(sample));
    json before = parseOk(raw.dump());
    raw["future_top_level"] = {{"a", json::array({1, 2})}};
    json& root = raw.contains("DCGM Diagnostic") ? raw["DCGM Diagnostic"] : raw["DCGM GPU Diagnostic"];
    root["future_root_key"] = "x";
    for (json& category : root["test_categories"]) {
      category["future_category_key"] = 1;
      for (json& test : category["tests"]) {
        test["future_test_key"] = json::object();
        if (test.contains("test_summary")) test["test_summary"]["future_summary_key"] = nullptr;
        for (json& result : test["results"]) {
          result["future_result_key"] = {{"nested", true}};
          if (result.contains("warnings")) {
            for (json& w : result["warnings"]) w["future_warning_key"] = 3.5;
          }
        }
      }
    }
    EXPECT_EQ(parseOk(raw.dump()), before) << sample;
  }
}

TEST(DcgmDiagParserTest, RefusesNestingDeeperThanTheBound) {
  std::string deep = "{\"DCGM Diagnostic\": {\"test_categories\": [], \"x\": ";
  deep += std::string(kMaxNestingDepth + 5, '[') + std::string(kMaxNestingDepth + 5, ']') + "}}";
  EXPECT_NE(parseError(deep).find("nested more than 128 levels deep"), std::string::npos);
  // Brackets inside strings do not count.
  std::string text = "{\"DCGM Diagnostic\": {\"test_categories\": [], \"x\": \"" +
                     std::string(kMaxNestingDepth + 5, '[') + "\"}}";
  EXPECT_EQ(parseOk(text)["overall"], "Pass");
}

TEST(DcgmDiagParserTest, RejectsJsonWithoutTheRootKey) {
  EXPECT_EQ(parseError(R"({"tests": [{"name": "software", "results": []}]})"),
            "dcgmi diag JSON: no \"DCGM Diagnostic\" (DCGM 4.x) or \"DCGM GPU Diagnostic\" "
            "(DCGM 3.x) object at the top level");
}

TEST(DcgmDiagParserTest, RejectsBadJsonNamingLineAndColumn) {
  std::string message = parseError("{\n  \"DCGM Diagnostic\" : {\n    x\n  }\n}\n");
  EXPECT_EQ(message.rfind("dcgmi diag JSON: line 3 column 5: ", 0), 0u) << message;
}

TEST(DcgmDiagParserTest, RejectsTruncatedOutput) {
  std::string text = readTestdata("dcgm4_diag_r2_row_remap_pending.json");
  text.resize(text.rfind('\n', text.size() / 2) + 1);  // dcgmi killed mid-output
  auto lines = std::count(text.begin(), text.end(), '\n');
  std::string message = parseError(text);
  EXPECT_EQ(message.rfind("dcgmi diag JSON: line " + std::to_string(lines + 1) + " column 1: ", 0), 0u)
      << message;
  EXPECT_NE(message.find("unexpected end of input"), std::string::npos) << message;
}

TEST(DcgmDiagParserTest, RejectsUnknownStatusNamingWhere) {
  EXPECT_EQ(parseError(R"({"DCGM Diagnostic": {"test_categories": [{"category": "Deployment",
    "tests": [{"name": "software", "results": [{"entity_id": 0, "status": "Maybe"}]}]}]}})"),
            "dcgmi diag JSON: test_categories[0].tests[0].results[0]: unknown status \"Maybe\"");
}

TEST(DcgmDiagParserTest, RejectsOutputWithoutJson) {
  EXPECT_EQ(parseError("Error: unable to establish a connection to the specified host: localhost\n"),
            "dcgmi diag JSON: expected one JSON document, found 0");
}

}  // namespace
}  // namespace kiln::parsers
