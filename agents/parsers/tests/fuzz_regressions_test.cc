// Inputs that tests/fuzz found crashing a parser, each kept as a test beside its regression
// input in tests/fuzz/corpus/.

#include <gtest/gtest.h>

#include "agents/parsers/parsers.h"

namespace kiln::parsers {
namespace {

using nlohmann::json;

// fuzz_json: a number past a double's range made nlohmann throw out_of_range, which the parser
// did not catch (only parse_error): `kiln-agent parse json` aborted, and so would the agent on
// a step whose tool printed such a number.
TEST(ParserFuzzRegressionTest, NumberOverflowIsAnErrorNotAnException) {
  for (Format f : {Format::kJson, Format::kDcgmDiagJson, Format::kDcgmNvlinkJson}) {
    kiln::Result<json> doc = parse(f, f == Format::kJson ? "1111111111111e1111" : R"({"x": 1e999})");
    ASSERT_FALSE(doc.ok()) << formatName(f);
    EXPECT_EQ(doc.error().code, ErrorCode::kInvalidContent);
    EXPECT_NE(doc.error().message.find("number overflow"), std::string::npos) << doc.error().message;
  }
}

// Counters near int64's end summed into `totals` overflowed (undefined behaviour); negative or
// out-of-range counters are not readings (null), and totals stop at the largest int64.
TEST(ParserFuzzRegressionTest, NvlinkTotalsNeverOverflow) {
  const std::string doc = R"({"header": ["NVLINK Error Counts", "GPU 0"], "body": {
      "Link 0": {"children": {"CRC FLIT Error": {"value": "9223372036854775807"}, "Replay Error": {"value": "-4"}}},
      "Link 1": {"children": {"CRC FLIT Error": {"value": "9223372036854775807"}, "Replay Error": {"value": "18446744073709551615"}}}}})";
  kiln::Result<json> out = parse(Format::kDcgmNvlinkJson, doc);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ((*out)["totals"]["crc_flit"], std::numeric_limits<std::int64_t>::max());
  EXPECT_TRUE((*out)["gpus"][0]["links"][0]["replay"].is_null());
  EXPECT_TRUE((*out)["gpus"][0]["links"][1]["replay"].is_null());
  EXPECT_EQ((*out)["totals"]["replay"], 0);
}

}  // namespace
}  // namespace kiln::parsers
