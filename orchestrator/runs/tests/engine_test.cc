#include "orchestrator/runs/engine.h"

#include <gtest/gtest.h>

#include "orchestrator/runs/lost_lease.h"
#include "orchestrator/workflow/loader.h"

namespace kiln::runs {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

workflow::WorkflowSpec load(const std::string& yaml) {
  auto spec = workflow::loadWorkflow(yaml, "test.yaml");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().details.count("text") ? spec.error().details.at("text") : spec.error().message);
  return *spec;
}

StepResult exited(int code, json parsed = nullptr) {
  StepResult r;
  r.exit_code = code;
  r.parsed = std::move(parsed);
  return r;
}

json nvlink(int gpu, int link, int crc) {
  json links = json::array();
  for (int l = 0; l < 4; ++l)
    links.push_back({{"link", l}, {"crc_flit", l == link ? crc : 0}, {"crc_data", 0}, {"replay", 0}, {"recovery", 0}});
  return {{"gpus", {{{"gpu_id", gpu}, {"links", links}}}}};
}

class EngineTest : public ::testing::Test {
 protected:
  TimePoint now_ = TimePoint{} + std::chrono::hours(1000);
  workflow::ParamValues params_;

  GroupState group(const Engine& e, int hosts) {
    std::vector<std::pair<std::string, workflow::ContextFields>> hs;
    std::string all;
    for (int i = 1; i <= hosts; ++i) all += (all.empty() ? "" : ",") + ("h" + std::to_string(i));
    for (int i = 1; i <= hosts; ++i)
      hs.push_back({"h" + std::to_string(i), {{"host.id", "h" + std::to_string(i)}, {"host.name", "h" + std::to_string(i)},
                                               {"pod.hosts", all}, {"pod.id", "p1"}}});
    return e.newGroup("r1", "p1", hs);
  }
  // The dispatch for a host among effects, or nullptr.
  static const Dispatch* forHost(const Effects& fx, const std::string& host) {
    for (const auto& d : fx.dispatches)
      if (d.host == host) return &d;
    return nullptr;
  }
};

constexpr const char* kTwoSteps = R"(
name: two
version: "1"
scope: host
params:
  want: {type: int, default: 4}
steps:
  - id: count
    run: [nvidia-smi, -q, -x]
    timeout: 10s
    parse: json
    retries: {count: 1, backoff: 10s}
    checks:
      - {name: GPU count, path: gpu_count, eq: "{{want}}"}
  - id: echo
    run: [echo, "{{host.name}}"]
    timeout: 5s
)";

TEST_F(EngineTest, RunsStepsInOrderAndPasses) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  EXPECT_EQ(fx.dispatches[0].argv, (std::vector<std::string>{"nvidia-smi", "-q", "-x"}));
  EXPECT_EQ(fx.dispatches[0].timeout_ms, 10000);
  EXPECT_EQ(fx.dispatches[0].parse, "json");
  auto fx2 = e.onResult(g, fx.dispatches[0].assignment_id, exited(0, {{"gpu_count", 4}}), now_);
  ASSERT_TRUE(fx2.ok());
  ASSERT_EQ(fx2->dispatches.size(), 1u);
  EXPECT_EQ(fx2->dispatches[0].argv, (std::vector<std::string>{"echo", "h1"}));
  auto fx3 = e.onResult(g, fx2->dispatches[0].assignment_id, exited(0), now_);
  ASSERT_TRUE(fx3.ok());
  EXPECT_TRUE(fx3->dispatches.empty());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed);
  EXPECT_EQ(fx3->hosts_finished, (std::vector<std::string>{"h1"}));
  EXPECT_TRUE(Engine::done(g));
}

// Two artifact params and the bundle's signature, as firmware-upgrade and artifact-stage take them.
const std::string kArtifactParams = R"(
version: "1"
scope: host
params:
  tray_package: {type: artifact, default: ""}
  nic_image: {type: artifact, default: ""}
  artifact_checksums: {type: string, default: ""}
  artifact_signature: {type: string, default: ""}
steps:
)";
const std::string kArtifactFlow = "name: flash" + kArtifactParams + R"(  - id: flash-tray
    when: "{{tray_package}}"
    run: [nvfwupd, -t, "ip={{host.name}}", update, -p, "{{tray_package}}", "--copy={{tray_package}}"]
    timeout: 10s
  - id: show
    run: [echo, "{{nic_image}}"]
    timeout: 5s
)";

TEST_F(EngineTest, ArtifactParamBecomesAPlaceholderAndTheStepCarriesTheArtifact) {
  auto spec = load(kArtifactFlow);
  const std::string sha(64, 'c');
  params_ = *workflow::resolveParams(spec, {{"tray_package", "https://m.example/t.fwpkg#sha256=" + sha},
                                            {"artifact_checksums", sha + "  t.fwpkg\n"},
                                            {"artifact_signature", "SIG"}});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  const Dispatch& d = fx.dispatches[0];
  EXPECT_EQ(d.step_id, "flash-tray");
  const std::string ph = "kiln-artifact:sha256:" + sha;
  EXPECT_EQ(d.argv, (std::vector<std::string>{"nvfwupd", "-t", "ip=h1", "update", "-p", ph, "--copy=" + ph}));
  // Named twice, carried once; never the URL in argv.
  ASSERT_EQ(d.artifacts.size(), 1u);
  EXPECT_EQ(d.artifacts[0], (protocol::ArtifactRef{"https://m.example/t.fwpkg", sha, sha + "  t.fwpkg\n", "SIG"}));

  // A step that does not name an artifact carries none (nic_image is empty: echo gets "").
  auto fx2 = e.onResult(g, d.assignment_id, exited(0), now_);
  ASSERT_TRUE(fx2.ok());
  ASSERT_EQ(fx2->dispatches.size(), 1u);
  EXPECT_EQ(fx2->dispatches[0].step_id, "show");
  EXPECT_EQ(fx2->dispatches[0].argv, (std::vector<std::string>{"echo", ""}));
  EXPECT_TRUE(fx2->dispatches[0].artifacts.empty());
}

TEST_F(EngineTest, EmptyArtifactParamSkipsTheStepThatUsesItByWhen) {
  auto spec = load(kArtifactFlow);
  const std::string sha(64, 'd');
  params_ = *workflow::resolveParams(spec, {{"nic_image", "/srv/fw/nic.bin#sha256=" + sha}});
  Engine e(spec, params_);
  auto g = group(e, 1);
  // Empty tray_package: `when` skips the flash step, no artifact for it.
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  EXPECT_EQ(fx.dispatches[0].step_id, "show");
  ASSERT_EQ(g.hosts[0].history.size(), 1u);
  EXPECT_EQ(g.hosts[0].history[0].outcome, "skipped");
  EXPECT_EQ(fx.dispatches[0].argv, (std::vector<std::string>{"echo", "kiln-artifact:sha256:" + sha}));
  // Unsigned: the workflow declares the params but they are empty.
  ASSERT_EQ(fx.dispatches[0].artifacts.size(), 1u);
  EXPECT_EQ(fx.dispatches[0].artifacts[0], (protocol::ArtifactRef{"/srv/fw/nic.bin", sha, "", ""}));
}

// A stage step: one "stage" assignment with no argv carrying every non-empty listed artifact; with
// none of them set the step is skipped.
TEST_F(EngineTest, AStageStepSendsTheListedArtifactsAndNoArgv) {
  auto spec = load("name: stage" + kArtifactParams + R"(  - id: stage
    type: stage
    artifacts: [tray_package, nic_image]
    timeout: 1h
)");
  const std::string a(64, 'a'), b(64, 'b');
  params_ = *workflow::resolveParams(spec, {{"tray_package", "https://m/t.fwpkg#sha256=" + a},
                                            {"nic_image", "https://m/n.bin#sha256=" + b},
                                            {"artifact_checksums", a + "  t.fwpkg\n" + b + "  n.bin\n"},
                                            {"artifact_signature", "SIG"}});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  const Dispatch& d = fx.dispatches[0];
  EXPECT_EQ(d.type, "stage");
  EXPECT_TRUE(d.argv.empty());
  EXPECT_EQ(d.timeout_ms, 3600000);
  ASSERT_EQ(d.artifacts.size(), 2u);
  EXPECT_EQ(d.artifacts[0].url, "https://m/t.fwpkg");
  EXPECT_EQ(d.artifacts[1], (protocol::ArtifactRef{"https://m/n.bin", b, a + "  t.fwpkg\n" + b + "  n.bin\n", "SIG"}));
  auto done = e.onResult(g, d.assignment_id, exited(0), now_);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed);

  params_ = *workflow::resolveParams(spec, {});
  Engine nothing(spec, params_);
  auto g2 = group(nothing, 1);
  auto fx2 = nothing.start(g2, now_);
  EXPECT_TRUE(fx2.dispatches.empty());
  ASSERT_EQ(g2.hosts[0].history.size(), 1u);
  EXPECT_EQ(g2.hosts[0].history[0].outcome, "skipped");
  EXPECT_EQ(g2.hosts[0].status, HostStatus::kPassed);
}

TEST_F(EngineTest, StepWithoutArtifactReferencesGetsNoArtifacts) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  EXPECT_TRUE(fx.dispatches[0].artifacts.empty());
}

TEST_F(EngineTest, FailedCheckIsRetriedAfterBackoffThenFailsTheHostNamingTheCheck) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  auto fx2 = e.onResult(g, fx.dispatches[0].assignment_id, exited(0, {{"gpu_count", 3}}), now_);
  ASSERT_TRUE(fx2.ok());
  EXPECT_TRUE(fx2->dispatches.empty());  // waiting for the backoff
  ASSERT_TRUE(fx2->next_wakeup.has_value());
  EXPECT_EQ(*fx2->next_wakeup, now_ + seconds(10));
  EXPECT_TRUE(e.tick(g, now_ + seconds(9)).dispatches.empty());
  auto retry = e.tick(g, now_ + seconds(10));
  ASSERT_EQ(retry.dispatches.size(), 1u);
  EXPECT_EQ(retry.dispatches[0].attempt, 2);
  auto fx3 = e.onResult(g, retry.dispatches[0].assignment_id, exited(0, {{"gpu_count", 3}}), now_ + seconds(11));
  ASSERT_TRUE(fx3.ok());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kFailed);
  ASSERT_EQ(g.hosts[0].failures.size(), 1u);
  EXPECT_NE(g.hosts[0].failures[0].find("GPU count"), std::string::npos) << g.hosts[0].failures[0];
  EXPECT_NE(g.hosts[0].failures[0].find("count:"), std::string::npos);
  // The caller derives lifecycle transitions from this list: the failing report must name it.
  EXPECT_EQ(fx3->hosts_finished, (std::vector<std::string>{"h1"}));
}

TEST_F(EngineTest, AgentNoteOfAFailedStepIsKeptInTheRecordAndTheFailure) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  StepResult r = exited(-1);
  r.note = "agent restarted while the step ran";
  auto first = e.onResult(g, fx.dispatches[0].assignment_id, r, now_);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(g.hosts[0].history.size(), 1u);
  EXPECT_NE(g.hosts[0].history[0].message.find("agent restarted while the step ran: exit code -1"), std::string::npos)
      << g.hosts[0].history[0].message;
  auto retry = e.tick(g, now_ + seconds(10));
  ASSERT_EQ(retry.dispatches.size(), 1u);
  ASSERT_TRUE(e.onResult(g, retry.dispatches[0].assignment_id, r, now_ + seconds(11)).ok());
  ASSERT_EQ(g.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[0].failures[0].find("agent restarted"), std::string::npos) << g.hosts[0].failures[0];
}

TEST_F(EngineTest, StaleOrDuplicateReportIsRefusedAndChangesNothing) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  const std::string id = fx.dispatches[0].assignment_id;
  ASSERT_TRUE(e.onResult(g, id, exited(0, {{"gpu_count", 4}}), now_).ok());
  const GroupState before = g;
  auto again = e.onResult(g, id, exited(0, {{"gpu_count", 4}}), now_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(g == before);
}

TEST_F(EngineTest, ChecksStillRunAfterAnUnexpectedExitCode) {
  auto spec = load(R"(
name: diag
version: "1"
scope: host
steps:
  - id: diag
    run: [dcgmi, diag, -r, "1", -j]
    timeout: 1m
    parse: json
    checks:
      - {name: diag passed, path: overall, eq: Pass, explain: "failed[*].test"}
)");
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  StepResult r = exited(226, {{"overall", "Fail"}, {"failed", {{{"test", "memory"}}}}});
  ASSERT_TRUE(e.onResult(g, fx.dispatches[0].assignment_id, r, now_).ok());
  ASSERT_EQ(g.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[0].failures[0].find("exit code 226"), std::string::npos);
  EXPECT_NE(g.hosts[0].failures[0].find("memory"), std::string::npos) << g.hosts[0].failures[0];
}

constexpr const char* kPodFlow = R"(
name: pod-flow
version: "1"
scope: pod
steps:
  - id: before
    run: [dcgmi, nvlink, -e, -g, "0", -j]
    timeout: 30s
    parse: json
  - id: ready
    type: barrier
    timeout: 1h
  - id: stress
    run_on: leader
    run: [dcgmi, mndiag, --hostList, "{{pod.hosts}}", --run, nvloom]
    timeout: 2h
    on_failure: continue
  - id: after
    run: [dcgmi, nvlink, -e, -g, "0", -j]
    timeout: 30s
    parse: json
    on_failure: continue
    retest: {from: before, times: 2}
    checks:
      - name: NVLink error counters did not grow
        delta_from: before
        path: gpus[*].links[*]
        fields: [crc_flit, crc_data, replay, recovery]
        max_increase: 0
)";

// The group state is rewritten with every report of its group: it keeps only the parsed
// outputs a later delta check reads, and those checks still compare against them.
TEST_F(EngineTest, StateKeepsOnlyTheParsedOutputsOfDeltaBaselines) {
  auto spec = load(R"(
name: baseline
version: "1"
scope: host
steps:
  - id: before
    run: [dcgmi, nvlink, -e, -g, "0", -j]
    timeout: 30s
    parse: json
  - id: count
    run: [nvidia-smi, -q, -x]
    timeout: 30s
    parse: json
    checks:
      - {name: GPU count, path: gpu_count, eq: 4}
  - id: after
    run: [dcgmi, nvlink, -e, -g, "0", -j]
    timeout: 30s
    parse: json
    checks:
      - name: NVLink error counters did not grow
        delta_from: before
        path: gpus[*].links[*]
        fields: [crc_flit]
        max_increase: 0
)");
  EXPECT_TRUE(spec.isDeltaBaseline("before"));
  EXPECT_FALSE(spec.isDeltaBaseline("count"));
  EXPECT_FALSE(spec.isDeltaBaseline("after"));
  Engine e(spec, params_);
  auto g = group(e, 2);
  auto fx = e.start(g, now_);
  // h1's counters stay, h2's link 3 grows by 5 between `before` and `after`.
  const json outputs[2][3] = {{nvlink(0, 3, 7), {{"gpu_count", 4}}, nvlink(0, 3, 7)},
                              {nvlink(0, 3, 7), {{"gpu_count", 4}}, nvlink(0, 3, 12)}};
  for (int step = 0; step < 3; ++step) {
    ASSERT_EQ(fx.dispatches.size(), 2u) << "step " << step;
    Effects next;
    for (const auto& d : fx.dispatches) {
      const int h = d.host == "h1" ? 0 : 1;
      auto r = e.onResult(g, d.assignment_id, exited(0, outputs[h][step]), now_);
      ASSERT_TRUE(r.ok());
      for (const auto& nd : r->dispatches) next.dispatches.push_back(nd);
    }
    fx = next;
    for (const auto& h : g.hosts) {
      EXPECT_EQ(h.parsed.size(), 1u) << h.host << " after step " << step;
      EXPECT_EQ(h.parsed.count("before"), 1u) << h.host;
    }
  }
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed) << (g.hosts[0].failures.empty() ? "" : g.hosts[0].failures[0]);
  ASSERT_EQ(g.hosts[1].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[1].failures[0].find("NVLink error counters did not grow"), std::string::npos) << g.hosts[1].failures[0];
  EXPECT_EQ(g.hosts[0].parsed, (std::map<std::string, json>{{"before", nvlink(0, 3, 7)}}));
}

TEST_F(EngineTest, BarrierWaitsForEveryHostAndLeaderRunsPodWideStepOnce) {
  auto spec = load(kPodFlow);
  Engine e(spec, params_);
  auto g = group(e, 3);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 3u);
  // Two hosts report their baseline: nobody passes the barrier yet.
  ASSERT_TRUE(e.onResult(g, forHost(fx, "h1")->assignment_id, exited(0, nvlink(0, 0, 0)), now_).ok());
  auto fx2 = e.onResult(g, forHost(fx, "h2")->assignment_id, exited(0, nvlink(0, 0, 0)), now_);
  ASSERT_TRUE(fx2.ok());
  EXPECT_TRUE(fx2->dispatches.empty());
  auto fx3 = e.onResult(g, forHost(fx, "h3")->assignment_id, exited(0, nvlink(0, 0, 0)), now_);
  ASSERT_TRUE(fx3.ok());
  // Barrier released: only the leader (h1) runs the pod-wide stress, with every host named.
  ASSERT_EQ(fx3->dispatches.size(), 1u);
  EXPECT_EQ(fx3->dispatches[0].host, "h1");
  EXPECT_EQ(fx3->dispatches[0].argv[3], "h1,h2,h3");
  auto fx4 = e.onResult(g, fx3->dispatches[0].assignment_id, exited(0), now_);
  ASSERT_TRUE(fx4.ok());
  EXPECT_EQ(fx4->dispatches.size(), 3u);  // every host takes its after-snapshot
  for (const char* h : {"h1", "h2", "h3"})
    ASSERT_TRUE(e.onResult(g, forHost(*fx4, h)->assignment_id, exited(0, nvlink(0, 0, 0)), now_).ok());
  for (const auto& h : g.hosts) EXPECT_EQ(h.status, HostStatus::kPassed) << h.host;
  EXPECT_EQ(g.hosts[1].history[2].outcome, "shared");
}

// The store moves a state's step records into the run's step log with every write and loads the
// state without them: what followers share of a leader step must outlive its record. After each
// event here the records move to a log.
TEST_F(EngineTest, FollowersShareTheLeadersOutcomeAfterItsRecordMovedToTheLog) {
  auto spec = load(kPodFlow);
  Engine e(spec, params_);
  auto g = group(e, 3);
  std::map<std::string, std::vector<StepRecord>> log;
  auto store = [&](GroupState& st) {
    for (auto& h : st.hosts) {
      for (auto& r : h.history) log[h.host].push_back(r);
      h.history.clear();
    }
  };
  auto fx = e.start(g, now_);
  store(g);
  Effects stress;
  for (const char* h : {"h1", "h2", "h3"}) {
    auto r = e.onResult(g, forHost(fx, h)->assignment_id, exited(0, nvlink(0, 0, 0)), now_);
    ASSERT_TRUE(r.ok());
    if (!r->dispatches.empty()) stress = *r;
    store(g);
  }
  ASSERT_EQ(stress.dispatches.size(), 1u);
  auto after = e.onResult(g, stress.dispatches[0].assignment_id, exited(3), now_);  // the pod-wide step fails
  ASSERT_TRUE(after.ok());
  store(g);
  ASSERT_EQ(g.hosts[0].leader_outcomes.count(leaderKey("stress", 1)), 1u);
  EXPECT_EQ(g.hosts[0].leader_outcomes.at(leaderKey("stress", 1)).outcome, "failed");
  for (const char* h : {"h2", "h3"}) {
    ASSERT_EQ(log[h].size(), 3u) << h;  // before, ready, stress (shared)
    EXPECT_EQ(log[h][2].outcome, "shared");
    EXPECT_NE(log[h][2].message.find("run by h1: failed (exit code 3"), std::string::npos) << log[h][2].message;
  }
  for (std::size_t i : {1u, 2u}) {
    ASSERT_EQ(g.hosts[i].warnings.size(), 1u) << g.hosts[i].host;
    EXPECT_EQ(g.hosts[i].warnings[0], "stress: pod-wide step failed on h1");
  }
  EXPECT_EQ(log["h1"].back().step_id, "stress");
  EXPECT_EQ(log["h1"].back().outcome, "failed");
}

// Drives host h2 through: initial after-check fails on link 2, then `retest_results` rounds.
class RetestTest : public EngineTest {
 protected:
  GroupState runWithRetests(const std::vector<int>& retest_crc_growth) {
    static const workflow::WorkflowSpec spec = load(kPodFlow);
    engine_ = std::make_unique<Engine>(spec, params_);
    Engine& e = *engine_;
    auto g = group(e, 2);
    auto fx = e.start(g, now_);
    for (const char* h : {"h1", "h2"})
      (void)e.onResult(g, forHost(fx, h)->assignment_id, exited(0, nvlink(0, 2, 10)), now_);
    // After the barrier: the leader's stress step.
    auto pending = [&](const std::string& host) { return g.hosts[host == "h1" ? 0 : 1].assignment_id; };
    auto fx2 = e.onResult(g, pending("h1"), exited(0), now_);
    EXPECT_TRUE(fx2.ok());
    // h1 clean; h2's link 2 CRC grows by 5 during the stress.
    (void)e.onResult(g, pending("h1"), exited(0, nvlink(0, 2, 10)), now_);
    (void)e.onResult(g, pending("h2"), exited(0, nvlink(0, 2, 15)), now_);
    int base = 15;
    for (int growth : retest_crc_growth) {
      // before (retest baseline), barrier skipped, stress run by h2 itself, after.
      EXPECT_FALSE(pending("h2").empty());
      (void)e.onResult(g, pending("h2"), exited(0, nvlink(0, 2, base)), now_);
      EXPECT_FALSE(pending("h2").empty()) << "stress during retest runs on the retesting host";
      (void)e.onResult(g, pending("h2"), exited(0), now_);
      (void)e.onResult(g, pending("h2"), exited(0, nvlink(0, 2, base + growth)), now_);
      base += growth;
    }
    return g;
  }
  std::unique_ptr<Engine> engine_;
};

TEST_F(RetestTest, LinkThatPassesTwoRetestsIsTransientAndTheHostPasses) {
  auto g = runWithRetests({0, 0});
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed);
  EXPECT_EQ(g.hosts[1].status, HostStatus::kPassed);
  ASSERT_FALSE(g.hosts[1].warnings.empty());
  EXPECT_NE(g.hosts[1].warnings.back().find("transient"), std::string::npos) << g.hosts[1].warnings.back();
  EXPECT_NE(g.hosts[1].warnings.back().find("link 2"), std::string::npos);
}

TEST_F(RetestTest, LinkThatFailsARetestIsPersistentAndFailsTheHostNamingIt) {
  auto g = runWithRetests({0, 3});
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed);
  ASSERT_EQ(g.hosts[1].status, HostStatus::kFailed);
  std::string all;
  for (const auto& f : g.hosts[1].failures) all += f + "\n";
  EXPECT_NE(all.find("persistent"), std::string::npos) << all;
  EXPECT_NE(all.find("gpu 0 link 2"), std::string::npos) << all;
}

TEST_F(EngineTest, RepeatWaitsTheSoakBetweenPasses) {
  auto spec = load(R"(
name: quarantine
version: "1"
scope: host
repeat: 2
soak_between: 30m
steps:
  - id: check
    run: ["true"]
    timeout: 5s
)");
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  auto fx2 = e.onResult(g, fx.dispatches[0].assignment_id, exited(0), now_);
  ASSERT_TRUE(fx2.ok());
  EXPECT_TRUE(fx2->dispatches.empty());
  ASSERT_TRUE(fx2->next_wakeup);
  EXPECT_EQ(*fx2->next_wakeup, now_ + minutes(30));
  EXPECT_EQ(g.hosts[0].status, HostStatus::kRunning);
  EXPECT_TRUE(e.tick(g, now_ + minutes(29)).dispatches.empty());
  auto second = e.tick(g, now_ + minutes(30));
  ASSERT_EQ(second.dispatches.size(), 1u);
  ASSERT_TRUE(e.onResult(g, second.dispatches[0].assignment_id, exited(0), now_ + minutes(31)).ok());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed);
  EXPECT_EQ(g.hosts[0].history.size(), 2u);
  EXPECT_EQ(g.hosts[0].history[1].pass, 2);
}

TEST_F(EngineTest, CancelStopsEveryHostAndCancelsOutstandingAssignments) {
  auto spec = load(kPodFlow);
  Engine e(spec, params_);
  auto g = group(e, 2);
  auto fx = e.start(g, now_);
  auto c = e.cancel(g, "cancelled by op");
  EXPECT_EQ(c.cancel_assignments.size(), 2u);
  EXPECT_EQ(c.hosts_finished.size(), 2u);
  EXPECT_TRUE(Engine::done(g));
  EXPECT_FALSE(e.onResult(g, fx.dispatches[0].assignment_id, exited(0), now_).ok());
}

TEST_F(EngineTest, StopLetsTheRunningStepFinishAndStartsNoOther) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  auto st = e.stop(g, now_);
  EXPECT_TRUE(st.cancel_assignments.empty());  // nothing is killed
  EXPECT_EQ(g.hosts[0].status, HostStatus::kRunning);
  auto done = e.onResult(g, fx.dispatches[0].assignment_id, exited(0, {{"gpu_count", 4}}), now_);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->dispatches.empty());  // the second step never starts
  EXPECT_EQ(g.hosts[0].status, HostStatus::kCancelled);
  EXPECT_EQ(g.hosts[0].history.size(), 1u);
  EXPECT_EQ(done->hosts_finished, (std::vector<std::string>{"h1"}));
}

TEST_F(EngineTest, StopWithdrawsAStepNoAgentHasTakenAndKeepsOneThatRuns) {
  auto spec = load(kPodFlow);
  Engine e(spec, params_);
  auto g = group(e, 2);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 2u);
  const std::string taken = fx.dispatches[0].assignment_id, waiting = fx.dispatches[1].assignment_id;
  // The second host's agent is gone: its assignment is still pending in the store.
  auto st = e.stop(g, now_, {waiting});
  EXPECT_EQ(st.cancel_assignments, (std::vector<std::string>{waiting}));
  EXPECT_EQ(g.hosts[1].status, HostStatus::kCancelled);
  EXPECT_NE(g.hosts[1].failures.back().find("before step"), std::string::npos) << g.hosts[1].failures.back();
  EXPECT_EQ(st.hosts_finished, (std::vector<std::string>{g.hosts[1].host}));
  // The first host's step runs on: it is never cut, and the group ends when it reports.
  EXPECT_EQ(g.hosts[0].status, HostStatus::kRunning);
  EXPECT_FALSE(Engine::done(g));
  ASSERT_TRUE(e.onResult(g, taken, exited(0), now_).ok());
  EXPECT_TRUE(Engine::done(g));
  EXPECT_FALSE(e.onResult(g, waiting, exited(0), now_).ok()) << "a withdrawn assignment's report counted";
}

TEST_F(EngineTest, LostAssignmentCountsAsAFailedAttempt) {
  auto spec = load(kTwoSteps);
  params_ = *workflow::resolveParams(spec, {});
  Engine e(spec, params_);
  auto g = group(e, 1);
  auto fx = e.start(g, now_);
  StepResult lost;
  lost.lost = true;
  ASSERT_TRUE(e.onResult(g, fx.dispatches[0].assignment_id, lost, now_).ok());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kRunning);  // retried after the backoff
  EXPECT_EQ(g.hosts[0].history.back().outcome, "failed");
  EXPECT_NE(g.hosts[0].history.back().message.find("lease"), std::string::npos);
}

// ---- Steps about the host's BMC and a reboot's recovery (issue 32) ----

constexpr const char* kRebootWithRecovery = R"(
name: reboot-recover
version: "1"
scope: host
steps:
  - id: reboot
    type: reboot
    timeout: 10m
    recover: {power_cycles: 2, timeout: 2m}
  - id: after
    run: ["true"]
    timeout: 1m
)";

class RecoveryTest : public EngineTest {
 protected:
  workflow::WorkflowSpec spec_ = load(kRebootWithRecovery);
  Engine e_{spec_, params_};
  GroupState g_;
  std::string reboot_;

  void SetUp() override {
    g_ = e_.newGroup("r1", "h1", {{"h1", {{"host.id", "h1"}, {"host.pod", "p1"}, {"host.bmc", "h1-bmc.mgmt:443"},
                                          {"host.bmc_protocol", "redfish"}, {"host.bmc_credential", "tray-bmc"},
                                          {"host.runner", "oob-b01"}}}});
    auto fx = e_.start(g_, now_);
    ASSERT_EQ(fx.dispatches.size(), 1u);
    EXPECT_TRUE(fx.dispatches[0].runner.empty());  // the reboot itself is the host's
    reboot_ = fx.dispatches[0].assignment_id;
  }
  static StepResult lost() {
    StepResult r;
    r.lost = true;
    r.started = false;
    return r;
  }
  static StepResult cycled(const std::string& power = "on") {
    return exited(0, {{"bmc", "h1-bmc.mgmt:443"}, {"action", "cycle"}, {"power", power}});
  }
};

TEST_F(RecoveryTest, ASilentRebootIsPowerCycledOnTheRunnerAndItsLateReportStillCounts) {
  auto fx = e_.onResult(g_, reboot_, lost(), now_);
  ASSERT_TRUE(fx.ok());
  ASSERT_EQ(fx->dispatches.size(), 1u);
  const Dispatch cycle = fx->dispatches[0];
  EXPECT_EQ(cycle.runner, "oob-b01");
  EXPECT_EQ(cycle.host, "h1");
  EXPECT_NE(cycle.assignment_id.find("@oob-b01"), std::string::npos);  // whom to tell if it is withdrawn
  EXPECT_EQ(cycle.argv, (std::vector<std::string>{"kiln-oob", "power", "cycle", "--bmc", "h1-bmc.mgmt:443",
                                                  "--credential", "tray-bmc", "--protocol", "redfish", "--wait",
                                                  "110", "--log", "20"}));
  EXPECT_EQ(cycle.parse, "json");
  EXPECT_EQ(cycle.timeout_ms, 120000);
  // The reboot's assignment stays open: its lease runs on for the cycle and the step's timeout.
  ASSERT_EQ(fx->extend_leases.size(), 1u);
  EXPECT_EQ(fx->extend_leases[0].first, reboot_);
  EXPECT_EQ(fx->extend_leases[0].second, now_ + minutes(2) + minutes(10));
  EXPECT_EQ(g_.hosts[0].assignment_id, reboot_);
  EXPECT_EQ(g_.hosts[0].power_cycles, 1);
  EXPECT_EQ(g_.hosts[0].status, HostStatus::kRunning);

  fx = e_.onResult(g_, cycle.assignment_id, cycled(), now_ + seconds(40));
  ASSERT_TRUE(fx.ok());
  EXPECT_TRUE(fx->dispatches.empty());  // waiting for the host to boot
  EXPECT_EQ(g_.hosts[0].history.back().outcome, "warned");
  EXPECT_EQ(g_.hosts[0].history.back().assignment_id, cycle.assignment_id);  // its output: the BMC's log

  // The agent comes back and reports the reboot on the lease it had.
  fx = e_.onResult(g_, reboot_, exited(0), now_ + minutes(3));
  ASSERT_TRUE(fx.ok());
  ASSERT_EQ(fx->dispatches.size(), 1u);
  EXPECT_EQ(fx->dispatches[0].step_id, "after");
  fx = e_.onResult(g_, fx->dispatches[0].assignment_id, exited(0), now_ + minutes(4));
  EXPECT_EQ(g_.hosts[0].status, HostStatus::kPassed);
  ASSERT_EQ(g_.hosts[0].warnings.size(), 1u);
  EXPECT_NE(g_.hosts[0].warnings[0].find("power cycle 1 of 2"), std::string::npos);
}

TEST_F(RecoveryTest, AHostStillSilentAfterEveryCycleFailsAndIsNotCountedAsAMereLostLease) {
  auto fx = e_.onResult(g_, reboot_, lost(), now_);
  ASSERT_TRUE(e_.onResult(g_, fx->dispatches[0].assignment_id, cycled(), now_).ok());
  fx = e_.onResult(g_, reboot_, lost(), now_ + minutes(12));  // silent again: the second cycle
  ASSERT_TRUE(fx.ok());
  ASSERT_EQ(fx->dispatches.size(), 1u);
  EXPECT_EQ(fx->dispatches[0].runner, "oob-b01");
  ASSERT_TRUE(e_.onResult(g_, fx->dispatches[0].assignment_id, cycled(), now_ + minutes(13)).ok());
  fx = e_.onResult(g_, reboot_, lost(), now_ + minutes(25));  // bounded: no third
  ASSERT_TRUE(fx.ok());
  EXPECT_TRUE(fx->dispatches.empty());
  EXPECT_TRUE(fx->extend_leases.empty());
  EXPECT_EQ(g_.hosts[0].status, HostStatus::kFailed);
  ASSERT_FALSE(g_.hosts[0].failures.empty());
  EXPECT_NE(g_.hosts[0].failures.back().find("did not come back after 2 power cycles"), std::string::npos);
  EXPECT_FALSE(onlyLostLeases(g_.hosts[0].failures));  // a verdict on the host, not on kilnd
}

TEST_F(RecoveryTest, ABmcThatCannotCycleFailsTheRebootWithItsReasonAndWithdrawsTheReboot) {
  auto fx = e_.onResult(g_, reboot_, lost(), now_);
  StepResult refused = exited(1);
  refused.stderr_tail = "kiln-oob: h1-bmc.mgmt:443: HTTP 401: the BMC refused the credential\n";
  fx = e_.onResult(g_, fx->dispatches[0].assignment_id, refused, now_ + seconds(5));
  ASSERT_TRUE(fx.ok());
  EXPECT_EQ(g_.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g_.hosts[0].failures.back().find("HTTP 401"), std::string::npos);
  EXPECT_NE(std::find(fx->cancel_assignments.begin(), fx->cancel_assignments.end(), reboot_),
            fx->cancel_assignments.end());
  // The reboot's late report changes nothing now.
  EXPECT_FALSE(e_.onResult(g_, reboot_, exited(0), now_ + minutes(1)).ok());
}

TEST_F(RecoveryTest, ATrayTheBmcDoesNotReportOnCountsAsAFailedCycle) {
  auto fx = e_.onResult(g_, reboot_, lost(), now_);
  fx = e_.onResult(g_, fx->dispatches[0].assignment_id, cycled("off"), now_ + seconds(5));
  EXPECT_EQ(g_.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g_.hosts[0].failures.back().find("does not report the tray on"), std::string::npos);
}

TEST_F(RecoveryTest, TheHostWaitsForAPowerCycleStillOutEvenWhenItsRebootReportsFirst) {
  auto fx = e_.onResult(g_, reboot_, lost(), now_);
  const std::string cycle = fx->dispatches[0].assignment_id;
  fx = e_.onResult(g_, reboot_, exited(0), now_ + seconds(10));  // it came back on its own
  ASSERT_TRUE(fx.ok());
  EXPECT_TRUE(fx->dispatches.empty());  // no next step under a power cycle
  fx = e_.onResult(g_, cycle, cycled(), now_ + seconds(40));
  ASSERT_TRUE(fx.ok());
  ASSERT_EQ(fx->dispatches.size(), 1u);
  EXPECT_EQ(fx->dispatches[0].step_id, "after");
  EXPECT_EQ(g_.hosts[0].history.back().step_id, "reboot");  // the cycle's record is the reboot's
}

TEST_F(RecoveryTest, CancelWithdrawsThePowerCycleToo) {
  auto fx = e_.onResult(g_, reboot_, lost(), now_);
  const std::string cycle = fx->dispatches[0].assignment_id;
  auto c = e_.cancel(g_, "operator");
  EXPECT_NE(std::find(c.cancel_assignments.begin(), c.cancel_assignments.end(), cycle), c.cancel_assignments.end());
  EXPECT_NE(std::find(c.cancel_assignments.begin(), c.cancel_assignments.end(), reboot_), c.cancel_assignments.end());
}

TEST_F(EngineTest, WithoutARunnerALostRebootFailsSayingWhyNoCycleWasTried) {
  auto spec = load(kRebootWithRecovery);
  Engine e(spec, params_);
  auto g = e.newGroup("r1", "h1", {{"h1", {{"host.id", "h1"}, {"host.pod", "p1"}, {"host.bmc", ""}, {"host.runner", ""}}}});
  auto fx = e.start(g, now_);
  StepResult lost;
  lost.lost = true;
  auto after = e.onResult(g, fx.dispatches[0].assignment_id, lost, now_);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->dispatches.empty());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[0].failures.back().find("names no out-of-band runner"), std::string::npos);
}

constexpr const char* kBmcStep = R"(
name: bmc-step
version: "1"
scope: host
steps:
  - id: power
    target: bmc
    run: [kiln-oob, power, status, --bmc, "{{host.bmc}}", --credential, "{{host.bmc_credential}}"]
    parse: json
    timeout: 1m
)";

TEST_F(EngineTest, AStepAboutTheBmcGoesToThePodsRunnerNeverToTheHost) {
  auto spec = load(kBmcStep);
  Engine e(spec, params_);
  auto g = e.newGroup("r1", "h1", {{"h1", {{"host.id", "h1"}, {"host.pod", "p1"}, {"host.bmc", "10.0.0.9:443"},
                                           {"host.bmc_credential", "tray-bmc"}, {"host.runner", "oob-b01"}}}});
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u);
  EXPECT_EQ(fx.dispatches[0].runner, "oob-b01");
  EXPECT_EQ(fx.dispatches[0].argv[4], "10.0.0.9:443");
  EXPECT_FALSE(fx.dispatches[0].inventory_after);

  auto none = e.newGroup("r1", "h2", {{"h2", {{"host.id", "h2"}, {"host.pod", "p2"}, {"host.bmc", ""},
                                             {"host.bmc_credential", ""}, {"host.runner", ""}}}});
  fx = e.start(none, now_);
  EXPECT_TRUE(fx.dispatches.empty());
  EXPECT_EQ(none.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(none.hosts[0].failures[0].find("pod p2's management block names no out-of-band runner"), std::string::npos);
}

// ---- The pod's switch trays through the runner, each read back by itself (issue 32) ----

constexpr const char* kSwitchTrays = R"(
name: switch-trays
version: "1"
scope: pod
steps:
  - id: read-back
    target: switch_trays
    run_on: leader
    run: [kiln-oob, firmware, list, --bmc, "{{pod.switch_bmcs}}", --credential, tray-bmc, --protocol, redfish]
    parse: json
    inventory: {nvswitch: NVSwitch_Firmware}
    timeout: 5m
)";

TEST_F(EngineTest, ASwitchTrayStepRunsOnceOnThePodsRunnerAndItsReadBackIsTheTraysVersions) {
  auto spec = load(kSwitchTrays);
  Engine e(spec, params_);
  const std::string trays = "p1-s1=p1-s1-bmc:443,p1-s2=p1-s2-bmc:443";
  auto fields = [&](const std::string& h) {
    return workflow::ContextFields{
        {"host.id", h}, {"host.pod", "p1"}, {"host.runner", "oob-b01"}, {"pod.switch_bmcs", trays}};
  };
  auto g = e.newGroup("r1", "p1", {{"p1-h01", fields("p1-h01")}, {"p1-h02", fields("p1-h02")}});
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 1u) << "once per pod, the leader's";
  EXPECT_EQ(fx.dispatches[0].runner, "oob-b01");
  EXPECT_EQ(fx.dispatches[0].host, "p1-h01");
  EXPECT_EQ(fx.dispatches[0].argv[4], trays);

  auto tray = [](const std::string& name, const std::string& v) {
    return json{{"device", name}, {"firmware", json::array({{{"id", "NVSwitch_Firmware"}, {"version", v}}})}};
  };
  // One tray did not answer: the step fails naming it, the other's version is still recorded.
  auto after = e.onResult(
      g, fx.dispatches[0].assignment_id,
      exited(1, json{{"devices",
                      json::array({tray("p1-s1", "1.4.0"), json{{"device", "p1-s2"}, {"error", "timed out"}}})}}),
      now_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->device_versions, (std::vector<DeviceVersion>{{"p1-s1", "nvswitch", "1.4.0", "p1-h01"}}));
  EXPECT_EQ(g.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[0].failures.back().find("no read-back of p1-s2"), std::string::npos) << g.hosts[0].failures.back();
  // The pod-wide step failed (on_failure: fail): the pod's other host fails with it, and does not
  // run the step again as the next leader.
  EXPECT_TRUE(after->dispatches.empty());
  EXPECT_EQ(g.hosts[1].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[1].failures.back().find("read-back: pod-wide step failed on p1-h01"), std::string::npos)
      << g.hosts[1].failures.back();
  EXPECT_TRUE(Engine::done(g));

  // Every tray answered: the step passes for the pod, both trays recorded.
  auto again = e.newGroup("r2", "p1", {{"p1-h01", fields("p1-h01")}, {"p1-h02", fields("p1-h02")}});
  fx = e.start(again, now_);
  after = e.onResult(again, fx.dispatches[0].assignment_id,
                     exited(0, json{{"devices", json::array({tray("p1-s1", "1.4.0"), tray("p1-s2", "1.4.0")})}}), now_);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->device_versions.size(), 2u);
  EXPECT_TRUE(after->dispatches.empty()) << "the last step ran once, by the leader";
  EXPECT_TRUE(Engine::done(again));
  EXPECT_EQ(again.hosts[1].history.back().outcome, "shared");
  EXPECT_EQ(again.hosts[0].status, HostStatus::kPassed);
  EXPECT_EQ(again.hosts[1].status, HostStatus::kPassed);
}

TEST_F(EngineTest, ASwitchTrayStepOnAPodWithoutSwitchTrayBmcsFailsSayingSo) {
  auto spec = load(kSwitchTrays);
  Engine e(spec, params_);
  auto g = e.newGroup(
      "r1", "p2",
      {{"p2-h01", {{"host.id", "p2-h01"}, {"host.pod", "p2"}, {"host.runner", "oob-b01"}, {"pod.switch_bmcs", ""}}}});
  auto fx = e.start(g, now_);
  EXPECT_TRUE(fx.dispatches.empty());
  EXPECT_EQ(g.hosts[0].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[0].failures[0].find("names no BMC address for them (management.switch_bmc)"), std::string::npos)
      << g.hosts[0].failures[0];
}

// ---- The NVLink domain as a whole: a barrier's agreement (issue 32) ----

constexpr const char* kDomain = R"(
name: domain
version: "1"
scope: pod
steps:
  - id: fabric
    run: [nvidia-smi, -q, -x]
    parse: json
    timeout: 1m
  - id: domain
    type: barrier
    timeout: 10m
    agree: {step: fabric, paths: ["gpus[*].fabric.clique_id", "gpus[*].fabric.cluster_uuid"]}
)";

json fabricOf(const std::string& clique, const std::string& uuid, const std::string& odd_clique = "") {
  json gpus = json::array();
  for (int i = 0; i < 4; ++i)
    gpus.push_back({{"gpu_id", i}, {"fabric", {{"clique_id", i == 3 && !odd_clique.empty() ? odd_clique : clique},
                                               {"cluster_uuid", uuid}}}});
  return {{"gpus", gpus}};
}

TEST_F(EngineTest, TheDomainBarrierFailsTheTrayThatDisagreesWithThePodAndPassesTheRest) {
  auto spec = load(kDomain);
  Engine e(spec, params_);
  auto g = group(e, 5);
  auto fx = e.start(g, now_);
  ASSERT_EQ(fx.dispatches.size(), 5u);
  const std::vector<Dispatch> steps = fx.dispatches;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    json out = i == 1 ? fabricOf("32766", "uuid-A", "4") : i == 3 ? fabricOf("32767", "uuid-A") : fabricOf("32766", "uuid-A");
    ASSERT_TRUE(e.onResult(g, steps[i].assignment_id, exited(0, out), now_).ok());
  }
  EXPECT_EQ(g.hosts[0].status, HostStatus::kPassed);
  EXPECT_EQ(g.hosts[2].status, HostStatus::kPassed);
  EXPECT_EQ(g.hosts[4].status, HostStatus::kPassed);
  EXPECT_NE(g.hosts[0].history.back().message.find("3 agree on gpus[*].fabric.clique_id"), std::string::npos)
      << g.hosts[0].history.back().message;
  ASSERT_EQ(g.hosts[1].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[1].failures[0].find("this host's own GPUs disagree (32766, 4)"), std::string::npos) << g.hosts[1].failures[0];
  ASSERT_EQ(g.hosts[3].status, HostStatus::kFailed);
  EXPECT_NE(g.hosts[3].failures[0].find("gpus[*].fabric.clique_id is 32767 here, 32766 on 3 other hosts of the pod"),
            std::string::npos)
      << g.hosts[3].failures[0];
  // Only the compared values stay in the run's state, not the whole output.
  EXPECT_EQ(g.hosts[0].parsed.at("agree/fabric").size(), 2u);
  EXPECT_FALSE(g.hosts[0].parsed.count("fabric"));
}

TEST_F(EngineTest, ASplitDomainHasNoRightSideAndFailsEveryHost) {
  auto spec = load(kDomain);
  Engine e(spec, params_);
  auto g = group(e, 4);
  auto fx = e.start(g, now_);
  const std::vector<Dispatch> steps = fx.dispatches;
  for (std::size_t i = 0; i < steps.size(); ++i)
    ASSERT_TRUE(e.onResult(g, steps[i].assignment_id, exited(0, fabricOf("32766", i < 2 ? "uuid-A" : "uuid-B")), now_).ok());
  for (const auto& h : g.hosts) {
    ASSERT_EQ(h.status, HostStatus::kFailed) << h.host;
    EXPECT_NE(h.failures[0].find("no value is held by most hosts of the pod (uuid-A on 2, uuid-B on 2)"), std::string::npos)
        << h.failures[0];
  }
}

}  // namespace
}  // namespace kiln::runs
