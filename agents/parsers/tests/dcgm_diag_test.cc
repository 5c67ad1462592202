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
