#include <gtest/gtest.h>

#include "agents/parsers/parsers.h"
#include "agents/parsers/tests/testdata_util.h"

namespace kiln::parsers {
namespace {

using nlohmann::json;

TEST(DcgmNvlinkParserTest, ReadsEighteenLinksPerGpuInLinkOrder) {
  kiln::Result<json> doc =
      parse(Format::kDcgmNvlinkJson, readTestdata("dcgm4_nvlink_e_gb200_two_gpus.txt"));
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  ASSERT_EQ((*doc)["gpus"].size(), 2u);
  const json& gpu1 = (*doc)["gpus"][1];
  EXPECT_EQ(gpu1["gpu_id"], 1);
  ASSERT_EQ(gpu1["links"].size(), 18u);
  for (std::size_t i = 0; i < 18; ++i) EXPECT_EQ(gpu1["links"][i]["link"], i);
  const json& link7 = gpu1["links"][7];
  EXPECT_EQ(link7["crc_flit"], 12);
  EXPECT_EQ(link7["crc_data"], 0);
  EXPECT_EQ(link7["replay"], 3);
  EXPECT_EQ(link7["recovery"], 1);
}

TEST(DcgmNvlinkParserTest, SumsTotalsOverGpusAndLinks) {
  kiln::Result<json> doc =
      parse(Format::kDcgmNvlinkJson, readTestdata("dcgm4_nvlink_e_gb200_two_gpus.txt"));
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ((*doc)["totals"],
            (json{{"crc_flit", 12}, {"crc_data", 2}, {"replay", 3}, {"recovery", 1}}));
}

TEST(DcgmNvlinkParserTest, CounterDcgmCouldNotReadIsNullAndItsWarningKept) {
  kiln::Result<json> doc =
      parse(Format::kDcgmNvlinkJson, readTestdata("dcgm4_nvlink_e_gb200_two_gpus.txt"));
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_TRUE((*doc)["gpus"][1]["links"][17]["crc_data"].is_null());
  EXPECT_EQ((*doc)["gpus"][1]["links"][17]["crc_flit"], 0);
  ASSERT_EQ((*doc)["notes"].size(), 1u);
  EXPECT_EQ((*doc)["notes"][0].get<std::string>().rfind("Warning: Unable to retrieve nvlink", 0), 0u);
}

TEST(DcgmNvlinkParserTest, GpuWithoutReadableCountersHasNoLinks) {
  kiln::Result<json> doc =
      parse(Format::kDcgmNvlinkJson, R"({"header": ["NVLINK Error Counts", "GPU 3"]})");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ((*doc)["gpus"][0]["gpu_id"], 3);
  EXPECT_TRUE((*doc)["gpus"][0]["links"].empty());
  EXPECT_EQ((*doc)["totals"]["replay"], 0);
}

TEST(DcgmNvlinkParserTest, UnknownKeysAndCountersAreIgnored) {
  std::string text = readTestdata("dcgm4_nvlink_e_gb200_two_gpus.txt");
  kiln::Result<json> before = parse(Format::kDcgmNvlinkJson, text);
  ASSERT_TRUE(before.ok()) << before.error().message;
  std::string extended = R"({"header": ["NVLINK Error Counts", "GPU 5"], "future": {"a": 1},
    "body": {"Link 0": {"children": {"CRC FLIT Error": {"value": "4", "unit": "count"},
                                     "Effective BER": {"value": "1e-15"}}, "future": 2},
             "Summary": {"children": {}}}})";
  kiln::Result<json> doc = parse(Format::kDcgmNvlinkJson, text + "\n" + extended);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ((*doc)["gpus"][0], (*before)["gpus"][0]);
  const json& gpu5 = (*doc)["gpus"][2];
  EXPECT_EQ(gpu5["gpu_id"], 5);
  EXPECT_EQ(gpu5["links"],
            json::parse(R"([{"link": 0, "crc_flit": 4, "crc_data": null, "replay": null, "recovery": null}])"));
}

TEST(DcgmNvlinkParserTest, RejectsDocumentWithoutGpuHeader) {
  kiln::Result<json> doc = parse(Format::kDcgmNvlinkJson, R"({"body": {}})");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(doc.error().message,
            "dcgmi nvlink JSON: document 0: no \"GPU <id>\" in its \"header\"");
}

TEST(DcgmNvlinkParserTest, RejectsOutputWithoutJson) {
  kiln::Result<json> doc =
      parse(Format::kDcgmNvlinkJson, "Error: Unable to add a nvlink field group. Return : Unknown\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message, "dcgmi nvlink JSON: no JSON document in the output");
}

}  // namespace
}  // namespace kiln::parsers
