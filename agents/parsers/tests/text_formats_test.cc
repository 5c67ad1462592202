#include <gtest/gtest.h>

#include "agents/parsers/parsers.h"

namespace kiln::parsers {
namespace {

using nlohmann::json;

TEST(FormatNameTest, EveryNameRoundTrips) {
  std::vector<std::string_view> names = formatNames();
  ASSERT_EQ(names.size(), 5u);
  for (std::string_view name : names) {
    kiln::Result<Format> format = formatFromName(name);
    ASSERT_TRUE(format.ok()) << name;
    EXPECT_EQ(formatName(*format), name);
  }
  EXPECT_EQ(formatName(Format::kDcgmNvlinkJson), "dcgmi-nvlink-json");
}

TEST(FormatNameTest, UnknownNameIsInvalidArgumentListingKnownOnes) {
  kiln::Result<Format> format = formatFromName("nvidia-smi");
  ASSERT_FALSE(format.ok());
  EXPECT_EQ(format.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(format.error().message.find("nvidia-smi-xml"), std::string::npos);
}

TEST(JsonParserTest, ReturnsTheDocumentAsIs) {
  kiln::Result<json> doc = parse(Format::kJson, R"({"a": [1, 2.5, "x"], "b": null})");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(*doc, (json{{"a", {1, 2.5, "x"}}, {"b", nullptr}}));
}

TEST(JsonParserTest, RejectsBadJsonNamingLineAndColumn) {
  kiln::Result<json> doc = parse(Format::kJson, "{\n  \"a\": 1,\n  \"b\" 2\n}");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(doc.error().message.rfind("JSON: line 3 column 7: ", 0), 0u) << doc.error().message;
}

TEST(JsonParserTest, RejectsTrailingText) {
  kiln::Result<json> doc = parse(Format::kJson, "{}\nDone.\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message.rfind("JSON: line 2 column 1: ", 0), 0u) << doc.error().message;
}

TEST(KeyValueParserTest, ReadsBothSeparatorsAndTypesValues) {
  kiln::Result<json> doc = parse(Format::kKeyValue,
                                 "# mlxfwmanager-like summary\n"
                                 "\n"
                                 "FW=28.39.1002\n"
                                 "Status: Update required\n"
                                 "ports = 2\n"
                                 "temp_c: 41.5\n"
                                 "secure_boot=true\n"
                                 "serial: 0322714071430\n"
                                 "url=http://bmc.local:8080/x\n"
                                 "empty=\n");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(*doc, (json{{"FW", "28.39.1002"},
                        {"Status", "Update required"},
                        {"ports", 2},
                        {"temp_c", 41.5},
                        {"secure_boot", true},
                        {"serial", "0322714071430"},  // leading zero: an id, not a number
                        {"url", "http://bmc.local:8080/x"},
                        {"empty", ""}}));
}

TEST(KeyValueParserTest, LineWithoutSeparatorIsAnErrorNamingItsLine) {
  kiln::Result<json> doc = parse(Format::kKeyValue, "a=1\n\n----------\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(doc.error().message, "key-value: line 3 has neither '=' nor ':'");
}

TEST(KeyValueParserTest, EmptyKeyIsAnError) {
  kiln::Result<json> doc = parse(Format::kKeyValue, "=1\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message, "key-value: line 1 has an empty key");
}

}  // namespace
}  // namespace kiln::parsers
