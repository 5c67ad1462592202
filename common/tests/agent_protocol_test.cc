// The agent protocol's one encoder and decoder (common/agent_protocol.h) against golden files:
// what kilnd sends is what kiln-agent and kiln-vfleet read, field for field.

#include "common/agent_protocol.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace kiln::protocol {
namespace {

using nlohmann::json;

json golden(const std::string& name) {
  std::ifstream in(std::string(KILN_PROTOCOL_TESTDATA) + "/" + name);
  EXPECT_TRUE(in) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return json::parse(s.str());
}

TEST(AgentProtocolTest, EveryGoldenAssignmentDecodesAndEncodesBackFieldForField) {
  for (const char* file : {"assignment_run.json", "assignment_reboot.json"}) {
    const json doc = golden(file);
    auto a = assignmentFromJson(doc);
    ASSERT_TRUE(a.ok()) << file << ": " << a.error();
    EXPECT_EQ(toJson(*a), doc) << file;  // kilnd's encoding is the golden file
  }
  auto run = assignmentFromJson(golden("assignment_run.json"));
  EXPECT_EQ(run->id, "a-17");
  EXPECT_EQ(run->lease, 3);
  EXPECT_EQ(run->attempt, 2);
  EXPECT_EQ(run->argv, (std::vector<std::string>{"nvidia-smi", "-q", "-x"}));
  EXPECT_EQ(run->parse, "nvidia_smi_xml");
  EXPECT_FALSE(run->isReboot());
  auto reboot = assignmentFromJson(golden("assignment_reboot.json"));
  EXPECT_TRUE(reboot->isReboot());
  EXPECT_TRUE(reboot->inventory_after);
  EXPECT_EQ(reboot->timeout_ms, 900000);
}

TEST(AgentProtocolTest, AMinimalAssignmentTakesTheDefaults) {
  auto a = assignmentFromJson(golden("assignment_minimal.json"));
  ASSERT_TRUE(a.ok()) << a.error();
  Assignment expected;
  expected.id = "a-1";
  expected.argv = {"true"};
  EXPECT_EQ(*a, expected);
  const json full = toJson(*a);
  for (const char* key : {"id", "lease", "run_id", "step_id", "attempt", "type", "argv", "timeout_ms", "kill_grace_ms",
                          "parse", "output_cap", "inventory_after"})
    EXPECT_TRUE(full.contains(key)) << key;
  EXPECT_EQ(full.size(), 12u);
}

TEST(AgentProtocolTest, RefusesWhatNoAgentMayRun) {
  const json bad[] = {
      json::array(),
      {{"argv", {"x"}}},                                              // no id
      {{"id", ""}, {"argv", {"x"}}},                                  // empty id
      {{"id", "a"}, {"argv", json::array()}},                         // empty argv
      {{"id", "a"}, {"argv", {""}}},                                  // empty program
      {{"id", "a"}, {"argv", "nvidia-smi -q"}},                       // a shell string
      {{"id", "a"}, {"argv", {1}}},                                   // not strings
      {{"id", "a"}, {"argv", {"x"}}, {"type", "shell"}},              // unknown type
      {{"id", "a"}, {"argv", {"x"}}, {"timeout_ms", -1}},             // negative
      {{"id", "a"}, {"argv", {"x"}}, {"output_cap", -5}},
      {{"id", "a"}, {"argv", {"x"}}, {"timeout_ms", "30"}},           // wrong type
      {{"id", "a"}, {"argv", {"x"}}, {"attempt", 1.5}},               // not whole
      {{"id", "a"}, {"argv", {"x"}}, {"attempt", 1e12}},              // out of range
  };
  for (const auto& j : bad) {
    auto a = assignmentFromJson(j);
    EXPECT_FALSE(a.ok()) << j.dump();
    if (!a.ok()) {
      EXPECT_EQ(a.error().code, ErrorCode::kInvalidContent) << j.dump();
    }
  }
  auto capped = assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"output_cap", std::int64_t{1} << 40}});
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->output_cap, kMaxOutputCap);
}

TEST(AgentProtocolTest, APollAnswerKeepsTheRawAssignmentAndTheStringCancels) {
  auto p = pollAnswerFromBody(golden("poll_answer.json").dump());
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p->assignment.has_value());
  EXPECT_EQ((*p->assignment)["id"], "a-19");
  EXPECT_EQ(p->cancel, (std::vector<std::string>{"a-9", "a-10"}));
  EXPECT_FALSE(pollAnswerFromBody("[]").ok());
  EXPECT_FALSE(pollAnswerFromBody("not json").ok());
  auto empty = pollAnswerFromBody("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->assignment.has_value());
}

TEST(AgentProtocolTest, AStepReportEncodesEveryFieldAsTheGoldenFile) {
  StepReport r;
  r.lease = 3;
  r.host = "prn-b01-p0001-h07";
  r.started = true;
  r.exit_code = 0;
  r.duration_ms = 912345;
  r.stdout_tail = "PercentComplete: 100\nOverall Time Taken: 0:15:12\n";
  r.stdout_bytes = 2048;
  r.parsed = json{{"gpus", 4}, {"healthy", true}};
  r.boot_id = "8c1d2f0a-4b7e-4e59-9a21-5d3c0b6f7e18";
  r.inventory = json{{"driver", "580.65.06"}, {"gpu_vbios", "97.00.82.00.5F"}};
  EXPECT_EQ(toJson(r), golden("report_run.json"));

  // A step that never started: every field still there, at the protocol's defaults.
  const json none = toJson(StepReport{});
  EXPECT_EQ(none.size(), golden("report_run.json").size());
  EXPECT_EQ(none["exit_code"], -1);
  EXPECT_EQ(none["started"], false);
  EXPECT_TRUE(none["parsed"].is_null());
  EXPECT_TRUE(none["inventory"].is_null());
}

TEST(AgentProtocolTest, PathsPercentEncodeEveryValue) {
  EXPECT_EQ(workPath("prn-b01-p0001-h01", 30, "", ""), "/api/v1/agents/prn-b01-p0001-h01/work?wait=30");
  EXPECT_EQ(workPath("h/1", 5, "boot id", "a 2"), "/api/v1/agents/h%2F1/work?wait=5&boot_id=boot%20id&running=a%202");
  EXPECT_EQ(resultPath("a-17"), "/api/v1/assignments/a-17/result");
  EXPECT_EQ(resultPath("a?x=1"), "/api/v1/assignments/a%3Fx%3D1/result");
  EXPECT_EQ(registerPath(), "/api/v1/agents/register");
  EXPECT_EQ(percentEncode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(percentEncode("\xc3\xbc"), "%C3%BC");
}

TEST(AgentProtocolTest, DumpJsonReplacesInvalidUtf8InsteadOfThrowing) {
  const json j = {{"stdout", std::string("ok \xff\xfe end")}};
  std::string text;
  ASSERT_NO_THROW(text = dumpJson(j));
  EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

}  // namespace
}  // namespace kiln::protocol
