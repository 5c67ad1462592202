// Documents from outside: YAML and JSON with the bounds that keep a hostile body from
// exhausting the stack (recursive parsers and copies) or memory (alias expansion).

#include "common/yaml_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kiln {
namespace {

TEST(YamlJsonTest, ConvertsScalarsByTheCoreSchema) {
  auto doc = yamlToJson("a: 1\nb: 1.5\nc: true\nd: ~\ne: '2'\nf: [x, 2]\n");
  ASSERT_TRUE(doc.ok()) << doc.error();
  EXPECT_EQ(*doc, nlohmann::json::parse(R"({"a":1,"b":1.5,"c":true,"d":null,"e":"2","f":["x",2]})"));
}

TEST(YamlJsonTest, RefusesFlowNestingDeeperThanTheBound) {
  const std::string deep(100000, '[');
  auto doc = yamlToJson(deep);
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(doc.error().message.find("nested deeper than 256"), std::string::npos) << doc.error();
}

TEST(YamlJsonTest, RefusesBlockSequencesNestedOnOneLine) {
  std::string deep;
  for (int i = 0; i < 50000; ++i) deep += "- ";
  deep += "x\n";
  auto doc = yamlToJson(deep);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message.find("nested deeper"), std::string::npos) << doc.error();
}

TEST(YamlJsonTest, AcceptsNestingUpToTheBound) {
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  auto doc = yamlToJson(ok);
  ASSERT_TRUE(doc.ok()) << doc.error();
  EXPECT_TRUE(doc->is_array());
}

TEST(YamlJsonTest, BracketsInQuotedScalarsAndCommentsDoNotCount) {
  const std::string text = "a: '" + std::string(1000, '[') + "'\nb: \"" + std::string(1000, '{') + "\"  # " +
                           std::string(1000, '[') + "\n";
  auto doc = yamlToJson(text);
  ASSERT_TRUE(doc.ok()) << doc.error();
  EXPECT_EQ((*doc)["a"].get<std::string>().size(), 1000u);
}

TEST(YamlJsonTest, RefusesABillionLaughs) {
  // Nine levels of ten aliases each: 10^9 values from ~300 bytes.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  auto doc = yamlToJson(text);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message.find("aliases"), std::string::npos) << doc.error();
}

TEST(YamlJsonTest, AliasesWithinReasonStillWork) {
  auto doc = yamlToJson("base: &b {waves: [1, 2]}\nother: *b\n");
  ASSERT_TRUE(doc.ok()) << doc.error();
  EXPECT_EQ((*doc)["other"]["waves"][1], 2);
}

TEST(YamlJsonTest, JsonNestingIsBounded) {
  auto deep = parseJson(std::string(1 << 20, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("nested deeper than 256"), std::string::npos) << deep.error();
  // Brackets inside strings are text.
  auto text = parseJson("{\"a\": \"" + std::string(5000, '[') + "\\\"[\"}");
  ASSERT_TRUE(text.ok()) << text.error();
}

TEST(YamlJsonTest, TextThatIsNotUtf8IsRefusedWithItsPosition) {
  auto doc = yamlToJson("name: ok\nlabel: caf\xe9\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message, "YAML error at line 2, column 11: not UTF-8 text (byte 0xE9)");
  EXPECT_TRUE(yamlToJson("label: caf\xc3\xa9\n").ok());
  // Overlong encodings and surrogates are not UTF-8 either.
  EXPECT_TRUE(findInvalidUtf8("\xc0\xaf").has_value());
  EXPECT_TRUE(findInvalidUtf8("\xed\xa0\x80").has_value());
  EXPECT_TRUE(findInvalidUtf8("\xf4\x90\x80\x80").has_value());
  EXPECT_FALSE(findInvalidUtf8("\xf0\x9f\x94\xa5 \xe2\x82\xac").has_value());
  const auto truncated = findInvalidUtf8("ab\n\xe2\x82");
  ASSERT_TRUE(truncated.has_value());
  EXPECT_EQ(truncated->line, 2u);
  EXPECT_EQ(truncated->column, 1u);
}

TEST(YamlJsonTest, CheckYamlNestingIsWhatTheLoadersCall) {
  EXPECT_TRUE(checkYamlNesting("steps:\n  - id: a\n    run: [x]\n").ok());
  EXPECT_FALSE(checkYamlNesting(std::string(300, '{')).ok());
}

}  // namespace
}  // namespace kiln
