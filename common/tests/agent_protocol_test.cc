// The agent protocol's one encoder and decoder (common/agent_protocol.h) against golden files:
// what kilnd sends is what kiln-agent and kiln-vfleet read, field for field.

#include "common/agent_protocol.h"

#include <algorithm>
#include <fstream>
#include <functional>
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
  for (const char* file : {"assignment_run.json", "assignment_reboot.json", "assignment_artifacts.json"}) {
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
  EXPECT_EQ(run->parse, "nvidia-smi-xml");
  EXPECT_FALSE(run->isReboot());
  auto reboot = assignmentFromJson(golden("assignment_reboot.json"));
  EXPECT_TRUE(reboot->isReboot());
  EXPECT_TRUE(reboot->inventory_after);
  EXPECT_EQ(reboot->timeout_ms, 900000);
}

TEST(AgentProtocolTest, AnAssignmentCarriesItsArtifactsAndAStageNeedsNoArgv) {
  auto a = assignmentFromJson(golden("assignment_artifacts.json"));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_EQ(a->artifacts.size(), 1u);
  EXPECT_EQ(a->artifacts[0].url, "https://mirror.b01/fw/fw-ConnectX7-rel-28_45_1200.bin");
  EXPECT_EQ(a->argv[3], "kiln-artifact:sha256:" + a->artifacts[0].sha256);
  EXPECT_NE(a->artifacts[0].signature.find("BEGIN PGP SIGNATURE"), std::string::npos);

  json stage = golden("assignment_artifacts.json");
  stage["type"] = "stage";
  stage["argv"] = json::array();
  auto s = assignmentFromJson(stage);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(s->isStage());
  stage.erase("artifacts");
  EXPECT_FALSE(assignmentFromJson(stage).ok()) << "a stage without artifacts has nothing to do";

  for (const json& bad_artifact : {json{{"url", ""}, {"sha256", std::string(64, 'a')}},
                                   json{{"url", "https://m/x"}, {"sha256", "abc"}},
                                   json{{"url", "https://m/x"}, {"sha256", std::string(64, 'a')}, {"signature", 7}},
                                   json("https://m/x")}) {
    json doc = golden("assignment_artifacts.json");
    doc["artifacts"] = json::array({bad_artifact});
    auto r = assignmentFromJson(doc);
    ASSERT_FALSE(r.ok()) << bad_artifact.dump();
    EXPECT_NE(r.error().message.find("artifact 0"), std::string::npos) << r.error().message;
  }
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

// Issue 35: a clean, parsed run sends only parsed_output_cap bytes of its stdout.
TEST(AgentProtocolTest, ParsedOutputCapIsReadBoundedAndSentOnlyWhenSet) {
  auto a = assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"parsed_output_cap", 2048}});
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->parsed_output_cap, std::optional<std::size_t>(2048));
  EXPECT_EQ(toJson(*a)["parsed_output_cap"], 2048);
  EXPECT_EQ(*assignmentFromJson(toJson(*a)), *a);
  auto none = assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"parsed_output_cap", nullptr}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->parsed_output_cap.has_value());
  EXPECT_FALSE(toJson(*none).contains("parsed_output_cap"));
  // Never more than the whole tail.
  auto over = assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"output_cap", 100}, {"parsed_output_cap", 5000}});
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->parsed_output_cap, std::optional<std::size_t>(100));
  for (const json& bad : {json(-1), json("2048"), json(1.5)}) {
    auto r = assignmentFromJson({{"id", "a"}, {"argv", {"x"}}, {"parsed_output_cap", bad}});
    ASSERT_FALSE(r.ok()) << bad.dump();
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidContent);
  }
}

TEST(AgentProtocolTest, OnlyACleanParsedRunHasItsStdoutTrimmed) {
  Assignment a;
  a.id = "a";
  a.argv = {"nvidia-smi"};
  a.parsed_output_cap = 4;
  StepReport clean;
  clean.started = true;
  clean.exit_code = 0;
  clean.stdout_tail = "0123456789";
  clean.stdout_bytes = 10;
  clean.parsed = json{{"gpu_count", 4}};

  StepReport r = clean;
  trimParsedStdout(a, r);
  EXPECT_EQ(r.stdout_tail, "6789");
  EXPECT_EQ(r.stdout_bytes, 10) << "still the whole output's size";

  // Not at the start of a character: "é" is two bytes; a cut inside it starts after it.
  r = clean;
  r.stdout_tail = std::string("abcd\xC3\xA9") + "fgh";  // a b c d é f g h
  trimParsedStdout(a, r);
  EXPECT_EQ(r.stdout_tail, "fgh");

  // Whatever did not end cleanly and parse keeps its tail.
  std::vector<std::pair<const char*, std::function<void(StepReport&)>>> kept = {
      {"exit 1", [](StepReport& s) { s.exit_code = 1; }},
      {"signal", [](StepReport& s) { s.signal = 9; }},
      {"timed out", [](StepReport& s) { s.timed_out = true; }},
      {"cancelled", [](StepReport& s) { s.cancelled = true; }},
      {"parse error", [](StepReport& s) { s.parse_error = "bad XML"; }},
      {"nothing parsed", [](StepReport& s) { s.parsed = nullptr; }},
      {"not started", [](StepReport& s) { s.started = false; }},
  };
  for (const auto& [why, change] : kept) {
    r = clean;
    change(r);
    trimParsedStdout(a, r);
    EXPECT_EQ(r.stdout_tail, "0123456789") << why;
  }
  // Without the cap, nothing changes.
  a.parsed_output_cap.reset();
  r = clean;
  trimParsedStdout(a, r);
  EXPECT_EQ(r.stdout_tail, "0123456789");
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

// ---- registration, its answer, the report's answer, parse formats ----

TEST(AgentProtocolTest, ARegistrationIsWhatBothAgentsSendAndKilndReads) {
  const json doc = golden("registration.json");
  Registration r{"prn-b01-p0001-h07", "8c1d2f0a-4b7e-4e59-9a21-5d3c0b6f7e18", "0.9.0",
                 json{{"driver", "580.65.06"}, {"gpu_vbios", "97.00.82.00.5F"}}};
  EXPECT_EQ(toJson(r), doc);  // the agents' encoding is the golden file
  auto read = registrationFromJson(doc);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(*read, r);
  // An agent that has no inventory yet sends an empty object, which kilnd takes.
  Registration bare{"h1", "", "", json::object()};
  EXPECT_EQ(*registrationFromJson(toJson(bare)), bare);
}

// Before the codec, a boot_id or agent_version of another type threw nlohmann's type_error in
// the handler (the request's safety net answered 422 with the library's message).
TEST(AgentProtocolTest, RegistrationChecksTypes) {
  auto ok = registrationFromJson(json::parse(R"({"host": "h1", "boot_id": "b", "inventory": {"driver": "575"}})"));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->boot_id, "b");
  EXPECT_EQ(ok->inventory["driver"], "575");
  auto bad = registrationFromJson(json::parse(R"({"host": "h1", "boot_id": 5, "inventory": [1]})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidContent);
  ASSERT_EQ(bad.error().fields.size(), 2u);
  EXPECT_EQ(bad.error().fields[0].path, "boot_id");
  EXPECT_EQ(bad.error().fields[1].path, "inventory");
  EXPECT_EQ(registrationFromJson(json::object()).error().details.at("field"), "host");
}

TEST(AgentProtocolTest, RegistrationListsEveryBadFieldAndRefusesUnknownOnes) {
  auto bad = registrationFromJson(json::parse(R"({"hostname": "h1", "boot_id": 5, "agent_version": "1"})"));
  ASSERT_FALSE(bad.ok());
  std::vector<std::string> paths;
  for (const auto& f : bad.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"hostname", "host", "boot_id"}));
  EXPECT_EQ(bad.error().fields[0].message, "unknown field");
  auto unknown = registrationFromJson(json::parse(R"({"host": "h1", "colour": "blue"})"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().details.at("field"), "colour");
  EXPECT_EQ(registrationFromJson(json::array()).error().code, ErrorCode::kInvalidContent);
}

TEST(AgentProtocolTest, TheRegistrationAnswerIsWhatKilndSendsAndTheAgentsRead) {
  const json doc = golden("enrolment.json");
  const Enrolment e{"prn-b01-p0001-h07", "kiln_t-41_9f2c4b7d1e8a6f3c0b5d2e7a9c1f4b8d", "t-41"};
  EXPECT_EQ(toJson(e), doc);
  auto read = enrolmentFromBody(doc.dump());
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(*read, e);
  for (const char* bad : {"", "[]", "{}", R"({"token": ""})", R"({"token": 5})", "not json"})
    EXPECT_EQ(enrolmentFromBody(bad).error().code, ErrorCode::kInvalidContent) << bad;
}

TEST(AgentProtocolTest, TheReportAnswerCarriesTheOutcomeAndTheNextStep) {
  const json doc = golden("report_reply.json");
  ReportReply r;
  r.outcome = ReportOutcome::kAccepted;
  r.assignment = doc["assignment"];
  EXPECT_EQ(toJson(r), doc);  // kilnd's encoding
  auto read = reportReplyFromBody(doc.dump());
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read->outcome, ReportOutcome::kAccepted);
  ASSERT_TRUE(read->assignment.has_value());
  // The step inside is an assignment like any other.
  auto next = assignmentFromJson(*read->assignment);
  ASSERT_TRUE(next.ok()) << next.error();
  EXPECT_EQ(next->id, "a-18");
  for (ReportOutcome o : {ReportOutcome::kDuplicate, ReportOutcome::kCancelled}) {
    auto again = reportReplyFromBody(toJson(ReportReply{o, std::nullopt}).dump());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->outcome, o);
    EXPECT_FALSE(again->assignment.has_value());
  }
  EXPECT_FALSE(reportReplyFromBody(R"({"acknowledged": true, "outcome": "stale"})").ok());
  EXPECT_FALSE(reportReplyFromBody(R"({"acknowledged": true, "outcome": 3})").ok());
  auto older = reportReplyFromBody(R"({"acknowledged": true})");  // kilnd before the outcome
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->outcome, ReportOutcome::kAccepted);
  EXPECT_FALSE(reportReplyFromBody("[]").ok());
}

TEST(AgentProtocolTest, TheGoldenAssignmentsNameKnownParseFormats) {
  const auto& names = parseFormatNames();
  EXPECT_EQ(names.size(), 5u);
  for (const char* file : {"assignment_run.json", "assignment_reboot.json", "assignment_minimal.json"}) {
    auto a = assignmentFromJson(golden(file));
    ASSERT_TRUE(a.ok()) << file;
    if (!a->parse.empty()) {
      EXPECT_NE(std::find(names.begin(), names.end(), a->parse), names.end()) << file;
    }
  }
  auto reply = golden("report_reply.json");
  EXPECT_NE(std::find(names.begin(), names.end(), reply["assignment"]["parse"].get<std::string>()), names.end());
}

}  // namespace
}  // namespace kiln::protocol
