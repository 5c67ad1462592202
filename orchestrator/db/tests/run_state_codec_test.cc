// The run store's documents without a database: a group's state and a step record keep the form
// earlier versions wrote (no migration), older rows stay readable, and a document the store
// cannot read fails its read instead of throwing.

#include "orchestrator/db/run_state_codec.h"

#include <gtest/gtest.h>

#include "orchestrator/workflow/loader.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using runs::GroupState;
using runs::HostStatus;
using runs::StepRecord;
using runs::TimePoint;

const TimePoint kT0 = TimePoint{} + std::chrono::milliseconds(1'765'000'000'000);

// Every field of a state set away from its default (h1), beside a fresh host (h2).
GroupState everyField() {
  GroupState g;
  g.run_id = "r-1";
  g.group = "pod-1";
  g.next_seq = 7;
  g.stopping = true;
  runs::HostRun h;
  h.host = "h1";
  h.fields = {{"host.id", "h1"}, {"pod.id", "pod-1"}};
  h.status = HostStatus::kRunning;
  h.pass = 2;
  h.step_index = 3;
  h.attempt = 2;
  h.not_before = kT0 + std::chrono::seconds(90);
  h.assignment_id = "r-1/pod-1/6";
  h.dispatched_at = kT0;
  h.parsed["before"] = json{{"gpus", 1}};
  h.soft_failed = true;
  h.failures = {"ready: exit code 1"};
  h.warnings = {"stress: pod-wide step failed on h2"};
  runs::RetestState rt;
  rt.step_index = 3;
  rt.from_index = 1;
  rt.rounds_left = 1;
  rt.round = 2;
  rt.elements["gpu 2 link 7"] = {false, true};
  h.retest = rt;
  h.history.push_back(
      StepRecord{"before", 2, 1, 0, "passed", "", 0, 1200, kT0, "r-1/pod-1/5",
                 json::array({{{"name", "crc"}, {"passed", true}, {"skipped", false}, {"message", ""}}})});
  h.leader_outcomes[runs::leaderKey("stress", 1)] = {"failed", "exit code 3"};
  g.hosts.push_back(h);
  runs::HostRun fresh;
  fresh.host = "h2";
  g.hosts.push_back(fresh);
  return g;
}

// As the engine's own codec wrote them before it moved here (run_groups.state with the records
// embedded, and one run_step_records.record).
constexpr const char* kStoredRecord =
    R"({"assignment":"r-1/pod-1/5","attempt":1,"checks":[{"message":"","name":"crc","passed":true,"skipped":false}],)"
    R"("duration_ms":1200,"exit_code":0,"finished_at_ms":1765000000000,"message":"","outcome":"passed","pass":2,)"
    R"("retest_round":0,"step":"before"})";
const std::string kStoredGroup =
    R"({"cancelled":false,"group":"pod-1","hosts":[{"assignment":"r-1/pod-1/6","attempt":2,)"
    R"("dispatched_at_ms":1765000000000,"failures":["ready: exit code 1"],"fields":{"host.id":"h1","pod.id":"pod-1"},)"
    R"("history":[)" +
    std::string(kStoredRecord) +
    R"(],"host":"h1","leader_outcomes":{"stress#1":{"message":"exit code 3","outcome":"failed"}},)"
    R"("not_before_ms":1765000090000,"parsed":{"before":{"gpus":1}},"pass":2,"retest":{"elements":{"gpu 2 link 7":)"
    R"([false,true]},"from_index":1,"round":2,"rounds_left":1,"step_index":3},"soft_failed":true,"status":"running",)"
    R"("step_index":3,"warnings":["stress: pod-wide step failed on h2"]},{"assignment":"","attempt":1,)"
    R"("dispatched_at_ms":0,"failures":[],"fields":{},"history":[],"host":"h2","leader_outcomes":{},)"
    R"("not_before_ms":null,"parsed":{},"pass":1,"soft_failed":false,"status":"pending","step_index":0,"warnings":[]}],)"
    R"("next_seq":7,"run_id":"r-1","stopping":true})";

TEST(RunStateCodecTest, WritesTheFormatEarlierVersionsWrote) {
  const GroupState g = everyField();
  EXPECT_EQ(storedRecord(g.hosts[0].history[0]).dump(), kStoredRecord);
  EXPECT_EQ(storedGroup(g, Records::kWith).dump(), kStoredGroup);
  json without = json::parse(kStoredGroup);
  without["hosts"][0]["history"] = json::array();
  EXPECT_EQ(storedGroup(g, Records::kWithout), without) << "the records go to the step log, nothing else changes";
}

TEST(RunStateCodecTest, ReadsBackEveryField) {
  const GroupState g = everyField();
  auto with = groupFromStored(storedGroup(g, Records::kWith));
  ASSERT_TRUE(with.ok()) << with.error();
  EXPECT_TRUE(*with == g);
  auto record = recordFromStored(json::parse(kStoredRecord));
  ASSERT_TRUE(record.ok()) << record.error();
  EXPECT_TRUE(*record == g.hosts[0].history[0]);
  // Without its records the state keeps what followers share of a leader step.
  auto without = groupFromStored(storedGroup(g, Records::kWithout));
  ASSERT_TRUE(without.ok()) << without.error();
  GroupState expected = g;
  expected.hosts[0].history.clear();
  EXPECT_TRUE(*without == expected);
  EXPECT_EQ(without->hosts[0].leader_outcomes.at(runs::leaderKey("stress", 1)).outcome, "failed");
}

// Issue 35: a host held at the scheduler's drain gate keeps why across a restart; a state
// without the field (every state before the gate) reads as not held, and is written as before.
TEST(RunStateCodecTest, AHostHeldAtTheDrainGateKeepsWhyAndOthersAreWrittenAsBefore) {
  GroupState g = everyField();
  g.hosts[1].waiting_for = "slurm node n2 is MIXED+DRAIN (job 4 running): waiting for its jobs to leave";
  const json stored = storedGroup(g, Records::kWith);
  EXPECT_EQ(stored["hosts"][1]["waiting_for"], g.hosts[1].waiting_for);
  EXPECT_FALSE(stored["hosts"][0].contains("waiting_for"));
  auto back = groupFromStored(stored);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->hosts[1].waiting_for, g.hosts[1].waiting_for);
  EXPECT_TRUE(back->hosts[0].waiting_for.empty());
}

// Issue 32: a reboot under recovery keeps its power cycles and the cycle still out across a
// restart of kilnd; a host with none is written as before.
TEST(RunStateCodecTest, ARebootUnderRecoveryKeepsItsPowerCycleAcrossARestart) {
  GroupState g = everyField();
  g.hosts[1].power_cycles = 2;
  g.hosts[1].recovery_assignment = "r-1:h2:9@oob-b01";
  g.hosts[1].recovery_step = 3;
  const json stored = storedGroup(g, Records::kWith);
  EXPECT_FALSE(stored["hosts"][0].contains("power_cycles"));
  EXPECT_FALSE(stored["hosts"][0].contains("recovery_assignment"));
  auto back = groupFromStored(stored);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->hosts[1].power_cycles, 2);
  EXPECT_EQ(back->hosts[1].recovery_assignment, "r-1:h2:9@oob-b01");
  EXPECT_EQ(back->hosts[1].recovery_step, 3u);
  EXPECT_EQ(back->hosts[0].power_cycles, 0);
}

// A state written before the step log embeds every record and no leader outcomes (nor, older
// still, `stopping`): it loads with its records pending (the store's next write moves them) and
// the outcomes taken from the initial run's records, so a follower still behind a leader step
// shares what the leader recorded.
TEST(RunStateCodecTest, AStateWithEmbeddedRecordsLoadsThemAsPending) {
  json old = storedGroup(everyField(), Records::kWith);
  old.erase("stopping");
  for (auto& h : old["hosts"]) h.erase("leader_outcomes");
  old["hosts"][0]["history"].push_back(
      storedRecord(StepRecord{"stress", 1, 1, 0, "passed", "", 0, 5, kT0, "a-9", json::array()}));
  old["hosts"][0]["history"].push_back(
      storedRecord(StepRecord{"check", 1, 1, 1, "failed", "retest", 1, 5, kT0, "a-10", json::array()}));
  auto back = groupFromStored(old);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_FALSE(back->stopping);
  ASSERT_EQ(back->hosts[0].history.size(), 3u);
  EXPECT_EQ(back->hosts[0].history[0].step_id, "before");
  EXPECT_EQ(back->hosts[0].history[1].assignment_id, "a-9");
  const auto& outcomes = back->hosts[0].leader_outcomes;
  ASSERT_EQ(outcomes.count(runs::leaderKey("stress", 1)), 1u);
  EXPECT_EQ(outcomes.at(runs::leaderKey("stress", 1)).outcome, "passed");
  EXPECT_EQ(outcomes.count(runs::leaderKey("before", 2)), 1u);
  EXPECT_EQ(outcomes.count(runs::leaderKey("check", 1)), 0u) << "a retest's record is no leader outcome";
  EXPECT_TRUE(back->hosts[1].history.empty());
  EXPECT_TRUE(back->hosts[1].leader_outcomes.empty());
}

TEST(RunStateCodecTest, AnUnreadableDocumentFailsItsRead) {
  json old = storedGroup(everyField(), Records::kWith);
  old["hosts"][0]["history"][0].erase("outcome");
  auto bad_record = groupFromStored(old);
  ASSERT_FALSE(bad_record.ok());
  EXPECT_EQ(bad_record.error().code, ErrorCode::kInternal);
  EXPECT_NE(bad_record.error().message.find("corrupt step record"), std::string::npos) << bad_record.error().message;

  json state = storedGroup(everyField(), Records::kWithout);
  state["hosts"][1]["pass"] = "one";
  auto bad_state = groupFromStored(state);
  ASSERT_FALSE(bad_state.ok());
  EXPECT_NE(bad_state.error().message.find("corrupt run state"), std::string::npos) << bad_state.error().message;
  EXPECT_FALSE(groupFromStored(json::array()).ok());
  EXPECT_FALSE(recordFromStored(json{{"step", 1}}).ok());
}

// What the engine made, stored and read back, is a state the engine carries on from.
TEST(RunStateCodecTest, AssignmentArtifactsUseTheProtocolNamesAndNullForNone) {
  EXPECT_TRUE(storedArtifacts({}).is_null());
  auto none = artifactsFromStored(nullptr);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->empty());

  const std::string sha(64, 'e');
  std::vector<protocol::ArtifactRef> list = {{"https://m.example/t.fwpkg", sha, sha + "  t.fwpkg\n", "SIG"},
                                             {"/srv/fw/n.bin", std::string(64, 'f'), "", ""}};
  json j = storedArtifacts(list);
  EXPECT_EQ(j[0], (json{{"url", "https://m.example/t.fwpkg"}, {"sha256", sha}, {"checksums", sha + "  t.fwpkg\n"},
                        {"signature", "SIG"}}));
  auto back = artifactsFromStored(j);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, list);

  for (const json& bad : {json("x"), json::array({json{{"url", "u"}}}), json::array({json{{"url", 1}}})}) {
    auto r = artifactsFromStored(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInternal);
  }
}

TEST(RunStateCodecTest, TheEngineCarriesOnFromAStoredState) {
  auto spec = workflow::loadWorkflow(R"(
name: pod
version: "1"
scope: pod
steps:
  - id: count
    run: [nvidia-smi, -q, -x]
    timeout: 10s
    parse: json
  - id: echo
    run: [echo, "{{host.name}}"]
    timeout: 5s
)",
                                     "pod.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto params = workflow::resolveParams(*spec, {});
  ASSERT_TRUE(params.ok()) << params.error();
  runs::Engine e(*spec, *params);
  auto g = e.newGroup("r1", "p1", {{"h1", {{"host.name", "h1"}}}, {"h2", {{"host.name", "h2"}}}});
  auto fx = e.start(g, kT0);
  ASSERT_EQ(fx.dispatches.size(), 2u);
  runs::StepResult counted;
  counted.exit_code = 0;
  counted.parsed = json{{"gpu_count", 4}};
  ASSERT_TRUE(e.onResult(g, fx.dispatches[0].assignment_id, counted, kT0).ok());
  auto back = groupFromStored(storedGroup(g, Records::kWith));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(*back == g);
  auto fx2 = e.onResult(*back, fx.dispatches[1].assignment_id, counted, kT0);
  ASSERT_TRUE(fx2.ok()) << fx2.error();
  ASSERT_EQ(fx2->dispatches.size(), 1u);
  EXPECT_EQ(fx2->dispatches[0].step_id, "echo");
}

}  // namespace
}  // namespace kiln::db
