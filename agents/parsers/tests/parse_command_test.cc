#include <gtest/gtest.h>

#include <sstream>

#include "agents/parsers/parsers.h"
#include "agents/parsers/tests/testdata_util.h"

namespace kiln::parsers {
namespace {

struct CommandRun {
  int code;
  std::string out;
  std::string err;
};

CommandRun runCommand(const std::vector<std::string>& args, const std::string& stdinText = "") {
  std::istringstream in(stdinText);
  std::ostringstream out;
  std::ostringstream err;
  int code = runParseCommand(args, in, out, err);
  return {code, out.str(), err.str()};
}

TEST(ParseCommandTest, ParsesStdinAndPrintsJson) {
  CommandRun r = runCommand({"key-value"}, "a=1\nb: two\n");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), (nlohmann::json{{"a", 1}, {"b", "two"}}));
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_TRUE(r.err.empty());
}

TEST(ParseCommandTest, ParsesFile) {
  CommandRun r = runCommand({"nvidia-smi-xml", testdataPath("nvidia_smi_a100_470.xml")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["driver_version"], "470.199.02");
}

TEST(ParseCommandTest, DashMeansStdin) {
  CommandRun r = runCommand({"json", "-"}, "[1]");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::array({1}));
}

TEST(ParseCommandTest, UnknownFormatExitsTwo) {
  CommandRun r = runCommand({"yaml"}, "a: 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("unknown parse format \"yaml\""), std::string::npos) << r.err;
}

TEST(ParseCommandTest, UnreadableOutputExitsTwoWithTheParserMessage) {
  CommandRun r = runCommand({"dcgmi-diag-json"}, R"({"something": "else"})");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("dcgmi diag JSON: no \"DCGM Diagnostic\""), std::string::npos) << r.err;
}

TEST(ParseCommandTest, MissingFileExitsTwo) {
  CommandRun r = runCommand({"json", testdataPath("no-such-file.json")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
}

TEST(ParseCommandTest, DirectoryIsNotReadable) {
  CommandRun r = runCommand({"json", KILN_PARSERS_TESTDATA});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
}

TEST(ParseCommandTest, MissingFormatPrintsUsageAndExitsTwo) {
  CommandRun r = runCommand({});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("usage: kiln-agent parse FORMAT [FILE]"), std::string::npos);
}

TEST(ParseCommandTest, HelpExitsZero) {
  CommandRun r = runCommand({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("dcgmi-nvlink-json"), std::string::npos);
}

}  // namespace
}  // namespace kiln::parsers
