// The agent protocol over HTTP with a hand-driven agent: what a poll hands out, again after a
// lost answer; and a rollout aborted while no agent takes its steps.

#include <algorithm>
#include <functional>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class AgentWorkTest : public ApiTest {
 protected:
  // The shipped workflows: a rollout runs firmware-upgrade.
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }

  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(smallFleet(1));
    hosts_ = podHosts("t01-b01-p0001");
    ASSERT_GE(hosts_.size(), 2u);
    Reply put = call(*admin_, "PUT", "/api/v1/workflows/two-steps", kTwoStepsWorkflow, "application/yaml");
    ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
    const std::string enroll = createToken("enroll", "test enrolment");
    auto enroller = client(enroll);
    for (int i = 0; i < 2; ++i) {
      Reply r = call(*enroller, "POST", "/api/v1/agents/register",
                     json{{"host", hosts_[i]}, {"boot_id", "boot-1"}, {"agent_version", agentVersion()}}.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      agents_.push_back(client(r.doc()["token"].get<std::string>()));
    }
  }

  // What the fixture's agents say they are.
  virtual std::string agentVersion() const { return "test"; }

  std::string startRun(const std::vector<std::string>& hosts) {
    Reply r = call(*admin_, "POST", "/api/v1/workflow-runs", json{{"workflow", "two-steps"}, {"hosts", hosts}}.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.doc().value("id", "");
  }

  // One poll of host i's agent; `running` as the agent would send it.
  Reply poll(int i, const std::string& running = "", int wait_s = 0) {
    std::string path = "/api/v1/agents/" + hosts_[i] + "/work?wait=" + std::to_string(wait_s) + "&boot_id=boot-1";
    if (!running.empty()) path += "&running=" + running;
    return call(*agents_[i], "GET", path);
  }

  json assignmentFor(int i) {
    for (int tries = 0; tries < 10; ++tries) {
      Reply r = poll(i, "", 2);
      if (r.status == 200 && r.doc().contains("assignment")) return r.doc()["assignment"];
    }
    ADD_FAILURE() << "no assignment for " << hosts_[i];
    return json::object();
  }

  Reply report(int i, const json& a, const json& ready = json(), const json& parsed = json()) {
    json body = {{"lease", a["lease"]}, {"host", hosts_[i]}, {"started", true}, {"exit_code", 0},
                 {"signal", 0},         {"timed_out", false}, {"cancelled", false}, {"duration_ms", 5},
                 {"stdout_tail", ""},   {"stderr_tail", ""},  {"boot_id", "boot-1"}};
    if (!ready.is_null()) body["ready"] = ready;
    if (!parsed.is_null()) body["parsed"] = parsed;
    return call(*agents_[i], "POST", "/api/v1/assignments/" + a["id"].get<std::string>() + "/result", body.dump());
  }

  // kilnd's kiln_agent_polls_total{path=...}.
  long pollCounter(const std::string& path) {
    Reply m = call(*admin_, "GET", "/metrics");
    const std::string key = "kiln_agent_polls_total{path=\"" + path + "\"} ";
    const auto at = m.body.find(key);
    return at == std::string::npos ? -1 : std::stol(m.body.substr(at + key.size()));
  }

  std::vector<std::string> hosts_;
  std::vector<std::unique_ptr<http::Client>> agents_;
};

TEST_F(AgentWorkTest, AnIdlePollGetsAStepWhoseAnswerWasLostAgainWithTheSameLease) {
  startRun({hosts_[0]});
  json first = assignmentFor(0);
  ASSERT_EQ(first.value("step_id", ""), "first");
  // The answer never reached the agent (kilnd died, or the agent gave up on the poll): it
  // polls as an agent that holds nothing.
  Reply again = poll(0);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.doc()["assignment"]["id"], first["id"]);
  EXPECT_EQ(again.doc()["assignment"]["lease"], first["lease"]) << "a new lease would refuse the first delivery's report";
  // An agent that runs it polls with running= and gets nothing else meanwhile.
  EXPECT_EQ(poll(0, first["id"].get<std::string>()).status, 204);
  Reply ack = report(0, first);
  ASSERT_EQ(ack.status, 200) << ack.body;
  // Done: the next idle poll gets the next step, not the finished one.
  json second = assignmentFor(0);
  EXPECT_NE(second["id"], first["id"]);
  EXPECT_EQ(second.value("step_id", ""), "second");
}

TEST_F(AgentWorkTest, AReadyReportIsAnsweredWithTheHostsNextStep) {
  startRun({hosts_[0], hosts_[1]});
  json first = assignmentFor(0);
  ASSERT_EQ(first.value("step_id", ""), "first");
  // "ready": the agent holds no other step, so the acknowledgement carries the next one.
  Reply ack = report(0, first, true);
  ASSERT_EQ(ack.status, 200) << ack.body;
  EXPECT_EQ(ack.doc()["outcome"], "accepted");
  ASSERT_TRUE(ack.doc().contains("assignment")) << ack.body;
  const json second = ack.doc()["assignment"];
  EXPECT_EQ(second.value("step_id", ""), "second");
  EXPECT_EQ(second["lease"], 1);
  for (const char* key : {"id", "run_id", "type", "argv", "timeout_ms", "kill_grace_ms", "parse", "output_cap"})
    EXPECT_TRUE(second.contains(key)) << key;
  // It is dispatched: the step's record says so, and the host's idle poll would get the same
  // step again (an answer lost on the way), not a second one.
  Reply run = call(*admin_, "GET", "/api/v1/workflow-runs/" + first["run_id"].get<std::string>());
  ASSERT_EQ(run.status, 200);
  Reply again = poll(0);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.doc()["assignment"]["id"], second["id"]);
  EXPECT_EQ(again.doc()["assignment"]["lease"], second["lease"]);
  // The first poll with running=<the handed-out step> parks without reading it.
  const long reads = pollCounter("step_read");
  ASSERT_GE(reads, 0);
  EXPECT_EQ(poll(0, second["id"].get<std::string>()).status, 204);
  EXPECT_EQ(pollCounter("step_read"), reads);
  // A poll of the reported step that was on its way is answered without a read too.
  EXPECT_EQ(poll(0, first["id"].get<std::string>()).status, 204);
  EXPECT_EQ(pollCounter("step_read"), reads);
  // A later poll of the running step reads it (the host may have been cancelled elsewhere).
  EXPECT_EQ(poll(0, second["id"].get<std::string>()).status, 204);
  EXPECT_EQ(pollCounter("step_read"), reads + 1);

  // The last step's ready report has nothing to hand out; a duplicate of it neither.
  Reply last = report(0, second, true);
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_FALSE(last.doc().contains("assignment")) << last.body;
  Reply dup = report(0, second, true);
  ASSERT_EQ(dup.status, 200) << dup.body;
  EXPECT_EQ(dup.doc()["outcome"], "duplicate");
  EXPECT_FALSE(dup.doc().contains("assignment")) << dup.body;

  // Without "ready" (an agent busy with another step) nothing is handed out; the next step
  // waits for an idle poll. A "ready" that is not a boolean is refused and changes nothing.
  json other = assignmentFor(1);
  Reply bad = report(1, other, "yes");
  EXPECT_TRUE(isError(bad, 422, "invalid_content")) << bad.body;
  Reply plain = report(1, other);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.doc()["outcome"], "accepted");
  EXPECT_FALSE(plain.doc().contains("assignment"));
  EXPECT_EQ(assignmentFor(1).value("step_id", ""), "second");
}

// A report whose fields have the wrong types is a 422 naming them, and kilnd goes on. Before the
// report decoder (orchestrator/runs/report.h), an "exit_code" string threw nlohmann's type_error
// on the gateway's report thread, outside every request's catch: an agent token could stop kilnd.
TEST_F(AgentWorkTest, AReportOfTheWrongShapeIsRefusedAndKilndGoesOn) {
  Reply started = call(*admin_, "POST", "/api/v1/workflow-runs",
                       json{{"workflow", "two-steps"}, {"hosts", {hosts_[0]}}}.dump());
  ASSERT_EQ(started.status, 201) << started.body;
  json a = assignmentFor(0);
  const std::string path = "/api/v1/assignments/" + a["id"].get<std::string>() + "/result";
  for (const json& bad : {json{{"lease", a["lease"]}, {"exit_code", "0"}},
                          json{{"lease", a["lease"]}, {"duration_ms", json::array()}, {"signal", 1e300}},
                          json{{"lease", 1.5}}, json{{"lease", a["lease"]}, {"stdout_tail", json::object()}}}) {
    Reply r = call(*agents_[0], "POST", path, bad.dump());
    EXPECT_TRUE(isError(r, 422, "invalid_content")) << bad.dump() << " -> " << r.status << " " << r.body;
  }
  Reply health = call(*admin_, "GET", "/healthz");
  ASSERT_EQ(health.status, 200) << health.body;
  // The step was not settled by the refused reports: the good one is accepted.
  Reply good = report(0, a);
  ASSERT_EQ(good.status, 200) << good.body;
  EXPECT_EQ(good.doc()["outcome"], "accepted");
}

// The run keeps only delta baselines in its state; the run view still shows every step's
// parsed output, newest per step, read from the steps' results.
TEST_F(AgentWorkTest, TheRunViewShowsEveryParsedOutputAlsoThoseTheRunStateDoesNotKeep) {
  constexpr const char* kParsed = R"(name: parsed-steps
version: "1"
scope: host
steps:
  - id: before
    run: [dcgmi, nvlink, -e, -j]
    timeout: 10m
    parse: json
  - id: count
    run: [nvidia-smi, -q, -x]
    timeout: 10m
    parse: json
    checks:
      - {name: GPU count, path: gpu_count, eq: 4}
  - id: after
    run: [dcgmi, nvlink, -e, -j]
    timeout: 10m
    parse: json
    checks:
      - {name: CRC did not grow, delta_from: before, path: "links[*]", fields: [crc], max_increase: 0}
)";
  Reply put = call(*admin_, "PUT", "/api/v1/workflows/parsed-steps", kParsed, "application/yaml");
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
  Reply started = call(*admin_, "POST", "/api/v1/workflow-runs",
                       json{{"workflow", "parsed-steps"}, {"hosts", {hosts_[0]}}}.dump());
  ASSERT_EQ(started.status, 201) << started.body;
  const json links = {{"links", {{{"link", 0}, {"crc", 3}}}}};
  json a = assignmentFor(0);
  for (const json& parsed : {links, json{{"gpu_count", 4}}, links}) {
    Reply ack = report(0, a, true, parsed);
    ASSERT_EQ(ack.status, 200) << ack.body;
    if (ack.doc().contains("assignment")) a = ack.doc()["assignment"];
  }
  Reply run = call(*admin_, "GET", "/api/v1/workflow-runs/" + started.doc()["id"].get<std::string>());
  ASSERT_EQ(run.status, 200) << run.body;
  const json host = run.doc()["hosts"][0];
  EXPECT_EQ(host["status"], "passed") << host.dump();
  EXPECT_EQ(host["parsed"], (json{{"before", links}, {"count", {{"gpu_count", 4}}}, {"after", links}})) << host.dump();
  // Every report went through a transaction: /metrics says how long each waited and took.
  const std::string metrics = call(*admin_, "GET", "/metrics").body;
  for (const char* name : {"kiln_agent_report_queue_seconds_count ", "kiln_agent_report_apply_seconds_count "}) {
    const auto at = metrics.find(name);
    ASSERT_NE(at, std::string::npos) << name;
    EXPECT_EQ(std::stol(metrics.substr(at + std::string(name).size())), 3) << name;
  }
}

class AgentLivenessTest : public AgentWorkTest {
 protected:
  // Longer than the heartbeat flush (5 s) plus the test's poll gaps (about 1 s) with room for a
  // loaded machine, as production's must be longer than the agents' long-poll wait plus that flush.
  std::vector<std::string> extraKilndArgs() const override { return {"--unreachable-after", "10"}; }
  // The actions of the host's events, oldest first.
  std::vector<std::string> eventActions(const std::string& host) {
    const json doc = call(*admin_, "GET", "/api/v1/hosts/" + host + "/events?limit=100").doc();
    std::vector<std::string> out;
    for (const auto& e : doc["items"]) out.insert(out.begin(), e["action"].get<std::string>());
    return out;
  }
  bool waitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return true;
  }
};

TEST_F(AgentLivenessTest, AnAgentThatStopsPollingMakesItsHostUnreachableOnceAndReachableWhenItPollsAgain) {
  ASSERT_EQ(poll(0).status, 204);
  auto count = [&](const std::string& action) {
    auto a = eventActions(hosts_[0]);
    return std::count(a.begin(), a.end(), action);
  };
  // Silent for more than --unreachable-after (checked about every 10 s): one event, not one
  // per check. The other host never polled: it has no agent to miss.
  ASSERT_TRUE(waitFor([&] { return count("unreachable") == 1; }, std::chrono::seconds(40)));
  std::this_thread::sleep_for(std::chrono::seconds(11));
  EXPECT_EQ(count("unreachable"), 1);
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/hosts/" + hosts_[0]).doc().value("state", ""), "available")
      << "unreachable is an event, not a lifecycle state";
  // It polls again: the batched heartbeat write (every 5 s) records it back, once. It goes on
  // polling about every second meanwhile, as a live agent does: a poll, then 5 s of silence
  // while the test waits, then a flush 5 s later would leave the database's last poll 10 s old,
  // which is unreachable by the rules this test sets.
  ASSERT_EQ(poll(0).status, 204);
  ASSERT_TRUE(waitFor(
      [&] {
        if (count("reachable") == 1) return true;
        EXPECT_EQ(poll(0).status, 204);
        std::this_thread::sleep_for(std::chrono::milliseconds(750));
        return false;
      },
      std::chrono::seconds(15)));
  // Polling on, through a few flushes and checks: nothing more is recorded.
  for (int i = 0; i < 12; ++i) {
    ASSERT_EQ(poll(0).status, 204);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(count("reachable"), 1);
  EXPECT_EQ(count("unreachable"), 1);
}

TEST_F(AgentWorkTest, AnEnrolmentsInventoryRecordsTheHostsVersionsAndItsPodsSwitchTrays) {
  const std::string host = hosts_.at(2);
  const std::string pod = "t01-b01-p0001";
  // Each enrolment after the first replaces the host's agent: an operator's re-enrolment token
  // each time (a fleet-wide enrolment token does not take over an enrolled host: issue 31).
  auto enrol = [&](const json& inventory) {
    Reply t = call(*admin_, "POST", "/api/v1/hosts/" + host + "/enrolment-tokens", json{{"reenroll", true}}.dump());
    EXPECT_EQ(t.status, 201) << t.body;
    return call(*client(t.doc().value("token", "")), "POST", "/api/v1/agents/register",
                json{{"host", host}, {"boot_id", "boot-1"}, {"agent_version", "test"}, {"inventory", inventory}}.dump());
  };
  const std::string vbios_before =
      db_->query("SELECT version FROM components WHERE target_id = '" + host + "' AND kind = 'gpu_vbios'");
  const json inventory = {{"driver", "999.1"}, {"nvswitch", "9.9"}, {"gpu_vbios", ""}, {"no_such_kind", "1"},
                          {"nic", 7}};
  ASSERT_EQ(enrol(inventory).status, 200);
  EXPECT_EQ(db_->query("SELECT version FROM components WHERE target_id = '" + host + "' AND kind = 'driver'"),
            "999.1");
  // An empty version, an unknown kind and a version that is not a string change nothing.
  EXPECT_EQ(db_->query("SELECT version FROM components WHERE target_id = '" + host + "' AND kind = 'gpu_vbios'"),
            vbios_before);
  EXPECT_EQ(db_->query("SELECT count(*) FROM components WHERE target_id = '" + host + "' AND kind = 'no_such_kind'"),
            "0");
  EXPECT_NE(db_->query("SELECT version FROM components WHERE target_id = '" + host + "' AND kind = 'nic'"), "7");
  // The switch version goes to every switch tray of the host's pod, and to no other host.
  const std::string trays = db_->query("SELECT count(*) FROM switch_trays WHERE pod_id = '" + pod + "'");
  ASSERT_NE(trays, "0");
  EXPECT_EQ(db_->query("SELECT count(*) FROM components c JOIN switch_trays s ON s.id = c.target_id"
                       " WHERE s.pod_id = '" + pod + "' AND c.kind = 'nvswitch' AND c.version = '9.9'"),
            trays);
  EXPECT_EQ(db_->query("SELECT count(*) FROM components WHERE version = '999.1'"), "1");
  Reply view = call(*admin_, "GET", "/api/v1/pods/" + pod);
  EXPECT_EQ(view.doc()["component_versions"]["driver"]["999.1"], 1) << view.body;
  // The same inventory again rewrites no row; a new version does.
  const std::string stamps = "SELECT string_agg(updated_at::text, ',' ORDER BY target_id, kind) FROM components"
                             " WHERE pod_id = '" + pod + "' AND kind IN ('driver', 'nvswitch')";
  const std::string before = db_->query(stamps);
  ASSERT_EQ(enrol(inventory).status, 200);
  EXPECT_EQ(db_->query(stamps), before);
  ASSERT_EQ(enrol({{"driver", "999.2"}, {"nvswitch", "9.9"}}).status, 200);
  EXPECT_EQ(db_->query("SELECT version FROM components WHERE target_id = '" + host + "' AND kind = 'driver'"),
            "999.2");
  EXPECT_NE(db_->query(stamps), before);
}

// Issue 33 (agent version skew): kilnd says which agent versions it registers, and every agent's
// version is in the host's view and in /metrics.
class AgentVersionTest : public AgentWorkTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override {
    return {"--workflows-dir", KILN_WORKFLOWS_DIR, "--min-agent-version", "0.2.0"};
  }
  std::string agentVersion() const override { return "0.3.0"; }
};

TEST_F(AgentVersionTest, AnOlderAgentIsRefusedNamingBothVersionsAndEveryAgentsVersionIsShown) {
  const std::string host = hosts_[0];
  Reply h = call(*admin_, "GET", "/api/v1/hosts/" + host);
  ASSERT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.doc()["agent_version"], "0.3.0");

  auto enrol = [&](const std::string& version) {
    Reply t = call(*admin_, "POST", "/api/v1/hosts/" + host + "/enrolment-tokens", json{{"reenroll", true}}.dump());
    EXPECT_EQ(t.status, 201) << t.body;
    return call(*client(t.doc().value("token", "")), "POST", "/api/v1/agents/register",
                json{{"host", host}, {"boot_id", "boot-2"}, {"agent_version", version}}.dump());
  };
  Reply old = enrol("0.1.0");
  EXPECT_EQ(old.status, 409) << old.body;
  EXPECT_NE(old.doc()["error"]["message"].get<std::string>().find("kilnd accepts kiln-agent 0.2.0 or newer"),
            std::string::npos)
      << old.body;
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/hosts/" + host).doc()["agent_version"], "0.3.0") << "nothing written";

  ASSERT_EQ(enrol("0.2.1").status, 200);
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/hosts/" + host).doc()["agent_version"], "0.2.1");
  const std::string metrics = call(*admin_, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("kiln_agent_versions{version=\"0.2.1\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kiln_agent_versions{version=\"0.3.0\"} 1\n"), std::string::npos) << "the other agent";
  EXPECT_NE(metrics.find("kiln_agent_min_version_info{version=\"0.2.0\"} 1\n"), std::string::npos);
}

TEST_F(AgentWorkTest, AbortingARolloutWhoseAgentsAreGoneEndsInsteadOfWaitingForever) {
  // No agent polls: the pod's upgrade run is started and every step waits, never handed out.
  const std::string sha(64, 'a');
  json bundle = {{"name", "api-fw"},
                 {"version", "1.0"},
                 {"platforms", {"catalina"}},
                 {"components",
                  {{{"kind", "driver"}, {"version", "580.65.06"},
                    {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-580.65.06.run"}, {"sha256", sha}}}}};
  Reply b = call(*admin_, "POST", "/api/v1/bundles", bundle.dump());
  ASSERT_EQ(b.status, 201) << b.body;
  json policy = {{"canary_pods", 1}, {"waves", {"100%"}}, {"soak", "0s"}, {"max_concurrent_pods", 1},
                 {"capacity_floor", {{"max_percent_down", 100}}}, {"failure_budget", {{"pods", 1}}}};
  Reply r = call(*admin_, "POST", "/api/v1/rollouts",
                 json{{"bundle", b.doc()["id"]}, {"selector", {{"pods", {"t01-b01-p0001"}}}}, {"policy", policy},
                      {"start", true}}
                     .dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.doc()["id"].get<std::string>();
  auto podPhase = [&] {
    const json items = call(*admin_, "GET", "/api/v1/rollouts/" + id + "/pods").doc()["items"];
    return items.empty() ? std::string("?") : items[0].value("phase", "?");
  };
  auto waitFor = [&](const std::function<bool()>& done) {
    for (int i = 0; i < 150 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return done();
  };
  ASSERT_TRUE(waitFor([&] { return podPhase() == "upgrading"; })) << podPhase();
  Reply abort = call(*admin_, "POST", "/api/v1/rollouts/" + id + "/abort", json{{"reason", "agents gone"}}.dump());
  ASSERT_EQ(abort.status, 200) << abort.body;
  // Steps no agent took are withdrawn: the abort does not wait for agents that never come.
  EXPECT_TRUE(waitFor([&] { return call(*admin_, "GET", "/api/v1/rollouts/" + id).doc()["state"] == "aborted"; }))
      << call(*admin_, "GET", "/api/v1/rollouts/" + id).body;
  EXPECT_EQ(podPhase(), "aborted");
  // Nothing is left for an agent that comes back late.
  EXPECT_EQ(poll(0).status, 204);
}

}  // namespace
}  // namespace kiln::apitest
