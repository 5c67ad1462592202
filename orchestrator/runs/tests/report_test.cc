// An agent's report decoded at the edge (orchestrator/runs/report.h). Before the decoder, a
// field of the wrong type (an "exit_code" string) threw nlohmann's type_error on kilnd's report
// thread, outside any request's catch.

#include "orchestrator/runs/report.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/agent_protocol.h"

namespace kiln::runs {
namespace {

using nlohmann::json;

TEST(StepReportTest, DecodesEveryProtocolField) {
  auto r = decodeStepReport(json::parse(R"({"lease": 3, "ready": true, "started": true, "spawn_error": "",
      "exit_code": 2, "signal": 9, "timed_out": true, "cancelled": false, "duration_ms": 1234,
      "stdout_tail": "out", "stderr_tail": "err", "parsed": {"gpus": []}, "parse_error": "",
      "agent_note": "restarted", "boot_id": "b", "inventory": null, "stdout_bytes": 3})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->lease, 3);
  EXPECT_TRUE(r->ready);
  EXPECT_EQ(r->result.exit_code, 2);
  EXPECT_EQ(r->result.signal, 9);
  EXPECT_TRUE(r->result.timed_out);
  EXPECT_EQ(r->result.duration_ms, 1234);
  EXPECT_EQ(r->result.stdout_tail, "out");
  EXPECT_EQ(r->result.parsed, json::parse(R"({"gpus": []})"));
  EXPECT_EQ(r->result.note, "restarted");
}

// The agents' encoding (common/agent_protocol.h, golden file report_run.json) is what this
// decoder reads: the same field names, one spelling.
TEST(StepReportTest, DecodesTheAgentsGoldenReportAndWhatTheEncoderWrites) {
  std::ifstream in(std::string(KILN_PROTOCOL_TESTDATA) + "/report_run.json");
  ASSERT_TRUE(in) << "report_run.json";
  const json golden = json::parse(in);
  auto r = decodeStepReport(golden);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->lease, 3);
  EXPECT_TRUE(r->result.started);
  EXPECT_EQ(r->result.exit_code, 0);
  EXPECT_EQ(r->result.duration_ms, 912345);
  EXPECT_EQ(r->result.stdout_tail, "PercentComplete: 100\nOverall Time Taken: 0:15:12\n");
  EXPECT_EQ(r->result.parsed, json::parse(R"({"gpus": 4, "healthy": true})"));

  protocol::StepReport sent;
  sent.lease = 9;
  sent.spawn_error = "no such file";
  sent.agent_note = "restarted";
  auto back = decodeStepReport(protocol::toJson(sent));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->lease, 9);
  EXPECT_FALSE(back->result.started);
  EXPECT_EQ(back->result.spawn_error, "no such file");
  EXPECT_EQ(back->result.exit_code, -1);
  EXPECT_EQ(back->result.note, "restarted");
}

TEST(StepReportTest, AbsentAndNullFieldsTakeTheirDefaults) {
  auto r = decodeStepReport(json::parse(R"({"lease": 1, "exit_code": null, "parsed": null})"));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_FALSE(r->ready);
  EXPECT_TRUE(r->result.started);
  EXPECT_EQ(r->result.exit_code, -1);
  EXPECT_TRUE(r->result.parsed.is_null());
}

TEST(StepReportTest, EveryBadFieldIsNamed) {
  auto r = decodeStepReport(json::parse(R"({"lease": 1, "exit_code": "0", "ready": "yes", "signal": 300,
      "duration_ms": -5, "stdout_tail": 7, "timed_out": 1.5})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidContent);
  std::vector<std::string> paths;
  for (const auto& f : r.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"ready", "exit_code", "signal", "timed_out", "duration_ms", "stdout_tail"}));
  EXPECT_EQ(r.error().message, "invalid report: ready: expected true or false");
  EXPECT_EQ(r.error().details.count("field"), 0u) << "details.field is the alias for exactly one bad field";
}

TEST(StepReportTest, ABodyThatIsNoObjectIsNamedToo) {
  auto r = decodeStepReport(json::array({1}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidContent);
  ASSERT_EQ(r.error().fields.size(), 1u);
  EXPECT_EQ(r.error().fields[0].path, "");
}

TEST(StepReportTest, LeaseIsRequiredAndInRange) {
  EXPECT_EQ(decodeStepReport(json::object()).error().details.at("field"), "lease");
  EXPECT_EQ(decodeStepReport(json::parse(R"({"lease": "1"})")).error().details.at("field"), "lease");
  EXPECT_EQ(decodeStepReport(json::parse(R"({"lease": 1.0})")).error().details.at("field"), "lease");
  EXPECT_EQ(decodeStepReport(json::parse(R"({"lease": 4294967296})")).error().details.at("field"), "lease");
  EXPECT_EQ(decodeStepReport(json::parse(R"({"lease": 18446744073709551615})")).error().details.at("field"), "lease");
  EXPECT_EQ(decodeStepReport(json::parse(R"({"lease": -1})")).error().details.at("field"), "lease");
  EXPECT_EQ(decodeStepReport(json::array()).error().message, "expected a JSON object");
}

TEST(StepReportTest, StoredResultsReadLeniently) {
  const StepResult r = storedStepResult(json::parse(R"({"exit_code": "x", "stdout_tail": "o", "parsed": [1]})"),
                                        /*tails=*/false);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.stdout_tail, "");
  EXPECT_EQ(r.parsed, json::parse("[1]"));
}

}  // namespace
}  // namespace kiln::runs
