// Issue 3 end to end: one NVL72 pod (18 hosts), one real kiln-agent per host on kiln-hwsim,
// a real kilnd on a fresh database. L11 burn-in, weak NVLink links, repair -> quarantine ->
// validation, and an agent or kilnd killed in the middle of a run.

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/e2e/e2e_support.h"

namespace kiln::e2e {
namespace {

constexpr const char* kPod = "e2e-b01-p01";

std::string joined(const json& list) {
  std::string out;
  if (!list.is_array()) return out;
  for (const auto& s : list) out += (out.empty() ? "" : " | ") + (s.is_string() ? s.get<std::string>() : s.dump());
  return out;
}

class PodTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(fleetYaml(1, "incoming"));
    hosts_ = podHosts(kPod);
    ASSERT_EQ(hosts_.size(), 18u);
    agents_ = makeAgents(0.001);
  }

  // A fault on one host's simulator: `kiln-hwsim fault set ARGS...`.
  void fault(const std::string& host, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"fault", "set"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = agents_->hwsim(host, argv);
    ASSERT_EQ(r.status, 0) << r.output;
    watchAgent(host);
  }

  json burnIn(const json& params = json::object()) {
    json run = startRun({{"workflow", "l11-burn-in"}, {"pods", {kPod}}, {"params", params}});
    EXPECT_EQ(run.value("purpose", ""), "burn_in");
    return waitRun(run.value("id", ""), 120s);
  }

  std::string hostState(const std::string& id) { return host(id).value("state", "?"); }

  void expectAvailableExcept(const std::set<std::string>& except) {
    for (const auto& h : hosts_)
      if (!except.count(h)) {
        EXPECT_EQ(hostState(h), "available") << h;
      }
  }

  std::vector<std::string> hosts_;
};

TEST_F(PodTest, L11BurnInPassesAndEveryHostBecomesAvailable) {
  agents_->startAll(hosts_);
  json run = burnIn();
  EXPECT_EQ(run["state"], "passed");
  // Each agent long-polls for 25 s: a step handed out only when a poll ran out would make the
  // 13 steps take minutes. kilnd gives the next step to the poll the report woke.
  const auto took_s = (run["finished_at_ms"].get<std::int64_t>() - run["created_at_ms"].get<std::int64_t>()) / 1000;
  EXPECT_LT(took_s, 90) << "steps waited for the agents' long polls to run out";
  EXPECT_EQ(run["summary"]["healthy"], 18);
  EXPECT_EQ(run["progress"]["passed"], 18);
  ASSERT_EQ(run["summary"]["pods"].size(), 1u);
  EXPECT_EQ(run["summary"]["pods"][0]["healthy_gpus"], 72);
  // The pod-wide stress ran once, on the leader; the other hosts share its result.
  int stress_runs = 0, shared = 0;
  for (const auto& h : hosts_)
    for (const auto& r : stepRecords(run, h, "pod-stress")) (r["outcome"] == "shared" ? shared : stress_runs) += 1;
  EXPECT_EQ(stress_runs, 1);
  EXPECT_EQ(shared, 17);
  expectAvailableExcept({});
}

TEST_F(PodTest, PersistentWeakLinkFailsOnlyItsHostAndNamesTheLinkTransientOneIsAWarning) {
  const std::string weak = hosts_[5], flaky = hosts_[9];
  fault(weak, {"--kind", "weak_link_persistent", "--gpu", "2", "--link", "7"});
  // The link grows at the next two NVLink checks: the baseline and the first counter check.
  // The retests see no growth: transient.
  fault(flaky, {"--kind", "weak_link_transient", "--gpu", "1", "--link", "3", "--count", "2"});
  agents_->startAll(hosts_);
  // Diagnostic level 1: levels 2+ exercise NVLink too (a weak link fails nvbandwidth there),
  // which would both use up the transient fault and fail the host before the link checks.
  json run = burnIn({{"diag_level", 1}});
  EXPECT_EQ(run["state"], "failed");
  EXPECT_EQ(run["summary"]["healthy"], 17);
  ASSERT_EQ(run["summary"]["unhealthy"].size(), 1u) << run["summary"].dump();
  EXPECT_EQ(run["summary"]["unhealthy"][0]["host"], weak);

  const json* w = hostRow(run, weak);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ((*w)["status"], "failed");
  EXPECT_NE(joined((*w)["failures"]).find("gpu 2 link 7"), std::string::npos) << (*w)["failures"].dump();
  EXPECT_EQ(hostState(weak), "failed");

  const json* f = hostRow(run, flaky);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["status"], "passed") << (*f)["failures"].dump();
  EXPECT_NE(joined((*f)["warnings"]).find("gpu 1 link 3"), std::string::npos) << (*f)["warnings"].dump();
  EXPECT_TRUE((*f)["failures"].empty()) << (*f)["failures"].dump();
  // The flaky host's link was retested: the counter step ran more than once.
  EXPECT_GT(stepRecords(run, flaky, "nvlink-after-g1").size(), 1u);
  expectAvailableExcept({weak});
}

TEST_F(PodTest, RepairedHostGoesThroughQuarantineValidationBackToAvailable) {
  agents_->startAll(hosts_);
  ASSERT_EQ(burnIn()["state"], "passed");
  const std::string h = hosts_[3];
  watchAgent(h);

  // A short soak for the test: a new version of the workflow, as an operator would store it.
  json wf = call("GET", "/api/v1/workflows/quarantine-validation");
  std::string yaml = wf.value("yaml", "");
  const std::string soak = "    default: 30m";
  ASSERT_NE(yaml.find(soak), std::string::npos) << yaml;
  yaml.replace(yaml.find(soak), soak.size(), "    default: 2s");
  auto put = api_->request("PUT", "/api/v1/workflows/quarantine-validation", yaml, "application/yaml");
  ASSERT_TRUE(put.ok());
  ASSERT_EQ(put->status, 200) << put->body;
  EXPECT_EQ(json::parse(put->body)["changed"], true);

  call("POST", "/api/v1/hosts/" + h + "/actions", {{"action", "fail"}, {"reason", "e2e: Xid 79 fell off the bus"}});
  EXPECT_EQ(hostState(h), "failed");
  call("POST", "/api/v1/hosts/" + h + "/actions", {{"action", "repair"}, {"reason", "e2e: tray swapped"}});
  EXPECT_EQ(hostState(h), "repair");
  json done = call("POST", "/api/v1/hosts/" + h + "/actions", {{"action", "repair_complete"}, {"reason", "e2e: fixed"}});
  EXPECT_EQ(done.value("state", ""), "quarantine") << done.dump();
  ASSERT_TRUE(done.contains("quarantine_run")) << "repair_complete did not start quarantine-validation: " << done.dump();
  const std::string run_id = done["quarantine_run"];
  watchRun(run_id);

  json q = call("GET", "/api/v1/quarantine");
  const json* row = nullptr;
  for (const auto& item : q["items"])
    if (item.value("host", "") == h) row = &item;
  ASSERT_NE(row, nullptr) << q.dump();
  EXPECT_EQ((*row)["validation_run"], run_id);
  EXPECT_EQ((*row)["validation_state"], "running");
  EXPECT_GE((*row)["repairs"].get<int>(), 1);

  json run = waitRun(run_id, 90s);
  EXPECT_EQ(run["state"], "passed");
  EXPECT_EQ(run["params"]["soak"], "2s");
  EXPECT_EQ(run["params"]["passes"], "2");
  // Two passes of the step list, a soak apart.
  auto first = stepRecords(run, h, "gpu-state");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0]["pass"], 1);
  EXPECT_EQ(first[1]["pass"], 2);
  auto last_of_pass1 = stepRecords(run, h, "gpu-state-after");
  ASSERT_EQ(last_of_pass1.size(), 2u);
  EXPECT_GE(first[1]["finished_at_ms"].get<std::int64_t>() - last_of_pass1[0]["finished_at_ms"].get<std::int64_t>(), 2000);
  EXPECT_EQ(hostState(h), "available");
  q = call("GET", "/api/v1/quarantine");
  for (const auto& item : q["items"]) EXPECT_NE(item.value("host", ""), h);
}

TEST_F(PodTest, AgentKilledMidStepIsRestartedAndTheStepIsNotRunTwice) {
  const std::string victim = hosts_[4];
  // dcgmi diag -r 3 takes 900 s x 0.001 x 5 = 4.5 s on the victim.
  fault(victim, {"--kind", "slow", "--tool", "dcgmi", "--factor", "5"});
  agents_->startAll(hosts_);
  json started = startRun({{"workflow", "l11-burn-in"}, {"pods", {kPod}}});
  const std::string run_id = started.value("id", "");

  const std::string journal = dir_ + "/agents/" + victim + "/agent/journal.jsonl";
  auto diagStarted = [&] {
    std::istringstream lines(readFile(journal));
    for (std::string line; std::getline(lines, line);)
      if (line.find("\"started\"") != std::string::npos && line.find("\"dcgm-diag\"") != std::string::npos) return true;
    return false;
  };
  ASSERT_TRUE(waitUntil(diagStarted, 60s, 20ms)) << "the victim never started dcgm-diag";
  std::this_thread::sleep_for(1s);  // well inside the 4.5 s step
  EXPECT_EQ(agents_->stop(victim, SIGKILL), 128 + SIGKILL);
  std::this_thread::sleep_for(500ms);
  agents_->start(victim);

  json run = waitRun(run_id, 120s);
  auto diag = stepRecords(run, victim, "dcgm-diag");
  ASSERT_EQ(diag.size(), 1u) << "dcgm-diag ran more than once on " << victim;
  EXPECT_NE(diag[0].dump().find("agent restarted"), std::string::npos) << diag[0].dump();
  for (const auto& h : hosts_) {
    if (h == victim) continue;
    const json* row = hostRow(run, h);
    ASSERT_NE(row, nullptr);
    EXPECT_EQ((*row)["status"], "passed") << h;
  }
  // The rest of the victim's steps ran after the restart.
  EXPECT_EQ(stepRecords(run, victim, "gpu-state-after").size(), 1u);
  // The journal (compacted at the restart, so a record may appear twice) started one dcgm-diag.
  std::set<std::string> diag_assignments;
  std::istringstream lines(readFile(journal));
  for (std::string line; std::getline(lines, line);) {
    auto rec = json::parse(line, nullptr, false);
    if (rec.is_object() && rec.value("event", "") == "started" && rec.contains("assignment") &&
        rec["assignment"].value("step_id", "") == "dcgm-diag")
      diag_assignments.insert(rec["assignment"].value("id", ""));
  }
  EXPECT_EQ(diag_assignments.size(), 1u) << "the restarted agent started dcgm-diag again";
}

TEST_F(PodTest, KilndKilledMidRunAndRestartedFinishesTheRun) {
  agents_->startAll(hosts_);
  json started = startRun({{"workflow", "l11-burn-in"}, {"pods", {kPod}}});
  const std::string run_id = started.value("id", "");
  // Kill it once some hosts are past their first steps.
  ASSERT_TRUE(waitUntil(
      [&] {
        auto r = tryGet("/api/v1/workflow-runs/" + run_id);
        if (!r) return false;
        int records = 0;
        for (const auto& h : (*r)["hosts"]) records += static_cast<int>(h["steps"].size());
        return records >= 20;
      },
      60s, 50ms));
  EXPECT_EQ(kilnd_->kill(), 128 + SIGKILL);
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(kilnd_->start().ok()) << kilnd_->logTail();

  json run = waitRun(run_id, 120s);
  EXPECT_EQ(run["state"], "passed");
  // Nothing ran twice: one record per step and host (no faults, so no retries or retests).
  for (const auto& h : hosts_) {
    const json* row = hostRow(run, h);
    ASSERT_NE(row, nullptr);
    std::map<std::string, int> count;
    for (const auto& s : (*row)["steps"]) ++count[s.value("step", "")];
    for (const auto& [step, n] : count) EXPECT_EQ(n, 1) << h << " ran " << step << " " << n << " times";
  }
  expectAvailableExcept({});
}

}  // namespace
}  // namespace kiln::e2e
