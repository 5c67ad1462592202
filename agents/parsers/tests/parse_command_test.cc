#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <streambuf>

#include "agents/parsers/parsers.h"
#include "agents/parsers/tests/testdata_util.h"
#include "common/agent_protocol.h"

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

// The formats a workflow may name (the protocol's list, which the loader checks steps against)
// are exactly the ones the agent parses.
TEST(ParseCommandTest, TheAgentParsesEveryFormatTheProtocolNamesAndNoOther) {
  std::vector<std::string> ours;
  for (auto name : formatNames()) ours.emplace_back(name);
  std::vector<std::string> protocol = protocol::parseFormatNames();
  std::sort(ours.begin(), ours.end());
  std::sort(protocol.begin(), protocol.end());
  EXPECT_EQ(ours, protocol);
  for (const auto& name : protocol::parseFormatNames()) EXPECT_TRUE(formatFromName(name).ok()) << name;
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

// An input stream that yields `size` bytes of `fill` without holding them, and counts what was
// read from it: the command must stop reading just past the bound.
class GeneratedBuf : public std::streambuf {
 public:
  GeneratedBuf(std::size_t size, char fill) : left_(size), chunk_(64 * 1024, fill) {}
  std::size_t served() const { return served_; }

 protected:
  int_type underflow() override {
    if (left_ == 0) return traits_type::eof();
    std::size_t n = std::min(left_, chunk_.size());
    left_ -= n;
    served_ += n;
    setg(chunk_.data(), chunk_.data(), chunk_.data() + n);
    return traits_type::to_int_type(chunk_[0]);
  }

 private:
  std::size_t left_;
  std::size_t served_ = 0;
  std::string chunk_;
};

CommandRun runOnStream(const std::vector<std::string>& args, std::istream& in) {
  std::ostringstream out;
  std::ostringstream err;
  int code = runParseCommand(args, in, out, err);
  return {code, out.str(), err.str()};
}

void expectOneLineError(const CommandRun& r, const std::string& part) {
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_EQ(r.err.rfind("kiln-agent parse: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
}

TEST(ParseCommandTest, FiftyMegabyteStdinIsRefusedAfterReadingJustPastTheBound) {
  for (const char* format : {"nvidia-smi-xml", "dcgmi-diag-json", "json", "key-value"}) {
    GeneratedBuf buf(50u << 20, '[');
    std::istream in(&buf);
    CommandRun r = runOnStream({format}, in);
    expectOneLineError(r, "input is larger than 16 MiB (16777216 bytes)");
    EXPECT_LE(buf.served(), kMaxInputBytes + 64 * 1024) << format;
  }
}

TEST(ParseCommandTest, FiftyMegabyteFileIsRefused) {
  std::string path = ::testing::TempDir() + "kiln_parse_50mb.xml";
  {
    std::ofstream file(path, std::ios::binary);
    std::string chunk(1 << 20, ' ');
    file << "<nvidia_smi_log>";
    for (int i = 0; i < 50; ++i) file << chunk;
  }
  CommandRun r = runCommand({"nvidia-smi-xml", path});
  expectOneLineError(r, "input is larger than 16 MiB");
  std::remove(path.c_str());
}

TEST(ParseCommandTest, InputOfExactlyTheBoundIsParsed) {
  std::string text = "{\"pad\": \"" + std::string(kMaxInputBytes - 12, 'x') + "\"}";
  ASSERT_EQ(text.size(), kMaxInputBytes - 1);
  text += "\n";
  CommandRun r = runCommand({"json"}, text);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(parse(Format::kJson, text + " ").error().message.find("larger than 16 MiB") != std::string::npos);
}

TEST(ParseCommandTest, EmptyAndBlankInputIsAnErrorForEveryFormat) {
  for (std::string_view format : formatNames()) {
    for (const char* text : {"", " \n\t\n"}) {
      CommandRun r = runCommand({std::string(format)}, text);
      expectOneLineError(r, "the output is empty");
    }
  }
}

TEST(ParseCommandTest, TruncatedAndCorruptInputIsAOneLineError) {
  std::string xml = readTestdata("nvidia_smi_gb300_580_na.xml");
  expectOneLineError(runCommand({"nvidia-smi-xml"}, xml.substr(0, xml.size() / 2)), "nvidia-smi XML: line ");
  std::string diag = readTestdata("dcgm4_diag_r3_gb200_multi_gpu_errors.json");
  expectOneLineError(runCommand({"dcgmi-diag-json"}, diag.substr(0, diag.size() / 2)), "dcgmi diag JSON: line ");
  std::string corrupt = diag;
  for (std::size_t i = 100; i < corrupt.size(); i += 97) corrupt[i] = static_cast<char>(0xC3 + i % 7);
  expectOneLineError(runCommand({"dcgmi-diag-json"}, corrupt), "dcgmi diag JSON: ");
  expectOneLineError(runCommand({"json"}, "{\"a\":\n\n[1,\n"), "JSON: line ");
  // A message quoting the input keeps to one line and valid UTF-8.
  CommandRun r = runCommand({"key-value"}, "ok=1\nbad line \xff\xfe\n");
  expectOneLineError(r, "key-value: line 2");
}

TEST(ParseCommandTest, EntityBombIsRefusedQuickly) {
  std::string bomb = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n";
  for (int i = 1; i <= 9; ++i) {
    bomb += " <!ENTITY lol" + std::to_string(i) + " \"";
    for (int k = 0; k < 10; ++k) bomb += "&lol" + (i == 1 ? std::string() : std::to_string(i - 1)) + ";";
    bomb += "\">\n";
  }
  bomb += "]>\n<nvidia_smi_log><driver_version>&lol9;</driver_version></nvidia_smi_log>\n";
  expectOneLineError(runCommand({"nvidia-smi-xml"}, bomb), "DOCTYPE with an internal subset");
}

TEST(ParseCommandTest, DeepNestingUpToTheSizeBoundIsRefusedWithoutCrashing) {
  std::size_t n = kMaxInputBytes / 2;
  expectOneLineError(runCommand({"json"}, std::string(n, '[') + std::string(n, ']')),
                     "JSON: line 1 column 129: nested more than 128 levels deep");
  expectOneLineError(runCommand({"dcgmi-nvlink-json"}, std::string(n, '{')), "nested more than 128 levels deep");
  // XML as deep as the tag bound allows reaches the depth check; deeper still is refused by
  // the tag count before any DOM is built.
  auto nested = [](std::size_t depth) {
    std::string xml = "<nvidia_smi_log><driver_version>1</driver_version>";
    for (std::size_t i = 0; i < depth; ++i) xml += "<a>";
    for (std::size_t i = 0; i < depth; ++i) xml += "</a>";
    return xml + "</nvidia_smi_log>";
  };
  expectOneLineError(runCommand({"nvidia-smi-xml"}, nested(250000)), "deep, more than the limit of 128");
  std::string huge = nested((kMaxInputBytes - 100) / 7);
  ASSERT_LE(huge.size(), kMaxInputBytes);
  expectOneLineError(runCommand({"nvidia-smi-xml"}, huge), "tags, more than the limit of 524288");
}

TEST(ParseCommandTest, JsonWithMoreValuesThanTheBoundIsRefusedBeforeBuildingIt) {
  std::string many = "[0";
  for (std::size_t i = 0; i < kMaxJsonValues; ++i) many += ",0";
  many += "]";
  expectOneLineError(runCommand({"json"}, many), "more than 262144 values");
  // Counted over all the documents of one dcgmi output.
  std::string docs;
  for (std::size_t i = 0; i < kMaxJsonValues / 4 + 10; ++i) docs += "{\"header\": [\"GPU 1\"], \"a\": 1}\n";
  expectOneLineError(runCommand({"dcgmi-nvlink-json"}, docs), "more than 262144 values");
  std::string lines;
  for (std::size_t i = 0; i <= kMaxJsonValues; ++i) lines += "k" + std::to_string(i) + "=1\n";
  expectOneLineError(runCommand({"key-value"}, lines), "line 262145: more than 262144 keys");
  // A real-sized output is far below it.
  EXPECT_EQ(runCommand({"dcgmi-diag-json", testdataPath("dcgm4_diag_r3_gb200_multi_gpu_errors.json")}).code, 0);
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
